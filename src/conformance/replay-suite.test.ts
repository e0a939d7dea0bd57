import { existsSync } from 'node:fs'
import { resolve } from 'node:path'
import { describe, expect, it } from 'vitest'
import type { SessionEvent } from '../session/types.js'
import { project, replaySuite } from './replay-suite.js'
import type { ConformanceResult } from './types.js'

const repoRoot = resolve(import.meta.dirname, '../..')
const corpus = resolve(repoRoot, '../shared/fixtures/dsh')
if (!existsSync(corpus)) console.warn('skipping the replay conformance run: ../shared/fixtures/dsh absent')

/** The CORE scenarios that use only bash/read/write/edit/glob/grep and must replay exactly. */
const MUST_PASS = [
  'acp-agent/tests/snapshots/text-turn', 'acp-agent/tests/snapshots/tool-call-turn', 'acp-agent/tests/snapshots/bash-tool-turn',
  'acp-agent/tests/snapshots/workspace-edit', 'acp-agent/tests/snapshots/parallel-tool-calls', 'acp-agent/tests/snapshots/cancel',
  'acp-agent/tests/snapshots/error-finish', 'acp-agent/tests/snapshots/empty-response-retry', 'acp-agent/tests/snapshots/max-tokens-continue',
  'acp-agent/tests/snapshots/fs-read', 'acp-agent/tests/snapshots/fs-write', 'acp-agent/tests/snapshots/fs-write-overwrite',
  'acp-agent/tests/snapshots/fs-policy-reject', 'jsonrpc-agent/tests/snapshots/text-turn',
  'headless-agent/tests/semantic-checkpoint-snapshots/tool-outcome-unknown', 'headless-agent/tests/snapshots/compaction-recovery',
]

describe('replay suite projection', () => {
  const ev = (type: string, data: unknown, extra: Partial<SessionEvent> = {}): SessionEvent => ({ type, seq: 0, time: 0, data, ...extra }) as SessionEvent
  it('masks ids, wording and product events but keeps what the loop decides', () => {
    const a = project([
      ev('session/title', { title: 'x' }),
      ev('tool/result', { turn: 1, step: 1, message: { id: 'a', content: [{ type: 'tool-result', toolCallId: 'c', isError: false, content: [{ type: 'text', text: 'one wording' }] }] } }, { surfaceOp: 'append' }),
    ])
    const b = project([
      ev('tool/result', { turn: 1, step: 1, message: { id: 'b', content: [{ type: 'tool-result', toolCallId: 'c', isError: false, content: [{ type: 'text', text: 'another' }] }] } }, { surfaceOp: 'append' }),
    ])
    expect(a).toEqual(b)
    const failed = project([
      ev('tool/result', { turn: 1, step: 1, message: { id: 'b', content: [{ type: 'tool-result', toolCallId: 'c', isError: true, content: [] }] } }, { surfaceOp: 'append' }),
    ])
    expect(failed).not.toEqual(b)
    expect(project([ev('turn/end', { turn: 1, reason: { kind: 'completed' } })])).not.toEqual(project([ev('turn/end', { turn: 1, reason: { kind: 'max-tokens' } })]))
  })
})

describe.skipIf(!existsSync(corpus))('replay conformance over the recorded corpus', () => {
  it('replays every CORE scenario dsh implements; the rest are skipped naming the missing capability', async () => {
    const results: ConformanceResult[] = []
    for await (const result of replaySuite().run([resolve(corpus, 'examples')])) results.push(result)
    const failures = results.filter(r => r.status === 'fail').map(r => `${r.path}: ${r.detail}`)
    expect(failures).toEqual([])
    for (const scenario of MUST_PASS) {
      const result = results.find(r => r.path.endsWith(scenario))
      expect(result?.status, scenario).toBe('pass')
    }
    for (const skipped of results.filter(r => r.status === 'skip')) expect(skipped.detail).toMatch(/capability|no recorded turn/)
    expect(results.find(r => r.path.endsWith('packed-chunks'))?.detail).toMatch(/hooks/)
  }, 120_000)
})
