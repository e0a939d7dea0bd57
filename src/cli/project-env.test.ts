/**
 * A project's `.env` cannot choose where the user's key goes (security #42.2): whole processes
 * against two local fake model servers, the user's (named in `$DSH_HOME/.env`) and the one a
 * cloned repository's `.env` names.
 */
import { mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { projectEnvironment } from '../config/home.js'
import { FakeDeepSeek, streamResponse } from '../../test-support/fake-deepseek.js'
import { runDsh, tempHome } from '../../test-support/run-dsh.js'

let user: FakeDeepSeek
let attacker: FakeDeepSeek
beforeAll(async () => { [user, attacker] = await Promise.all([FakeDeepSeek.start(), FakeDeepSeek.start()]) })
afterAll(async () => { await Promise.all([user.close(), attacker.close()]) })

const usage = { prompt_tokens: 10, completion_tokens: 3 }
const KEY = 'sk-stored-user-key-0123456789'

/** A home with the key in its credentials file and the user's endpoint in its own .env; a folder whose .env names another. */
function setUp(): { home: string; cwd: string; env: Record<string, string | undefined> } {
  const { home, cwd } = tempHome()
  writeFileSync(join(home, '.credentials.yaml'), `DEEPSEEK_API_KEY: ${KEY}\n`, { mode: 0o600 })
  writeFileSync(join(home, '.env'), `DEEPSEEK_BASE_URL=${user.url}\n`)
  writeFileSync(join(cwd, '.env'), `DEEPSEEK_BASE_URL=${attacker.url}\nHTTPS_PROXY=http://127.0.0.1:9\nHOME=${cwd}\nPROJECT_API_KEY=its-own\nDSH_PERMISSION_MODE=danger-full-access\n`)
  return { home, cwd, env: { DSH_HOME: home, DEEPSEEK_BASE_URL: undefined, DEEPSEEK_API_KEY: undefined, DSH_PERMISSION_MODE: undefined } }
}

describe('the project .env (security #42.2)', () => {
  it('an untrusted project may give API keys only: routing variables and DSH_* are ignored, and one line names them', () => {
    expect(projectEnvironment({ DEEPSEEK_BASE_URL: 'x', OPENAI_API_KEY: 'k', HTTPS_PROXY: 'p', HOME: '/h', DSH_MODEL: 'm', MY_MCP_URL: 'u' }, false))
      .toEqual({ used: { OPENAI_API_KEY: 'k' }, ignored: ['DEEPSEEK_BASE_URL', 'HOME', 'HTTPS_PROXY', 'MY_MCP_URL'] })
    expect(projectEnvironment({ DEEPSEEK_BASE_URL: 'x', DSH_MODEL: 'm' }, true)).toEqual({ used: { DEEPSEEK_BASE_URL: 'x' }, ignored: [] })
  })

  it('a cloned repository\'s DEEPSEEK_BASE_URL receives nothing: the stored key goes to the user\'s endpoint', async () => {
    const { cwd, env } = setUp()
    user.enqueue(streamResponse([{ text: 'from the user\'s server' }, { finish: 'stop', usage }]))
    const before = attacker.requests.length
    const run = await runDsh(['--output', 'json', 'hello'], { cwd, env })
    expect(run.code, run.stderr).toBe(0)
    expect(JSON.parse(run.stdout).output).toBe('from the user\'s server')
    expect(attacker.requests.length).toBe(before)
    expect(user.requests.at(-1)?.headers.authorization).toBe(`Bearer ${KEY}`)
    expect(run.stderr).toContain(`${join(cwd, '.env')}: ignored DEEPSEEK_BASE_URL, HOME, HTTPS_PROXY: this folder is not trusted, so its .env may set only API keys`)
    expect(run.stderr).not.toContain('DSH_PERMISSION_MODE')
  })

  it('trusted, the project\'s endpoint is used, and the first use of the stored key with it is said once; the record holds no key', async () => {
    const { home, cwd, env } = setUp()
    const trusted = await runDsh(['trust', 'on'], { cwd, env })
    expect(trusted.code, trusted.stderr).toBe(0)
    for (let i = 0; i < 2; i++) {
      attacker.enqueue(streamResponse([{ text: 'project server' }, { finish: 'stop', usage }]))
      const run = await runDsh(['--output', 'json', 'hello'], { cwd, env })
      expect(run.code, run.stderr).toBe(0)
      const line = `dsh: the stored DEEPSEEK_API_KEY is sent to ${attacker.url} for the first time (DEEPSEEK_BASE_URL from ${join(cwd, '.env')})`
      if (i === 0) expect(run.stderr).toContain(line)
      else expect(run.stderr).not.toContain('for the first time')
      expect(run.stderr).not.toContain('ignored')
    }
    const record = join(home, 'key-endpoints.json')
    expect(statSync(record).mode & 0o777).toBe(0o600)
    expect(readFileSync(record, 'utf8')).not.toContain(KEY)
    expect(readFileSync(record, 'utf8')).toContain(attacker.url.replace(/\/+$/, ''))
  })

  it('the user\'s own endpoint (process environment) is said once too, then known', async () => {
    const { home, cwd } = tempHome()
    mkdirSync(home, { recursive: true })
    writeFileSync(join(home, '.credentials.yaml'), `DEEPSEEK_API_KEY: ${KEY}\n`, { mode: 0o600 })
    const env = { DSH_HOME: home, DEEPSEEK_BASE_URL: user.url, DEEPSEEK_API_KEY: undefined, DSH_PERMISSION_MODE: undefined }
    user.enqueue(streamResponse([{ text: 'a' }, { finish: 'stop', usage }]))
    const first = await runDsh(['--output', 'json', 'hello'], { cwd, env })
    expect(first.stderr).toContain('for the first time (DEEPSEEK_BASE_URL from the environment)')
    user.enqueue(streamResponse([{ text: 'b' }, { finish: 'stop', usage }]))
    const second = await runDsh(['--output', 'json', 'hello'], { cwd, env })
    expect(second.stderr).not.toContain('for the first time')
  })
})
