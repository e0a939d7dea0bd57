/**
 * The workspace methods of the web API, called as the server dispatches them, with the scripted
 * model, JSONL persistence and (for providers) the fake model server over real HTTP:
 * `@` mention search and reading, content search, the trajectory, and OpenAI-compatible
 * providers, each with hostile input.
 */
import { execFileSync } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Context } from 'cordis'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { SettingsProvidersPlugin } from '../llm/openai/providers.js'
import { SCRIPTED_MODEL, SCRIPTED_PROVIDER, ScriptedModel, text, toolCalls } from '../../test-support/scripted-model.js'
import { FakeDeepSeek, errorResponse, streamResponse } from '../../test-support/fake-deepseek.js'
import { startWebApi, type WebApiHarness } from '../../test-support/web-api.js'
import { WebApiError } from './api.js'
import { MAX_MENTION_BYTES } from './files.js'
import { fuzzyScore } from '../host/workspace-files.js'

function hasGit(): boolean {
  try { execFileSync('git', ['--version'], { stdio: 'ignore' }); return true } catch { return false }
}

describe('web workspace methods', () => {
  let ctx: Context
  let model: ScriptedModel
  let home: string
  let work: string
  let outside: string
  let harness: WebApiHarness

  const call = async (method: string, params: Record<string, unknown> = {}) => {
    const handler = ctx.webApi.get(method)
    if (handler === undefined) throw new Error(`no method ${method}`)
    return await handler(params, { signal: new AbortController().signal }) as any
  }
  const refused = async (method: string, params: Record<string, unknown>) => {
    try {
      await call(method, params)
    } catch (error) {
      expect(error).toBeInstanceOf(WebApiError)
      return error as WebApiError
    }
    throw new Error(`${method} accepted ${JSON.stringify(params)}`)
  }

  beforeEach(async () => {
    home = mkdtempSync(join(tmpdir(), 'dsh-web-ws-home-'))
    work = mkdtempSync(join(tmpdir(), 'dsh-web-ws-work-'))
    outside = mkdtempSync(join(tmpdir(), 'dsh-web-ws-outside-'))
    harness = await startWebApi({ home, cwd: work, plugins: [ctx => ctx.plugin(SettingsProvidersPlugin, { credentials: (name: string) => process.env[name] })] })
    ;({ ctx, model } = harness)
  })

  afterEach(async () => {
    await harness.stop()
    for (const dir of [home, work, outside]) rmSync(dir, { recursive: true, force: true })
  })

  describe('@ mentions', () => {
    it('fuzzy-searches the workspace files, best match first', async () => {
      mkdirSync(join(work, 'src/web'), { recursive: true })
      for (const file of ['src/web/server.ts', 'src/web/methods.ts', 'README.md', 'src/session.ts']) writeFileSync(join(work, file), 'x')
      const result = await call('files.search', { query: 'srvr' })
      expect(result.files[0]).toBe('src/web/server.ts')
      expect((await call('files.search', { query: 'readme' })).files).toEqual(['README.md'])
      expect((await call('files.search', { query: 'zzz' })).files).toEqual([])
      expect(fuzzyScore('src/web/server.ts', 'server')! > fuzzyScore('lib/s/e/r/v/e/r.ts', 'server')!).toBe(true)
    })

    it.skipIf(!hasGit())('respects .gitignore in a git repository (git ls-files), and skips node_modules elsewhere', async () => {
      execFileSync('git', ['init', '-q'], { cwd: work })
      writeFileSync(join(work, '.gitignore'), 'secret-build/\n*.log\n')
      mkdirSync(join(work, 'secret-build'))
      writeFileSync(join(work, 'secret-build/out.js'), 'x')
      writeFileSync(join(work, 'debug.log'), 'x')
      writeFileSync(join(work, 'kept.js'), 'x')
      // The repository's config may not run a program when dsh lists its files.
      const marker = join(outside, 'fsmonitor-ran')
      writeFileSync(join(outside, 'monitor.sh'), `#!/bin/sh\ntouch ${marker}\n`, { mode: 0o755 })
      execFileSync('git', ['config', 'core.fsmonitor', join(outside, 'monitor.sh')], { cwd: work })
      const files = (await call('files.search', { query: '' , limit: 50 })).files
      expect(existsSync(marker)).toBe(false)
      expect(files).toContain('kept.js')
      expect(files).not.toContain('secret-build/out.js')
      expect(files).not.toContain('debug.log')
      const plain = mkdtempSync(join(tmpdir(), 'dsh-web-ws-plain-'))
      mkdirSync(join(plain, 'node_modules/pkg'), { recursive: true })
      writeFileSync(join(plain, 'node_modules/pkg/index.js'), 'x')
      writeFileSync(join(plain, 'app.js'), 'x')
      const session = await call('sessions.create', { cwd: plain })
      const listed = (await call('files.search', { id: session.id, query: 'js' })).files
      expect(listed).toEqual(['app.js'])
      rmSync(plain, { recursive: true, force: true })
    })

    it('refuses bad search parameters with 400', async () => {
      expect((await refused('files.search', { query: 'x'.repeat(201) })).status).toBe(400)
      expect((await refused('files.search', { query: 3 })).status).toBe(400)
      expect((await refused('files.search', { query: 'a', limit: -1 })).status).toBe(400)
      expect((await refused('files.search', { query: 'a', id: 'no-such-session' })).status).toBe(404)
    })

    it('sends each mentioned file as a reference block after the typed text; the model request carries the content', async () => {
      writeFileSync(join(work, 'notes.md'), 'the secret word is marmalade\n')
      const session = await call('sessions.create', {})
      model.push(text('ok'))
      await call('prompt', { id: session.id, text: 'what does @notes.md say?', mentions: ['notes.md'] })
      await ctx.agents.get(session.id)!.whenIdle()
      const sent = JSON.stringify(model.requests[0]!.messages.at(-1))
      expect(sent).toContain('what does @notes.md say?')
      expect(sent).toContain('<file path=\\"notes.md\\">\\nthe secret word is marmalade\\n</file>')
    })

    it('cuts a large file at a line end and marks it truncated; a binary file goes by name only', async () => {
      writeFileSync(join(work, 'big.txt'), 'line of text\n'.repeat(20_000))
      writeFileSync(join(work, 'blob.bin'), Buffer.from([0, 1, 2, 3, 0, 255]))
      const session = await call('sessions.create', {})
      model.push(text('ok'))
      await call('prompt', { id: session.id, text: 'look', mentions: ['big.txt', 'blob.bin'] })
      await ctx.agents.get(session.id)!.whenIdle()
      const blocks = (model.requests[0]!.messages.at(-1)!.content as { type: string; text: string }[])
      expect(blocks[1]!.text).toMatch(/^<file path="big.txt" truncated="true" bytes="260000">\n/)
      expect(Buffer.byteLength(blocks[1]!.text)).toBeLessThanOrEqual(MAX_MENTION_BYTES + 100)
      expect(blocks[1]!.text.endsWith('line of text\n</file>')).toBe(true)
      expect(blocks[2]!.text).toBe('<file path="blob.bin" binary="true" bytes="6"></file>')
    })

    it('refuses mentions outside the workspace (.., absolute, symlink out, NUL, folders, too many) and queues nothing', async () => {
      writeFileSync(join(outside, 'private.txt'), 'do not read')
      symlinkSync(join(outside, 'private.txt'), join(work, 'link.txt'))
      mkdirSync(join(work, 'folder'))
      const session = await call('sessions.create', {})
      for (const mention of ['../' + outside.split('/').at(-1) + '/private.txt', join(outside, 'private.txt'), 'link.txt', 'a\0b', 'folder', 'missing.txt', '']) {
        const error = await refused('prompt', { id: session.id, text: 'hi', mentions: [mention] })
        expect(error.status, mention).toBe(400)
        expect(error.code, mention).toBe('BAD_MENTION')
      }
      expect((await refused('prompt', { id: session.id, text: 'hi', mentions: 'notes.md' })).code).toBe('BAD_PARAMS')
      writeFileSync(join(work, 'a.txt'), 'a')
      expect((await refused('prompt', { id: session.id, text: 'hi', mentions: Array.from({ length: 11 }, (_, i) => `${'./'.repeat(i)}a.txt`) })).code).toBe('BAD_MENTION')
      expect(model.requests).toHaveLength(0)
      expect(ctx.agents.get(session.id)!.inbox.nextTurn).toHaveLength(0)
    })
  })

  describe('content search', () => {
    it('finds text in a tool result of another session, with the seq and a snippet', async () => {
      ctx.tools.register({ name: 'probe', description: 'p', parameters: { type: 'object', properties: {} }, execute: async () => ({ content: [{ type: 'text', text: 'header\nthe output says Xylophone-42 here\nfooter' }] }) } as any)
      const first = await call('sessions.create', {})
      model.push(toolCalls([{ id: 'c1', name: 'probe', arguments: '{}' }]), text('done'))
      await call('prompt', { id: first.id, text: 'run the probe' })
      await ctx.agents.get(first.id)!.whenIdle()
      await ctx.sessionPersistence.flushAll()
      const second = await call('sessions.create', {})
      model.push(text('nothing here'))
      await call('prompt', { id: second.id, text: 'hello' })
      await ctx.agents.get(second.id)!.whenIdle()

      const result = await call('sessions.search', { query: 'xylophone-42' })
      expect(result.hits).toHaveLength(1)
      const hit = result.hits[0]
      expect(hit).toMatchObject({ sessionId: first.id, kind: 'tool-result', toolName: 'probe', match: 'Xylophone-42' })
      expect(hit.before).toContain('the output says ')
      const event = ctx.sessions.get(first.id)!.events[hit.seq]!
      expect(event.type).toBe('tool/result')
    })

    it('treats the query as plain text and bounds it', async () => {
      const session = await call('sessions.create', {})
      model.push(text('a.*b is not a pattern'))
      await call('prompt', { id: session.id, text: 'say it' })
      await ctx.agents.get(session.id)!.whenIdle()
      expect((await call('sessions.search', { query: '.*' })).hits.map((hit: any) => hit.kind)).toEqual(['assistant'])
      expect((await call('sessions.search', { query: '(unclosed[' })).hits).toEqual([])
      for (const query of ['a', ' ', 'x'.repeat(201), 42, undefined]) expect((await refused('sessions.search', { query })).code).toBe('BAD_PARAMS')
      expect((await refused('sessions.search', { query: 'say', limit: 0 })).code).toBe('BAD_PARAMS')
      model.push(text('say again'))
      await call('prompt', { id: session.id, text: 'say more' })
      await ctx.agents.get(session.id)!.whenIdle()
      expect((await call('sessions.search', { query: 'say', limit: 1 })).hits).toHaveLength(1)
    })
  })

  describe('trajectory', () => {
    it('sums the tokens of every step and prices them from settings model.prices', async () => {
      writeFileSync(join(home, 'settings.yaml'), `model:\n  prices:\n    ${SCRIPTED_MODEL}: { input: 2, output: 10, cacheRead: 0.5 }\n`)
      const session = await call('sessions.create', {})
      model.push(text('one', { usage: { inputTokens: 1000, outputTokens: 200, cacheReadTokens: 4000 } }))
      await call('prompt', { id: session.id, text: 'go' })
      await ctx.agents.get(session.id)!.whenIdle()
      const trajectory = await call('sessions.trajectory', { id: session.id })
      expect(trajectory.turns).toHaveLength(1)
      expect(trajectory.turns[0].steps[0]).toMatchObject({ step: 1, model: SCRIPTED_MODEL, usage: { inputTokens: 1000, outputTokens: 200, cachedTokens: 4000 } })
      expect(trajectory.totals.cost).toBeCloseTo((1000 * 2 + 4000 * 0.5 + 200 * 10) / 1e6, 12)
      expect((await refused('sessions.trajectory', { id: 'nope' })).status).toBe(404)
      expect((await refused('sessions.trajectory', {})).status).toBe(400)
    })
  })

  describe('providers', () => {
    let fake: FakeDeepSeek
    beforeEach(async () => { fake = await FakeDeepSeek.start() })
    afterEach(async () => {
      await fake.close()
      delete process.env.LOCAL_VLLM_API_KEY
    })

    it('discovers models from /models with the key, adds the provider, and a prompt goes to it; the key never comes back', async () => {
      fake.models = { object: 'list', data: [{ id: 'qwen3-coder', max_model_len: 65536 }, { id: 'llama-4' }] }
      const discovered = await call('providers.discover', { baseUrl: `${fake.url}/v1`, key: 'sk-local-secret' })
      expect(discovered.models).toEqual([{ model: 'llama-4' }, { model: 'qwen3-coder', contextWindow: 65536 }])
      expect(fake.modelRequests[0]).toMatchObject({ path: '/v1/models' })
      expect(fake.modelRequests[0]!.headers.authorization).toBe('Bearer sk-local-secret')

      const added = await call('providers.add', { id: 'local-vllm', baseUrl: `${fake.url}/v1`, key: 'sk-local-secret', models: discovered.models })
      expect(added.providers).toEqual([{ id: 'local-vllm', baseUrl: `${fake.url}/v1`, keyName: 'LOCAL_VLLM_API_KEY', keySet: true, models: ['llama-4', 'qwen3-coder'] }])
      expect(JSON.stringify(added)).not.toContain('sk-local-secret')
      expect(JSON.stringify(await call('settings.get'))).not.toContain('sk-local-secret')
      expect(readFileSync(join(home, 'settings.yaml'), 'utf8')).not.toContain('sk-local-secret')
      expect(readFileSync(join(home, '.credentials.yaml'), 'utf8')).toContain('LOCAL_VLLM_API_KEY: sk-local-secret')
      expect(ctx.llm.model('local-vllm', 'qwen3-coder')?.contextWindow).toBe(65536)
      expect(ctx.llm.model('local-vllm', 'qwen3-coder')?.imageInput).toBe(false)
      // A model the user marks as taking images (servers do not say) keeps it, in settings too.
      await call('providers.add', { id: 'local-vllm', baseUrl: `${fake.url}/v1`, models: [discovered.models[0], { ...discovered.models[1], imageInput: true }] })
      expect(ctx.llm.model('local-vllm', 'qwen3-coder')?.imageInput).toBe(true)
      expect(readFileSync(join(home, 'settings.yaml'), 'utf8')).toMatch(/model: qwen3-coder\n\s+contextWindow: 65536\n\s+imageInput: true/)

      await call('settings.set', { defaultModel: 'qwen3-coder' })
      const session = await call('sessions.create', {})
      fake.enqueue(streamResponse([{ text: 'from vllm' }, { finish: 'stop' }]))
      await call('prompt', { id: session.id, text: 'hello provider' })
      await ctx.agents.get(session.id)!.whenIdle()
      expect(fake.requests[0]).toMatchObject({ path: '/v1/chat/completions' })
      expect(fake.requests[0]!.body.model).toBe('qwen3-coder')
      expect(fake.requests[0]!.headers.authorization).toBe('Bearer sk-local-secret')

      const removed = await call('providers.remove', { id: 'local-vllm' })
      expect(removed).toMatchObject({ removed: true, providers: [] })
      expect(ctx.llm.model('local-vllm', 'qwen3-coder')).toBeUndefined()
      expect(readFileSync(join(home, '.credentials.yaml'), 'utf8')).not.toContain('sk-local-secret')
      expect(readFileSync(join(home, 'settings.yaml'), 'utf8')).not.toContain('qwen3-coder')
    })

    it('refuses hostile provider input with clear 400s', async () => {
      for (const baseUrl of ['file:///etc/passwd', 'javascript:alert(1)', 'http://user:pw@127.0.0.1:1/v1', 'not a url', `${fake.url}/v1?x=1`]) {
        const error = await refused('providers.discover', { baseUrl })
        expect(error.code, baseUrl).toBe('DISCOVERY_FAILED')
      }
      for (const id of ['../x', 'DEEPSEEK', 'a b', 'x'.repeat(41), '']) {
        expect((await refused('providers.add', { id, baseUrl: `${fake.url}/v1`, models: ['m'] })).code, id).toBe('BAD_PARAMS')
      }
      expect((await refused('providers.add', { id: SCRIPTED_PROVIDER, baseUrl: `${fake.url}/v1`, models: ['m'] })).code).toBe('BAD_PROVIDER')
      expect((await refused('providers.add', { id: 'ok', baseUrl: `${fake.url}/v1`, models: [] })).code).toBe('BAD_PARAMS')
      expect((await refused('providers.add', { id: 'ok', baseUrl: `${fake.url}/v1`, models: [{ model: 'm', contextWindow: -5 }] })).code).toBe('BAD_PARAMS')
      expect((await refused('providers.add', { id: 'ok', baseUrl: `${fake.url}/v1`, models: [{ model: 'm', imageInput: 'yes' }] })).code).toBe('BAD_PARAMS')
      fake.enqueue(errorResponse(401, { error: { message: 'bad key' } }))
      expect((await refused('providers.discover', { baseUrl: `${fake.url}/v1`, key: 'wrong' })).message).toContain('refused the key')
      fake.enqueue({ status: 200, headers: { 'content-type': 'text/html' }, segments: ['<html>'] })
      expect((await refused('providers.discover', { baseUrl: `${fake.url}/v1` })).message).toContain('did not answer JSON')
      expect((await call('providers.list')).providers).toEqual([])
    })
  })
})
