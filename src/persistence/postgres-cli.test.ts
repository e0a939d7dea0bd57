/**
 * End to end through the real binary on a real PostgreSQL server: a session started by
 * `dsh web --store postgres://...` is refused to a second process while the web server holds
 * it, and continued by `dsh --store postgres://... --session ID` once the web server stopped.
 */
import { writeFileSync } from 'node:fs'
import { hostname } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { FakeDeepSeek, streamResponse } from '../../test-support/fake-deepseek.js'
import { postgresUnavailable, startPostgres, type PostgresServer } from '../../test-support/postgres.js'
import { runDsh, tempHome, withoutSessionHint } from '../../test-support/run-dsh.js'
import { startDshWeb, type DshWeb } from '../../test-support/web-process.js'
import { PostgresBackend } from './postgres/backend.js'
import { canonical, realisticLog } from './backend.conformance.js'
import type { SessionEvent } from '../session/types.js'
import { withoutFinishedChunks } from '../web/methods.js'

const unavailable = postgresUnavailable()
if (unavailable) console.warn(`skipping dsh --store postgres tests: ${unavailable}`)

const usage = { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 }
let server: PostgresServer | undefined
let model: FakeDeepSeek
beforeAll(async () => {
  if (unavailable) return
  server = await startPostgres()
  model = await FakeDeepSeek.start()
}, 120_000)
afterAll(async () => {
  await model?.close()
  await server?.stop()
})

async function api(web: DshWeb, method: string, params: Record<string, unknown>): Promise<any> {
  const response = await fetch(`${web.origin}/api/${method}`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', 'X-Dsh-Token': new URL(web.url).searchParams.get('token')! },
    body: JSON.stringify(params),
  })
  const body = await response.json() as { result?: unknown; error?: { message: string } }
  if (!response.ok) throw new Error(`${method}: ${response.status} ${body.error?.message}`)
  return body.result
}

/** Reads the session's event stream until a log event of `type` arrives. */
async function waitForLog(web: DshWeb, id: string, type: string): Promise<void> {
  const controller = new AbortController()
  const response = await fetch(`${web.origin}/api/events?session=${encodeURIComponent(id)}`, {
    headers: { 'X-Dsh-Token': new URL(web.url).searchParams.get('token')! }, signal: controller.signal,
  })
  const reader = response.body!.getReader()
  const decoder = new TextDecoder()
  let text = ''
  try {
    while (!text.includes(`"type":"${type}"`)) {
      const { value, done } = await reader.read()
      if (done) throw new Error(`event stream ended before ${type}`)
      text += decoder.decode(value, { stream: true })
    }
  } finally {
    controller.abort()
  }
}

/** Reads `log` events of the session's stream until seq `last` arrived; returns them in order. */
async function readLog(web: DshWeb, id: string, last: number, lastEventId?: number, onOpen?: () => void): Promise<SessionEvent[]> {
  const controller = new AbortController()
  const response = await fetch(`${web.origin}/api/events?session=${encodeURIComponent(id)}`, {
    headers: { 'X-Dsh-Token': new URL(web.url).searchParams.get('token')!, ...lastEventId === undefined ? {} : { 'Last-Event-ID': String(lastEventId) } },
    signal: controller.signal,
  })
  onOpen?.()
  const reader = response.body!.getReader()
  const decoder = new TextDecoder()
  const events: SessionEvent[] = []
  let buffer = ''
  try {
    while (events.at(-1)?.seq !== last) {
      const { value, done } = await reader.read()
      if (done) throw new Error(`event stream ended at seq ${events.at(-1)?.seq}`)
      buffer += decoder.decode(value, { stream: true })
      let end: number
      while ((end = buffer.indexOf('\n\n')) >= 0) {
        const block = buffer.slice(0, end)
        buffer = buffer.slice(end + 2)
        if (!/^event: log$/m.test(block)) continue
        events.push(JSON.parse(/^data: (.*)$/m.exec(block)![1]) as SessionEvent)
      }
    }
  } finally {
    controller.abort()
  }
  return events
}

describe.skipIf(unavailable !== undefined)('dsh --store postgres:// (binary)', () => {
  it('live events across hosts: dsh web streams a session another process writes, with no gap, and resumes from Last-Event-ID', async () => {
    const url = `${server!.url}&schema=live`
    const { home, cwd } = tempHome()
    const web = await startDshWeb({ cwd, args: ['--store', url, '--port', '0'], env: { DSH_HOME: home } })
    const writer = new PostgresBackend({ url, owner: { pid: 1, host: 'host-a' } })
    try {
      const { header, events } = await realisticLog(3, 41)
      await writer.acquireWriter(header.id)
      await writer.create(header, events.slice(0, 7))
      let opened!: () => void
      const open = new Promise<void>((resolve) => { opened = resolve })
      const streamed = readLog(web, header.id, events.length - 1, undefined, opened)
      // Host A keeps writing while host B's stream opens and after.
      const bounds = [7, 9, 30, 31, 80, events.length]
      for (let i = 0; i < bounds.length - 1; i++) {
        if (i === 2) await open
        await writer.appendBatch(header, events.slice(bounds[i], bounds[i + 1]))
      }
      const received = await streamed
      expect(received.map((e) => e.seq)).toEqual(events.map((e) => e.seq))
      expect(canonical(received)).toEqual(canonical(events))
      // A reconnect with Last-Event-ID gets exactly what follows (a replay leaves out the
      // chunks of finished messages, as for a local session).
      const resumed = await readLog(web, header.id, events.length - 1, 40)
      expect(canonical(resumed)).toEqual(canonical(withoutFinishedChunks(events.slice(41))))
      expect(resumed[0].seq).toBeGreaterThan(40)
    } finally {
      await writer.close()
      await web.stop()
    }
  }, 120_000)

  it('a session started in dsh web is refused to another writer while held, then continued by dsh --session after web stops', async () => {
    const url = `${server!.url}&schema=e2e`
    const { home, cwd } = tempHome()
    const patch = join(home, 'no-title.yml')
    writeFileSync(patch, '- id: session-title\n  config:\n    llm: false\n')
    const env = { DSH_HOME: home, DEEPSEEK_BASE_URL: model.url, DEEPSEEK_API_KEY: 'test-key' }

    const web = await startDshWeb({ cwd, args: ['--store', url, '--patch', patch, '--port', '0'], env })
    let id: string
    try {
      model.enqueue(streamResponse([{ text: 'first answer from web' }, { finish: 'stop', usage }]))
      id = (await api(web, 'sessions.create', {})).id as string
      const ended = waitForLog(web, id, 'turn/end')
      await api(web, 'prompt', { id, text: 'first question' })
      await ended

      // Another process on another "host" cannot act on it while the web server holds it...
      const refused = await runDsh(['--store', url, '--session', id, 'second question'], { cwd, env })
      expect(refused.code).not.toBe(0)
      expect(refused.stderr).toMatch(new RegExp(`^dsh: session ${id} is in use by another writer \\(pid ${web.child.pid} on ${hostname()}, since \\d{4}-\\d\\d-\\d\\dT[\\d:.]+Z\\)$`, 'm'))
      // ...but reads still work.
      const listed = await runDsh(['sessions', '--store', url, '--json'], { cwd, env })
      expect(listed.code).toBe(0)
      expect(JSON.parse(listed.stdout).map((s: { id: string }) => s.id)).toContain(id)
    } finally {
      await web.stop()
    }

    model.enqueue(streamResponse([{ text: 'second answer from the CLI' }, { finish: 'stop', usage }]))
    const requestsBefore = model.requests.length
    const second = await runDsh(['--store', url, '--session', id, 'second question'], { cwd, env })
    expect(withoutSessionHint(second.stderr)).toBe('')
    expect(second.code).toBe(0)
    expect(second.stdout).toContain('second answer from the CLI')
    // The model saw the turn the web server ran.
    expect(JSON.stringify(model.requests[requestsBefore].body)).toContain('first answer from web')

    const backend = new PostgresBackend({ url })
    try {
      const stored = (await backend.loadStored(id))!
      expect(stored.events.filter((e) => e.type === 'turn/start')).toHaveLength(2)
      expect(stored.events.at(-1)?.type).toBe('turn/end')
      // Both processes gave the lease back when they ended.
      expect(await backend.writer(id)).toBeUndefined()
    } finally {
      await backend.close()
    }
  }, 120_000)
})
