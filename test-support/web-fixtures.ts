/**
 * The recorded web-lane session logs of the corpus (`../shared/fixtures/dsh/apps/web/tests/
 * snapshots/<scenario>/{session,seed}.jsonl`), for tests that open them in `dsh web`. They are
 * read in place and written into a temporary store at test time, never copied into the repo.
 * Projected logs (no seq/time) get seqs in file order and times from the header's createdAt;
 * the placeholders get values of the test run.
 */
import { randomUUID } from 'node:crypto'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { parseSessionFile } from '../src/session/codec.js'
import type { SessionEvent, SessionHeader } from '../src/session/types.js'
import { JsonlBackend } from '../src/persistence/jsonl/backend.js'
import { repoRoot } from './run-dsh.js'

export const webFixtureRoot = resolve(repoRoot, '../shared/fixtures/dsh/apps/web/tests/snapshots')

export interface WebFixture {
  /** `<scenario>/<file>` */
  readonly name: string
  readonly path: string
}

/** Every web-lane session log of the corpus; empty when the corpus is absent. */
export function webFixtures(): WebFixture[] {
  if (!existsSync(webFixtureRoot)) return []
  const out: WebFixture[] = []
  for (const scenario of readdirSync(webFixtureRoot).sort()) {
    for (const file of ['session.jsonl', 'seed.jsonl']) {
      const path = join(webFixtureRoot, scenario, file)
      if (existsSync(path)) out.push({ name: `${scenario}/${file}`, path })
    }
  }
  return out
}

/** One fixture as a stored log: placeholders filled, seqs and times assigned. */
export function readWebFixture(fixture: WebFixture, cwd: string, id = randomUUID()): { header: SessionHeader; events: SessionEvent[] } {
  const text = readFileSync(fixture.path, 'utf8')
    .replaceAll('{{sessionId}}', id).replaceAll('{{cwd}}', cwd)
    .replaceAll('{{rpcId}}', 'rpc-1').replaceAll('{{messagePrefix}}', '')
  const parsed = parseSessionFile(text)
  const base = parsed.header.createdAt
  const events = parsed.projected ? parsed.events.map(event => ({ ...event, time: base + event.time })) : parsed.events
  return { header: parsed.header, events }
}

/** Writes every fixture into a JSONL store under `root` (the `sessions` folder of a dsh home). */
export async function storeWebFixtures(root: string, cwd: string): Promise<{ fixture: WebFixture; id: string }[]> {
  const backend = new JsonlBackend({ root })
  const stored: { fixture: WebFixture; id: string }[] = []
  try {
    for (const fixture of webFixtures()) {
      const { header, events } = readWebFixture(fixture, cwd)
      await backend.create(header, events)
      stored.push({ fixture, id: header.id })
    }
  } finally {
    await backend.close()
  }
  return stored
}
