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
import { runDsh, tempHome } from '../../test-support/run-dsh.js'
import { startDshWeb, type DshWeb } from '../../test-support/web-process.js'
import { PostgresBackend } from './postgres/backend.js'

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

describe.skipIf(unavailable !== undefined)('dsh --store postgres:// (binary)', () => {
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
    expect(second.stderr).toBe('')
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
