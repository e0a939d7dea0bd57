/**
 * The recorded lsp-definition scenario: its omitted subject file recreated, the recorded call
 * answered by the real typescript-language-server, and the scenario passing the replay and
 * protocol suites.
 */
import { existsSync, mkdtempSync, readFileSync, realpathSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { describe, expect, it } from 'vitest'
import { parseSessionFile } from '../session/codec.js'
import { recreateLspSubjects } from '../conformance/workspace.js'
import { replaySuite } from '../conformance/replay-suite.js'
import { protocolSuite } from '../conformance/protocol-suite.js'
import type { ConformanceResult } from '../conformance/types.js'
import { HAS_TS_SERVER, TS_SERVER_MISSING } from '../../test-support/lsp.js'
import { LspQueries } from './queries.js'

const corpus = resolve(import.meta.dirname, '../../../shared/fixtures/dsh')
const scenario = join(corpus, 'examples/acp-agent/tests/snapshots/lsp-definition')
const ready = HAS_TS_SERVER && existsSync(scenario)
if (!ready) console.warn(`skipping the lsp-definition recording test: ${HAS_TS_SERVER ? 'the conformance corpus (../shared/fixtures/dsh) is absent' : TS_SERVER_MISSING}`)

describe.skipIf(!ready)('the lsp-definition recording', () => {
  it('the recorded call, on the recreated subject file, answers with the recorded first location', async () => {
    const { events } = parseSessionFile(readFileSync(join(scenario, 'session.jsonl'), 'utf8'))
    const work = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-lsp-scenario-')))
    const queries = new LspQueries({ maxLocations: 1 })
    try {
      recreateLspSubjects(work, events)
      const call = events.find(event => event.type === 'tool/call' && (event.data as { name: string }).name === 'lsp')!
      const args = JSON.parse((call.data as { arguments: string }).arguments)
      const result = await queries.run(args, { callId: 'recorded', cwd: work, signal: new AbortController().signal })
      expect((result.content[0] as { text: string }).text.split('\n')[0]).toBe('subject.ts:1:7')
    } finally {
      await queries.dispose()
      rmSync(work, { recursive: true, force: true })
    }
  }, 60_000)

  it('passes the replay and protocol suites', async () => {
    const results: ConformanceResult[] = []
    for await (const result of replaySuite({ filter: 'snapshots/lsp-definition' }).run([corpus])) results.push(result)
    for await (const result of protocolSuite({ filter: 'snapshots/lsp-definition' }).run([corpus])) results.push(result)
    expect(results.map(result => [result.suite, result.status, result.detail])).toEqual([['replay', 'pass', undefined], ['protocol', 'pass', undefined]])
  }, 180_000)
})
