/** Pure parts of the MCP seam: names (MC-2), schema normalisation, config shapes, env scrubbing (MC-9). */
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { McpConfigError, parseServerConfig, parseServerMap, parseSessionServers, toolAllowed } from './config.js'
import { isCredentialName, scrubbedEnvironment } from './env.js'
import { publicToolName } from './names.js'
import { normaliseSchema } from './schema.js'
import { mapCallResult } from './results.js'

describe('MC-2 names', () => {
  it('keeps valid names as mcp__<server>__<tool>', () => {
    expect(publicToolName('github', 'create_issue')).toBe('mcp__github__create_issue')
  })

  it('hashes names that are too long or carry other characters, deterministically and within 64', () => {
    const name = publicToolName('my.server', 'tool name')
    expect(name).toMatch(/^mcp__my_server__tool_name_[0-9a-f]{12}$/)
    expect(publicToolName('my.server', 'tool name')).toBe(name)
    expect(publicToolName('s', 'x'.repeat(100))).toHaveLength(64)
  })

  it('is collision-free for distinct (server, tool) pairs and always a valid function name (property)', () => {
    fc.assert(fc.property(fc.string({ minLength: 1, maxLength: 40 }), fc.string({ minLength: 1, maxLength: 120 }), fc.string({ minLength: 1, maxLength: 120 }), (server, a, b) => {
      const first = publicToolName(server, a)
      expect(first).toMatch(/^[A-Za-z0-9_-]{1,64}$/)
      if (a !== b) expect(publicToolName(server, b)).not.toBe(first)
    }))
    // Sanitising alone would merge these; the hash keeps them apart.
    expect(publicToolName('s', 'a.b')).not.toBe(publicToolName('s', 'a_b'))
  })
})

describe('schema normalisation', () => {
  it('inlines local $refs, keeps recursion finite and never loses the tool', () => {
    const tree = normaliseSchema({
      type: 'object',
      properties: { root: { $ref: '#/definitions/node' } },
      definitions: { node: { type: 'object', properties: { children: { type: 'array', items: { $ref: '#/definitions/node' } } } } },
    })
    expect(JSON.stringify(tree.schema)).not.toContain('$ref')
    expect(tree.schema).toMatchObject({ type: 'object', properties: { root: { type: 'object', properties: { children: { type: 'array', items: {} } } } } })
    expect(tree.notes.some(note => note.includes('recursive'))).toBe(true)
  })

  it('turns a missing or non-object root into an open object and says so', () => {
    expect(normaliseSchema(undefined).schema).toEqual({ type: 'object', properties: {} })
    const scalar = normaliseSchema({ type: 'string' })
    expect(scalar.schema).toMatchObject({ type: 'object', additionalProperties: true })
    expect(scalar.notes).toHaveLength(1)
    expect(normaliseSchema({ oneOf: [{ type: 'string' }, { type: 'object' }] }).schema).toMatchObject({ type: 'object', additionalProperties: true })
  })

  it('merges a root allOf of objects with the union of required names', () => {
    const merged = normaliseSchema({ allOf: [{ type: 'object', properties: { a: { type: 'string' } }, required: ['a'] }, { type: 'object', properties: { b: {} }, required: ['b'] }] })
    expect(merged.schema).toEqual({ type: 'object', properties: { a: { type: 'string' }, b: {} }, required: ['a', 'b'] })
  })

  it('leaves a plain object schema as it is', () => {
    const plain = { type: 'object', properties: { q: { type: 'string', description: 'query' } }, required: ['q'], additionalProperties: false }
    expect(normaliseSchema(plain)).toEqual({ schema: plain, notes: [] })
  })
})

describe('server config', () => {
  it('accepts the Claude Code shapes and the plugin-row shape', () => {
    expect(parseServerConfig('gh', { command: 'npx', args: ['-y', 'x'], env: { A: '1' } }, { source: 't' })).toMatchObject({ name: 'gh', transport: 'stdio', command: 'npx', args: ['-y', 'x'], env: { A: '1' }, enabled: true, toolCallTimeoutMs: 60000 })
    expect(parseServerConfig('web', { type: 'http', url: 'https://x.test/mcp', headers: { A: 'b' } }, { source: 't' })).toMatchObject({ transport: 'streamable-http', url: 'https://x.test/mcp' })
    expect(parseServerConfig('old', { type: 'sse', url: 'http://127.0.0.1:1/sse' }, { source: 't' }).transport).toBe('sse')
    expect(parseServerConfig(undefined, { serverName: 'row', transport: 'streamable-http', url: 'http://h/mcp', reconnect: { maxAttempts: 3 } }, { source: 't' }))
      .toMatchObject({ name: 'row', reconnect: { enabled: true, initialDelayMs: 500, maxDelayMs: 30000, maxAttempts: 3 } })
  })

  it('expands ${VAR} and ${VAR:-default}; an unset variable is an error naming it', () => {
    const lookup = (name: string) => (name === 'TOKEN' ? 's3cret' : undefined)
    expect(parseServerConfig('a', { type: 'http', url: 'http://${HOST:-localhost}/mcp', headers: { Authorization: 'Bearer ${TOKEN}' } }, { source: 't', lookup }))
      .toMatchObject({ url: 'http://localhost/mcp', headers: { Authorization: 'Bearer s3cret' } })
    expect(() => parseServerConfig('a', { command: 'x', env: { K: '${MISSING}' } }, { source: 't', lookup })).toThrow(/MISSING is not set/)
  })

  it('names the file, server and key of a bad entry, and keeps the other entries', () => {
    const { servers, errors } = parseServerMap({ good: { command: 'x' }, bad: { command: 'x', url: 'http://h' }, typo: { comand: 'x' } }, { source: '.mcp.json' })
    expect(servers.map(server => server.name)).toEqual(['good'])
    expect(errors.map(error => error.message)).toEqual([
      '.mcp.json, server "bad", key "url": a server takes either command (stdio) or url (http), not both',
      expect.stringMatching(/^\.mcp\.json, server "typo", key "comand": unknown key/),
    ])
    expect(errors[0]).toBeInstanceOf(McpConfigError)
  })

  it('MC-10: ACP session servers with {name, value} pairs', () => {
    const [stdio, http] = parseSessionServers([
      { name: 'a', command: 'x', args: [], env: [{ name: 'K', value: 'v' }] },
      { type: 'http', name: 'b', url: 'http://h/mcp', headers: [{ name: 'H', value: '1' }] },
    ])
    expect(stdio).toMatchObject({ name: 'a', env: { K: 'v' } })
    expect(http).toMatchObject({ name: 'b', headers: { H: '1' } })
    expect(() => parseSessionServers([{ name: 'a', command: 'x' }, { name: 'a', command: 'y' }])).toThrow(/share this name/)
  })

  it('enabledTools / disabledTools', () => {
    expect(toolAllowed({ enabledTools: ['a'] }, 'b')).toBe(false)
    expect(toolAllowed({ disabledTools: ['a'] }, 'a')).toBe(false)
    expect(toolAllowed({}, 'a')).toBe(true)
  })
})

describe('MC-9 environment', () => {
  it('drops DEEPSEEK_API_KEY, every known provider key and secret-looking names; adds the server env', () => {
    const env = scrubbedEnvironment({ PATH: '/bin', DEEPSEEK_API_KEY: 'k', ANTHROPIC_AUTH_TOKEN: 't', MY_SERVICE_API_KEY: 'x', DB_PASSWORD: 'p', HOME: '/h' }, { GITHUB_TOKEN: 'given' })
    expect(env).toEqual({ PATH: '/bin', HOME: '/h', GITHUB_TOKEN: 'given' })
    expect(isCredentialName('OPENAI_API_KEY')).toBe(true)
    expect(isCredentialName('TOKENIZERS_PARALLELISM')).toBe(false)
  })
})

describe('MC-4 result mapping', () => {
  it('keeps structuredContent out unless it is all there is', () => {
    expect(mapCallResult({ content: [], structuredContent: { n: 1 } }, { server: 's', tool: 't' }).content).toEqual([{ type: 'text', text: '{"n":1}' }])
    const both = mapCallResult({ content: [{ type: 'text', text: 'one' }], structuredContent: { n: 1 } }, { server: 's', tool: 't' })
    expect(both.content).toEqual([{ type: 'text', text: 'one' }])
    expect(both.meta).toEqual({ mcp: { server: 's', tool: 't' } })
  })
})
