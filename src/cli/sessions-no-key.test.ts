/**
 * `dsh sessions` (list, export, delete, import) reads and writes the store only: no model key is
 * needed, on the default JSONL store and on PostgreSQL (`--store URL` before the subcommand, as
 * a new user types it), issue #38.4a.
 */
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { FakeDeepSeek, streamResponse } from '../../test-support/fake-deepseek.js'
import { postgresUnavailable, startPostgres, type PostgresServer } from '../../test-support/postgres.js'
import { runDsh, tempHome } from '../../test-support/run-dsh.js'
import { parseLauncherArgs } from './main.js'

const unavailable = postgresUnavailable()
if (unavailable) console.warn(`skipping the PostgreSQL part of the no-key sessions tests: ${unavailable}`)

const usage = { prompt_tokens: 10, completion_tokens: 3 }
let model: FakeDeepSeek
let pg: PostgresServer | undefined
beforeAll(async () => {
  model = await FakeDeepSeek.start()
  if (!unavailable) pg = await startPostgres()
}, 120_000)
afterAll(async () => {
  await model?.close()
  await pg?.stop()
})

/** One answered session stored through `store` (launcher flags before the task), with a key. */
async function storedSession(home: string, cwd: string, store: string[]): Promise<string> {
  model.enqueue(streamResponse([{ text: 'ready' }, { finish: 'stop', usage }]))
  const run = await runDsh([...store, '--output', 'json', 'hello'], { cwd, env: { DSH_HOME: home, DEEPSEEK_BASE_URL: model.url, DEEPSEEK_API_KEY: 'test-key' } })
  expect(run.code, run.stderr).toBe(0)
  return JSON.parse(run.stdout).sessionId as string
}

/** List, export, delete and import with no model key anywhere (runDsh drops DEEPSEEK_API_KEY). */
async function allFourWithoutKey(store: string[]): Promise<void> {
  const { home, cwd } = tempHome()
  const id = await storedSession(home, cwd, store)
  const env = { DSH_HOME: home }
  const before = model.requests.length

  const listed = await runDsh([...store, 'sessions', '--json'], { cwd, env })
  expect(listed.code, listed.stderr).toBe(0)
  expect((JSON.parse(listed.stdout) as { id: string }[]).map(s => s.id)).toEqual([id])

  const file = join(cwd, 'out.jsonl')
  const exported = await runDsh([...store, 'sessions', 'export', id, '-o', file], { cwd, env })
  expect(exported.code, exported.stderr).toBe(0)
  expect(existsSync(file)).toBe(true)
  expect(JSON.parse(readFileSync(file, 'utf8').split('\n')[0]).id).toBe(id)

  const deleted = await runDsh([...store, 'sessions', 'delete', id], { cwd, env })
  expect(deleted.code, deleted.stderr).toBe(0)
  expect(JSON.parse((await runDsh([...store, 'sessions', '--json'], { cwd, env })).stdout)).toEqual([])

  const imported = await runDsh([...store, 'sessions', 'import', file], { cwd, env })
  expect(imported.code, imported.stderr).toBe(0)
  expect(imported.stdout).toContain(`imported session ${id}`)
  const again = JSON.parse((await runDsh([...store, 'sessions', '--json'], { cwd, env })).stdout) as { id: string }[]
  expect(again.map(s => s.id)).toEqual([id])
  expect(model.requests.length).toBe(before)
}

describe('dsh sessions without a model key', () => {
  it('launcher flags before a subcommand still route it: `dsh --store URL sessions ...` is the sessions app, not a task called "sessions"', () => {
    expect(parseLauncherArgs(['--store', 'postgres://x/y', 'sessions', '--json'])).toMatchObject({ profile: 'sessions', profileGiven: true, store: 'postgres://x/y', appArgs: ['--json'] })
    expect(parseLauncherArgs(['--store=postgres://x/y', 'sessions', 'import', 'f'])).toMatchObject({ profile: 'sessions-import', appArgs: ['import', 'f'] })
    expect(parseLauncherArgs(['--patch', 'p.yml', 'web', '--port', '1'])).toMatchObject({ profile: 'web', patches: ['p.yml'], appArgs: ['--port', '1'] })
    // An explicit profile keeps the word as an argument of its app.
    expect(parseLauncherArgs(['--profile', 'headless', 'sessions'])).toMatchObject({ profile: 'headless', appArgs: ['sessions'] })
  })

  it('JSONL (the default store): list, export, delete and import need no key', async () => {
    await allFourWithoutKey([])
  })

  it.skipIf(unavailable)('PostgreSQL (--store URL before the subcommand): list, export, delete and import need no key', async () => {
    await allFourWithoutKey(['--store', pg!.url])
  })
})
