import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { isCredentialName, isSecretVariable, scrubbedEnvironment } from './credentials.js'

const PLANTED = ['PATH', 'BASH_ENV', 'ENV', 'NODE_OPTIONS', 'LD_PRELOAD', 'DEEPSEEK_BASE_URL', 'HOME', 'SHELL', 'DSH_WEB_TOKEN', 'DSH_HOME', 'DSH_API_KEY', 'PYTHONPATH']

describe('credentials (security)', () => {
  it('credentials are provider API keys only: no generated name outside <PROVIDER>_API_KEY is one, and no environment-changing name is', () => {
    for (const name of PLANTED) expect(isCredentialName(name), name).toBe(false)
    for (const name of ['DEEPSEEK_API_KEY', 'OPENAI_API_KEY', 'MY_PROXY_API_KEY']) expect(isCredentialName(name), name).toBe(true)
    fc.assert(fc.property(fc.string({ maxLength: 40 }), (name) => {
      if (isCredentialName(name)) {
        expect(name).toMatch(/^[A-Z][A-Z0-9_]*_API_KEY$/)
        expect(name.startsWith('DSH_')).toBe(false)
      }
    }), { numRuns: 2000 })
  })

  it('the child environment keeps ordinary variables and drops every key, token and password, however it is spelled', () => {
    const secretName = fc.tuple(
      fc.constantFrom('', 'MY_', 'DEEPSEEK_', 'GH_', 'aws_', 'X1_'),
      fc.constantFrom('API_KEY', 'APIKEY', 'TOKEN', 'SECRET', 'PASSWORD', 'ACCESS_KEY', 'PRIVATE_KEY', 'CREDENTIALS', 'api_key', 'Token'),
      fc.constantFrom('', '_ID', '_FILE', '_2'),
    ).map(([a, b, c]) => `${a}${b}${c}`)
    fc.assert(fc.property(fc.dictionary(secretName, fc.string()), fc.dictionary(fc.constantFrom('PATH', 'HOME', 'LANG', 'TERM', 'USER', 'EDITOR'), fc.string()), (secrets, plain) => {
      const env = { ...plain, ...secrets }
      const child = scrubbedEnvironment(env)
      for (const name of Object.keys(secrets)) expect(child, name).not.toHaveProperty(name)
      expect(child).toEqual(plain)
    }), { numRuns: 500 })
    expect(isSecretVariable('DSH_WEB_TOKEN')).toBe(true)
    expect(isSecretVariable('TOKENIZER_PATH')).toBe(false)
  })
})
