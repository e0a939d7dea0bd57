import fc from 'fast-check'
/**
 * The web server over real HTTP on 127.0.0.1: the Host and token guards, and every core API
 * method against the scripted model with JSONL persistence in a temporary home.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Context } from 'cordis'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { SessionsServicePlugin } from '../session/index.js'
import { JsonlPersistencePlugin } from '../persistence/plugins.js'
import type { JsonlBackend } from '../persistence/jsonl/backend.js'
import type { SessionEvent } from '../session/types.js'
import { SCRIPTED_MODEL, SCRIPTED_MODEL_INFO, ScriptedModel, hang, text } from '../../test-support/scripted-model.js'
import { apiClient, httpRequest, openEventStream, startWebApi, type WebApiHarness } from '../../test-support/web-api.js'
import { WebServer } from './server.js'
import { hostAllowed, isLoopbackHost } from './security.js'
import { parseWebArgs } from './app.js'
import { SessionTitlePlugin, titleOf } from '../title/index.js'

const TOKEN = 'test-token-0123456789abcdef'

async function http(port: number, path: string, options: { method?: string; headers?: Record<string, string>; body?: string } = {}) {
  const reply = await httpRequest(port, path, options)
  return { ...reply, body: reply.body.toString('utf8') }
}

const openStream = (port: number, path: string, headers: Record<string, string> = {}) => openEventStream(port, path, TOKEN, headers)

describe('dsh web server', () => {
  let ctx: Context
  let server: WebServer
  let model: ScriptedModel
  let home: string
  let port: number

  const { call, ok } = apiClient(() => port, TOKEN)
  const idle = (id: string) => ctx.agents.get(id)!.whenIdle()

  let harness: WebApiHarness

  beforeEach(async () => {
    home = mkdtempSync(join(tmpdir(), 'dsh-web-'))
    harness = await startWebApi({ home, token: TOKEN })
    ;({ ctx, model, port } = harness)
    server = harness.server!
  })

  afterEach(async () => {
    await harness.stop()
    rmSync(home, { recursive: true, force: true })
  })

  describe('guards', () => {
    it('refuses a Host header that is not loopback (DNS rebinding), on the page and the API', async () => {
      for (const host of [`evil.example:${port}`, 'evil.example', `127.0.0.1.nip.io:${port}`, `localhost:${port + 1}`]) {
        expect((await http(port, '/', { headers: { Host: host } })).status).toBe(403)
        expect((await call('sessions.list', {}, { Host: host })).status).toBe(403)
      }
      expect((await call('sessions.list', {}, { Host: `localhost:${port}` })).status).toBe(200)
      expect((await call('sessions.list', {}, { Host: `[::1]:${port}` })).status).toBe(200)
    })

    it('answers 401 to API calls and streams without the token or with a wrong one', async () => {
      expect((await call('sessions.list', {}, { 'X-Dsh-Token': '' })).status).toBe(401)
      expect((await call('sessions.list', {}, { 'X-Dsh-Token': 'x'.repeat(TOKEN.length) })).status).toBe(401)
      const stream = await http(port, '/api/events', {})
      expect(stream.status).toBe(401)
      expect(JSON.parse(stream.body).error.code).toBe('UNAUTHORIZED')
    })

    it('trades ?token= for an HttpOnly SameSite=Strict cookie that then authorises the API', async () => {
      expect((await http(port, '/')).status).toBe(401)
      expect((await http(port, '/?token=wrong')).status).toBe(401)
      const page = await http(port, `/?token=${TOKEN}&session=abc`)
      expect(page.status).toBe(303)
      expect(page.headers.location).toBe('/?session=abc')
      const cookie = String(page.headers['set-cookie']).split(';')[0]
      expect(String(page.headers['set-cookie'])).toMatch(/HttpOnly; SameSite=Strict/)
      const reply = await http(port, '/api/sessions.list', { method: 'POST', body: '{}', headers: { 'Content-Type': 'application/json', Cookie: cookie } })
      expect(reply.status).toBe(200)
    })

    it('refuses non-JSON posts and cross-origin calls (CSRF), and names unknown methods', async () => {
      const plain = await http(port, '/api/sessions.list', { method: 'POST', body: '{}', headers: { 'Content-Type': 'text/plain', 'X-Dsh-Token': TOKEN } })
      expect(plain.status).toBe(415)
      expect((await call('sessions.list', {}, { Origin: 'http://evil.example' })).status).toBe(403)
      expect((await call('sessions.list', {}, { Origin: `http://127.0.0.1:${port}` })).status).toBe(200)
      const unknown = await call('no.such')
      expect(unknown.status).toBe(404)
      expect(unknown.json.error.message).toContain('sessions.list')
      const bad = await http(port, '/api/sessions.list', { method: 'POST', body: '{', headers: { 'Content-Type': 'application/json', 'X-Dsh-Token': TOKEN } })
      expect(bad.status).toBe(400)
    })

    it('security: the JSON content type is parsed exactly (no substring match), for any media type a form can send', async () => {
      const post = (type: string) => http(port, '/api/sessions.list', { method: 'POST', body: '{}', headers: { 'Content-Type': type, 'X-Dsh-Token': TOKEN } })
      for (const type of ['text/plain;charset=application/json', 'text/plain; application/json', 'application/x-www-form-urlencoded; x=application/json', 'multipart/form-data; boundary=application/json', 'application/jsonp', 'application/json-seq']) {
        expect((await post(type)).status, type).toBe(415)
      }
      await fc.assert(fc.asyncProperty(fc.constantFrom('text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data'), fc.string({ maxLength: 30 }), async (base, tail) => {
        expect((await post(`${base};${tail}application/json`)).status).toBe(415)
      }), { numRuns: 25 })
      for (const type of ['application/json', 'Application/JSON', 'application/json; charset=utf-8', ' application/json ;charset="UTF-8"']) {
        expect((await post(type)).status, type).toBe(200)
      }
    })

    it('a corrupt or newer-format stored session and a bad fork boundary are 4xx naming the problem, not 500', async () => {
      model.push(text('one'))
      const created = await ok('sessions.create', { cwd: home })
      await ok('prompt', { id: created.id, text: 'hi' })
      await idle(created.id)
      for (const boundary of [-1, 10_000, 1.5]) {
        const reply = await call('sessions.fork', { id: created.id, boundary })
        expect(reply.status, String(boundary)).toBeGreaterThanOrEqual(400)
        expect(reply.status, String(boundary)).toBeLessThan(500)
      }
      await ctx.agents.get(created.id)!.dispose()
      await ctx.sessionPersistence.flush(created.id)
      ctx.sessions.close(created.id)
      const path = (await (ctx.sessionPersistence.backend as JsonlBackend).pathOf(created.id))!
      const lines = readFileSync(path, 'utf8').split('\n')
      lines.splice(2, 0, lines[2]!)
      writeFileSync(path, lines.join('\n'))
      const corrupt = await call('prompt', { id: created.id, text: 'again' })
      expect(corrupt.status).toBe(422)
      expect(corrupt.json.error).toMatchObject({ code: 'CORRUPT_SESSION', message: expect.stringContaining(`${path}: line 4: wrong-seq`) })
      lines.splice(2, 1)
      lines[0] = JSON.stringify({ ...JSON.parse(lines[0]!), version: 99 })
      writeFileSync(path, lines.join('\n'))
      const newer = await call('sessions.history', { id: created.id })
      expect(newer.status).toBe(422)
      expect(newer.json.error).toMatchObject({ code: 'SESSION_VERSION', message: expect.stringContaining('newer') })
    })

    it('security: a malformed token cookie is 401, not 500', async () => {
      const page = await http(port, '/api/sessions.list', { method: 'POST', body: '{}', headers: { 'Content-Type': 'application/json', Cookie: `x=1; dsh_token_${port}=%E0%A4%A; y=%` } })
      expect(page.status).toBe(401)
      await fc.assert(fc.asyncProperty(fc.string({ maxLength: 20 }).map(text => `%${text}`), async (value) => {
        const reply = await http(port, '/api/sessions.list', { method: 'POST', body: '{}', headers: { 'Content-Type': 'application/json', Cookie: `a=${value}; dsh_token_${port}=${value}`.replace(/[^\x20-\x7e]/g, '') } })
        expect(reply.status).toBe(401)
      }), { numRuns: 25 })
    })

    it('loopback names, bound host and trusted names; non-loopback binding needs --trust-host', () => {
      expect(isLoopbackHost('127.0.0.2')).toBe(true)
      expect(isLoopbackHost('::1')).toBe(true)
      expect(isLoopbackHost('10.0.0.1')).toBe(false)
      expect(hostAllowed('box.lan:80', { bound: '0.0.0.0', trusted: ['box.lan'], port: 80 })).toBe(true)
      expect(hostAllowed('box.lan:80', { bound: '0.0.0.0', trusted: [], port: 80 })).toBe(false)
      expect(hostAllowed(undefined, { bound: '127.0.0.1', trusted: [], port: 80 })).toBe(false)
      expect(() => parseWebArgs(['--host', '0.0.0.0'])).toThrow(/--trust-host/)
      expect(parseWebArgs(['--host', '0.0.0.0', '--trust-host', '--allow-host', 'box.lan'])).toMatchObject({ host: '0.0.0.0', allowHosts: ['box.lan'] })
      expect(parseWebArgs([])).toMatchObject({ host: '127.0.0.1', port: 3080, open: true })
      expect(() => parseWebArgs(['--port', 'x'])).toThrow(/--port/)
    })
  })

  describe('methods', () => {
    it('create, prompt, history without finished chunks, list, rename (user title), export', async () => {
      model.push(text('Hello **there**'))
      const created = await ok('sessions.create', { cwd: home })
      expect(created).toMatchObject({ cwd: home, status: 'idle', title: null })
      const missing = await call('sessions.create', { cwd: join(home, 'no-such-folder') })
      expect(missing.status).toBe(400)
      expect(missing.json.error.message).toContain('no-such-folder')
      mkdirSync(join(home, 'project'))
      expect(await ok('sessions.create', { cwd: 'project' })).toMatchObject({ cwd: join(home, 'project') })
      await ok('prompt', { id: created.id, text: 'say hello please' })
      await idle(created.id)
      const history = await ok('sessions.history', { id: created.id })
      const types = history.events.map((event: SessionEvent) => event.type)
      expect(types).toContain('user/message')
      expect(types).toContain('assistant/message')
      expect(types).not.toContain('assistant/chunk')
      expect(history.length).toBeGreaterThan(history.events.length)
      const later = await ok('sessions.history', { id: created.id, from: history.length - 1 })
      expect(later.events).toHaveLength(1)

      await ok('sessions.rename', { id: created.id, title: 'Greeting test' })
      const session = ctx.sessions.get(created.id)!
      expect(session.events.at(-1)).toMatchObject({ type: 'session/title', data: { title: 'Greeting test', source: { kind: 'user' } } })
      const list = await ok('sessions.list')
      expect(list.find((entry: { id: string }) => entry.id === created.id)).toMatchObject({ title: 'Greeting test', turns: 1 })
      expect((await call('sessions.rename', { id: created.id, title: '  ' })).status).toBe(400)

      const exported = await ok('sessions.export', { id: created.id })
      const lines = exported.jsonl.trim().split('\n').map((line: string) => JSON.parse(line))
      expect(lines[0]).toMatchObject({ type: 'session', id: created.id })
      expect(lines).toHaveLength(session.length + 1)
    })

    it('sessions.import stores an exported session: a taken id answers 409 EXISTS, newId keeps both, a bad file answers 400 BAD_IMPORT naming the line', async () => {
      model.push(text('to be moved'))
      const created = await ok('sessions.create', {})
      await ok('prompt', { id: created.id, text: 'remember this' })
      await idle(created.id)
      await ctx.sessionPersistence.flushAll()
      const { jsonl } = await ok('sessions.export', { id: created.id })
      const taken = await call('sessions.import', { text: jsonl })
      expect(taken.status).toBe(409)
      expect(taken.json.error).toMatchObject({ code: 'EXISTS' })
      const copy = await ok('sessions.import', { text: jsonl, newId: true })
      expect(copy).toMatchObject({ id: `${created.id}-imported`, closers: 0, attachments: 0, missing: [], session: { id: `${created.id}-imported`, turns: 1, status: 'idle' } })
      const history = await ok('sessions.history', { id: copy.id })
      expect(history.events.map((event: SessionEvent) => event.type)).toContain('assistant/message')
      expect((await ok('sessions.list')).map((entry: { id: string }) => entry.id)).toContain(copy.id)
      const bad = await call('sessions.import', { text: `${jsonl.split('\n')[0]}\n{"type":"turn/start","seq":3,"time":1,"data":{}}\n` })
      expect(bad.status).toBe(400)
      expect(bad.json.error).toMatchObject({ code: 'BAD_IMPORT' })
      expect(bad.json.error.message).toMatch(/^not a valid session log: line 2: /)
    })

    it('fork (S-14) gives a stored child with the parent; delete moves it to the trash', async () => {
      model.push(text('one'))
      const created = await ok('sessions.create', {})
      await ok('prompt', { id: created.id, text: 'first' })
      await idle(created.id)
      const child = await ok('sessions.fork', { id: created.id })
      expect(child.parentSession).toBe(created.id)
      expect(child.id).not.toBe(created.id)
      await ctx.sessionPersistence.flushAll()
      expect((await ok('sessions.list')).map((entry: { id: string }) => entry.id)).toContain(child.id)
      expect(await ok('sessions.delete', { id: child.id })).toEqual({ deleted: true })
      expect((await ok('sessions.list')).map((entry: { id: string }) => entry.id)).not.toContain(child.id)
      expect((await call('sessions.history', { id: child.id })).status).toBe(404)
    })

    it('A-2: concurrent first prompts for a stored session that is not live all land, in order', async () => {
      model.push(text('first'))
      const created = await ok('sessions.create', { cwd: home })
      await ok('prompt', { id: created.id, text: 'remember this' })
      await idle(created.id)
      await ctx.agents.get(created.id)!.dispose()
      await ctx.sessionPersistence.flush(created.id)
      ctx.sessions.close(created.id)
      for (let i = 0; i < 3; i++) model.push(text(`answer ${i}`))
      const replies = await Promise.all(['one', 'two', 'three'].map(words => call('prompt', { id: created.id, text: words })))
      expect(replies.map(reply => reply.status)).toEqual([200, 200, 200])
      await idle(created.id)
      const users = ctx.sessions.get(created.id)!.events.filter(event => event.type === 'user/message')
        .map(event => JSON.stringify(event.data)).filter(json => !json.includes('Current runtime context'))
      expect(users.map(json => ['remember this', 'one', 'two', 'three'].find(words => json.includes(words)))).toEqual(['remember this', 'one', 'two', 'three'])
    })

    it('A-2/A-9: prompt while running queues next-turn (editable, removable); steer goes next-step; cancel aborts', async () => {
      let started!: () => void
      const running = new Promise<void>(resolve => { started = resolve })
      model.push(hang([{ type: 'block-start', index: 0, blockType: 'text' }, { type: 'text-delta', index: 0, text: 'working' }], () => started()))
      const created = await ok('sessions.create', {})
      const stream = openStream(port, `/api/events?session=${created.id}&from=0`)
      expect(await stream.ready).toBe(200)
      await ok('prompt', { id: created.id, text: 'long task' })
      await running
      await stream.waitFor(e => e.event === 'log' && e.data.type === 'assistant/chunk')

      const queued = await ok('prompt', { id: created.id, text: 'next thing' })
      expect(queued.status).toBe('running')
      expect(queued.inbox.nextTurn).toEqual([{ text: 'next thing' }])
      // Each snapshot says how far the log was when it was read: every queue change is logged.
      expect(queued.inbox.version).toBe(ctx.sessions.get(created.id)!.length)
      const edited = await ok('inbox.edit', { id: created.id, target: 'next-turn', index: 0, text: 'edited thing' })
      expect(edited.inbox.nextTurn).toEqual([{ text: 'edited thing' }])
      expect(edited.inbox.version).toBeGreaterThan(queued.inbox.version)
      await ok('prompt', { id: created.id, text: 'second queued' })
      expect((await ok('inbox.remove', { id: created.id, target: 'next-turn', index: 0 })).inbox.nextTurn).toEqual([{ text: 'second queued' }])
      expect((await call('inbox.remove', { id: created.id, target: 'next-turn', index: 5 })).status).toBe(409)
      const steered = await ok('steer', { id: created.id, text: 'also check tests' })
      expect(steered.inbox.nextStep).toEqual([{ text: 'also check tests' }])
      await stream.waitFor(e => e.event === 'status' && e.data.inbox.nextStep.length === 1)

      await ok('cancel', { id: created.id })
      await idle(created.id)
      const end = await stream.waitFor(e => e.event === 'log' && e.data.type === 'turn/end')
      expect(end.data.data.reason).toMatchObject({ kind: 'aborted', reason: { kind: 'user' } })
      await stream.waitFor(e => e.event === 'status' && e.data.status === 'idle')
      stream.close()
    })

    it('the event stream resumes after the last seen seq (Last-Event-ID) and pushes sidebar summaries', async () => {
      model.push(text('streamed'), text('again'))
      const created = await ok('sessions.create', {})
      const first = openStream(port, `/api/events?session=${created.id}&from=0`)
      await first.ready
      await ok('prompt', { id: created.id, text: 'go' })
      await idle(created.id)
      await first.waitFor(e => e.event === 'log' && e.data.type === 'turn/end')
      await first.waitFor(e => e.event === 'summary' && e.data.id === created.id)
      const seen = first.events.filter(e => e.event === 'log')
      expect(seen.map(e => e.data.seq)).toEqual(seen.map((_, index) => index))
      first.close()

      const lastSeen = 3
      await ok('prompt', { id: created.id, text: 'more' })
      await idle(created.id)
      const second = openStream(port, `/api/events?session=${created.id}&from=0`, { 'Last-Event-ID': String(lastSeen) })
      await second.ready
      await second.waitFor(e => e.event === 'ready')
      const resumed = second.events.filter(e => e.event === 'log').map(e => e.data.seq as number)
      expect(resumed[0]).toBe(lastSeen + 1)
      expect(resumed.at(-1)).toBe(ctx.sessions.get(created.id)!.length - 1)
      second.close()
    })

    it('a prompt to a model that is not ready (no key) is refused with the reason, and nothing is queued', async () => {
      ctx.llm.register({
        adapter: { provider: 'locked', stream: () => { throw new Error('must not be called') }, readiness: () => 'LOCKED_API_KEY is not set' },
        models: [{ ...SCRIPTED_MODEL_INFO, provider: 'locked', model: 'locked-1' }],
      })
      const created = await ok('sessions.create', { model: 'locked-1' })
      const refused = await call('prompt', { id: created.id, text: 'hello' })
      expect(refused.status).toBe(409)
      expect(refused.json.error).toEqual({ code: 'NOT_READY', message: 'LOCKED_API_KEY is not set' })
      expect(ctx.sessions.get(created.id)!.events.some(event => event.type === 'user/message' || event.type === 'agent/inbox/spliced')).toBe(false)
      const models = await ok('models.list')
      expect(models.models.find((info: { model: string }) => info.model === 'locked-1').ready).toBe('LOCKED_API_KEY is not set')
    })

    it('sessions.setModel switches the route between turns and is refused while a turn runs', async () => {
      const other = new ScriptedModel([text('from the other model')])
      ctx.llm.register({ adapter: { provider: 'other', stream: options => other.stream(options) }, models: [{ ...SCRIPTED_MODEL_INFO, provider: 'other', model: 'other-1' }] })
      const created = await ok('sessions.create', {})
      expect(await ok('sessions.setModel', { id: created.id, model: 'other-1' })).toEqual({ model: 'other-1', provider: 'other' })
      await ok('prompt', { id: created.id, text: 'hi' })
      await idle(created.id)
      expect(other.requests).toHaveLength(1)
      expect((await ok('sessions.history', { id: created.id })).model).toBe('other-1')

      let started!: () => void
      const running = new Promise<void>(resolve => { started = resolve })
      model.push(hang([], () => started()))
      await ok('sessions.setModel', { id: created.id, model: SCRIPTED_MODEL })
      await ok('prompt', { id: created.id, text: 'long' })
      await running
      expect((await call('sessions.setModel', { id: created.id, model: 'other-1' })).status).toBe(409)
      await ok('cancel', { id: created.id })
      await idle(created.id)
    })

    it('a rename is never replaced by the model title that lands after it', async () => {
      await ctx.plugin(SessionTitlePlugin).await()
      let renamed!: () => void
      const afterRename = new Promise<void>(resolve => { renamed = resolve })
      let streamed!: () => void
      const titleStreamed = new Promise<void>(resolve => { streamed = resolve })
      // The title call is in flight when the rename lands.
      model.push(text('answer'), async function* () {
        try {
          await afterRename
          yield* text('Model Proposed Title')
        } finally {
          streamed()
        }
      })
      const created = await ok('sessions.create', {})
      await ok('prompt', { id: created.id, text: 'explain the build' })
      await idle(created.id)
      await ok('sessions.rename', { id: created.id, title: 'My own name' })
      renamed()
      await titleStreamed
      // The title plugin appends right after its stream ends: let those continuations run.
      await new Promise(resolve => setImmediate(resolve))
      expect(model.requests.at(-1)?.meta?.purpose).toBe('session-title')
      expect(titleOf(ctx.sessions.get(created.id)!)).toBe('My own name')
    })

    it('plugins add methods and assets; assets need the token and are listed as extension scripts', async () => {
      const dispose = ctx.webApi.register('echo.twice', params => ({ twice: `${params.word}${params.word}` }))
      expect(await ok('echo.twice', { word: 'ab' })).toEqual({ twice: 'abab' })
      expect(() => ctx.webApi.register('echo.twice', () => null)).toThrow(/already registered/)
      dispose()
      expect((await call('echo.twice', {})).status).toBe(404)

      ctx.webApi.registerAsset('cards/dice.js', { contentType: 'text/javascript', body: 'export {}', script: true })
      expect(() => ctx.webApi.registerAsset('../x.js', { contentType: 'text/plain', body: '' })).toThrow(/bad asset path/)
      expect(await ok('extensions.list')).toEqual({ scripts: ['/ext/cards/dice.js'] })
      expect((await http(port, '/ext/cards/dice.js')).status).toBe(401)
      const served = await http(port, '/ext/cards/dice.js', { headers: { 'X-Dsh-Token': TOKEN } })
      expect(served).toMatchObject({ status: 200, body: 'export {}' })
      expect(served.headers['content-type']).toBe('text/javascript')
      expect((await http(port, '/ext/cards/none.js', { headers: { 'X-Dsh-Token': TOKEN } })).status).toBe(404)
      expect((await http(port, '/ext/%E0%A4%A', { headers: { 'X-Dsh-Token': TOKEN } })).status).toBe(400)
      mkdirSync(join(home, 'static'))
      writeFileSync(join(home, 'static', 'app.js'), 'ok')
      writeFileSync(join(home, 'secret.txt'), 'secret')
      expect((await http(port, '/app.js')).status).toBe(200)
      expect((await http(port, '/..%2fsecret.txt')).status).toBe(404)
    })

    it('C-1: looking at a stored session with an open turn does not repair it; acting on it is refused while its writer lives, and repairs once it is gone, with no seq gap in the stream', async () => {
      // Another runtime left a turn open (it may still be running): write it through a second runtime.
      const other = new Context()
      await other.plugin(SessionsServicePlugin).await()
      const otherPersistence = other.plugin(JsonlPersistencePlugin, { root: join(home, 'sessions'), maxDelayMs: 5 })
      await otherPersistence.await()
      const crashed = other.sessions.create({ cwd: home })
      crashed.append('turn/start', { turn: 1 })
      crashed.append('step/start', { turn: 1, step: 1 })
      crashed.append('user/message', { id: 'u1', role: 'user', source: { kind: 'user' }, content: [{ type: 'text', text: 'still working?' }] }, { surfaceOp: 'append' })
      await other.sessionPersistence.flush(crashed)
      const id = crashed.id
      const revision = await ctx.sessionPersistence.backend.readStoredRevision(id)

      const history = await ok('sessions.history', { id })
      expect(history).toMatchObject({ live: false, length: 3, summary: { id, turns: 1, status: 'idle' } })
      const stream = openStream(port, `/api/events?session=${id}&from=0`)
      await stream.ready
      await stream.waitFor(e => e.event === 'ready')
      expect(await ok('sessions.export', { id })).toMatchObject({ filename: `${id}.jsonl` })
      expect(ctx.sessions.get(id)).toBeUndefined()
      expect(await ctx.sessionPersistence.backend.readStoredRevision(id)).toBe(revision)
      // While the other runtime is its writer, acting on it is refused and changes nothing.
      const refused = await call('prompt', { id, text: 'interfere' })
      expect(refused.status).toBe(409)
      expect(refused.json.error).toMatchObject({ code: 'SESSION_IN_USE', message: expect.stringMatching(new RegExp(`^session ${id} is in use by another writer \\(pid ${process.pid} on `)) })
      expect(await ctx.sessionPersistence.backend.readStoredRevision(id)).toBe(revision)
      // Once it is gone (a crashed holder's lock is stale; here it releases it), acting repairs.
      await otherPersistence.dispose()

      model.push(text('resumed'))
      await ok('prompt', { id, text: 'go on' })
      await idle(id)
      const session = ctx.sessions.get(id)!
      await stream.waitFor(e => e.event === 'log' && e.data.seq === session.length - 1)
      const seqs = stream.events.filter(e => e.event === 'log').map(e => e.data.seq as number)
      expect(seqs).toEqual(session.events.map(event => event.seq))
      expect(session.events.find(event => event.type === 'turn/end')).toMatchObject({ data: { turn: 1, reason: { kind: 'interrupted' } } })
      stream.close()
    })

    it('a stored session read again is served from its last read only while the file is unchanged: another writer\'s appends show at once', async () => {
      const other = new Context()
      await other.plugin(SessionsServicePlugin).await()
      const otherPersistence = other.plugin(JsonlPersistencePlugin, { root: join(home, 'sessions'), maxDelayMs: 5 })
      await otherPersistence.await()
      const writing = other.sessions.create({ cwd: home })
      writing.append('turn/start', { turn: 1 })
      writing.append('step/start', { turn: 1, step: 1 })
      writing.append('user/message', { id: 'u1', role: 'user', source: { kind: 'user' }, content: [{ type: 'text', text: 'first' }] }, { surfaceOp: 'append' })
      await other.sessionPersistence.flush(writing)
      const id = writing.id
      expect(await ok('sessions.history', { id })).toMatchObject({ live: false, length: 3 })
      expect((await ok('sessions.history', { id })).events).toHaveLength(3)
      writing.append('step/end', { turn: 1, step: 1 })
      writing.append('turn/end', { turn: 1, reason: { kind: 'completed' } })
      await other.sessionPersistence.flush(writing)
      const again = await ok('sessions.history', { id })
      expect(again).toMatchObject({ length: 5, summary: { turns: 1 } })
      expect(again.events.at(-1)).toMatchObject({ type: 'turn/end', seq: 4 })
      expect((await ok('sessions.export', { id })).jsonl.trim().split('\n')).toHaveLength(6)
      await otherPersistence.dispose()
    })

    it('models, default model and credentials: a key is written but never sent back', async () => {
      const models = await ok('models.list')
      expect(models.models.map((info: { model: string }) => info.model)).toContain(SCRIPTED_MODEL)
      expect((await call('settings.set', { defaultModel: 'nope' })).status).toBe(400)
      expect(await ok('settings.set', { defaultModel: SCRIPTED_MODEL })).toEqual({ defaultModel: SCRIPTED_MODEL })
      expect((await ok('models.list')).default).toBe(SCRIPTED_MODEL)

      const secret = 'sk-web-test-secret-value'
      const previous = process.env.WEBTEST_API_KEY
      try {
        await ok('credentials.set', { name: 'WEBTEST_API_KEY', value: secret })
        expect(readFileSync(join(home, '.credentials.yaml'), 'utf8')).toContain(secret)
        const settings = await call('settings.get')
        expect(JSON.stringify(settings.json)).not.toContain(secret)
        expect(settings.json.result.credentials).toContainEqual({ name: 'WEBTEST_API_KEY', set: true, source: 'credentials' })
        expect((await call('credentials.set', { name: 'bad name', value: 'x' })).status).toBe(400)
        // Credentials are provider API keys: nothing else can be planted in the environment.
        for (const name of ['BASH_ENV', 'NODE_OPTIONS', 'PATH', 'DEEPSEEK_BASE_URL', 'LD_PRELOAD', 'DSH_WEB_TOKEN', 'DSH_HOME']) {
          const planted = await call('credentials.set', { name, value: 'x' })
          expect(planted.status, name).toBe(400)
          expect(planted.json.error.message).toContain('provider API keys')
          expect(process.env[name]).not.toBe('x')
        }
      } finally {
        if (previous === undefined) delete process.env.WEBTEST_API_KEY
        else process.env.WEBTEST_API_KEY = previous
      }
    })
  })
})
