import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { HOOK_SCENARIOS, SKILL_SCENARIOS } from '../../test-support/conformance-scenarios.js'
import { describe, expect, it } from 'vitest'
import type { SessionEvent } from '../session/types.js'
import { project, replaySuite } from './replay-suite.js'
import type { ConformanceResult } from './types.js'

const repoRoot = resolve(import.meta.dirname, '../..')
const corpus = resolve(repoRoot, '../shared/fixtures/dsh')
if (!existsSync(corpus)) console.warn('skipping the replay conformance run: ../shared/fixtures/dsh absent')

/** The CORE scenarios that use only bash/read/write/edit/glob/grep and must replay exactly. */

const MUST_PASS = [
  // DELEGATION (SA-*): parent and child logs replayed.
  ...['spawn-in-process', 'parallel', 'fork-in-process', 'max-tokens-partial', 'depth-two-rejection', 'published-run-failure',
    'report', 'continuable-inheritance', 'continuable', 'child-question-rejection'].map(name => `acp-agent/tests/snapshots/subagent-${name}`),
  // GL-1..GL-3: the round driver with a cancelled round (session.expected.jsonl compared).
  'acp-agent/tests/goal-snapshots/goal-round-driver',
  'jsonrpc-agent/tests/snapshots/subagent-spawn-in-process',
  'acp-agent/tests/snapshots/text-turn', 'acp-agent/tests/snapshots/tool-call-turn', 'acp-agent/tests/snapshots/bash-tool-turn',
  'acp-agent/tests/snapshots/workspace-edit', 'acp-agent/tests/snapshots/parallel-tool-calls', 'acp-agent/tests/snapshots/cancel',
  'acp-agent/tests/snapshots/error-finish', 'acp-agent/tests/snapshots/empty-response-retry', 'acp-agent/tests/snapshots/max-tokens-continue',
  'acp-agent/tests/snapshots/fs-read', 'acp-agent/tests/snapshots/fs-write', 'acp-agent/tests/snapshots/fs-write-overwrite',
  'acp-agent/tests/snapshots/fs-policy-reject', 'jsonrpc-agent/tests/snapshots/text-turn',
  'headless-agent/tests/semantic-checkpoint-snapshots/tool-outcome-unknown', 'headless-agent/tests/snapshots/compaction-recovery',
  // HK-1..HK-9: the hook scenarios (and the packed-chunk recording of one).
  ...[...HOOK_SCENARIOS, ...SKILL_SCENARIOS, 'todo-write'].map(name => `acp-agent/tests/snapshots/${name}`),
  // Approvals and the sandbox (AP-1..AP-4, SB-1..SB-5): knob sections byte-exact, approval events compared.
  'acp-agent/tests/snapshots/escalation-approved', 'acp-agent/tests/snapshots/fs-escalation-approved',
  'acp-agent/tests/snapshots/session-sandbox-root', 'acp-agent/tests/snapshots/partial-landlock-child-failure',
  // Self-extension: cordis_inspect_query over the host providers.
  'acp-agent/tests/snapshots/cordis-inspect-jsdoc',
  // The SDK's persistent-tools composition: persistent bash and str_replace_editor ({{cwd}} in the recorded arguments).
  'jsonrpc-agent/tests/snapshots/persistent-tools',
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

/** A tiny recorded scenario of our own: one prompt, one text reply. */
function scenario(root: string, name: string, tweak: (lines: object[]) => object[] = (l) => l): void {
  const dir = join(root, 'examples', name)
  mkdirSync(dir, { recursive: true })
  const prompt = { id: 'p1', role: 'user', content: [{ type: 'text', text: 'say hi' }], source: { kind: 'user' } }
  const chunk = (c: object) => ({ type: 'assistant/chunk', data: { turn: 1, step: 1, chunk: c } })
  const lines: object[] = [
    { type: 'agent/inbox/spliced', data: { target: 'next-turn', start: 0, inserted: [prompt] } },
    { type: 'turn/start', data: { turn: 1 } },
    { type: 'agent/inbox/spliced', data: { target: 'next-turn', start: 0, removedCount: 1, inserted: [] } },
    { type: 'step/start', data: { turn: 1, step: 1 } },
    { type: 'user/message', data: prompt, surfaceOp: 'append' },
    { type: 'request/header', data: { header: { config: { provider: 'rec', model: 'm' }, system: '', tools: [] }, reason: 'initial' } },
    { type: 'request/context', data: { provider: 'rec', model: 'm' } },
    chunk({ type: 'text-delta', index: 0, text: 'hi' }),
    chunk({ type: 'finish', reason: { kind: 'stop' } }),
    { type: 'assistant/message', data: { turn: 1, step: 1, message: { id: 'a', role: 'assistant', content: [{ type: 'text', text: 'hi' }], source: { kind: 'model', provider: 'rec', model: 'm' } } }, sourceEventSeqs: [7, 8], surfaceOp: 'append' },
    { type: 'step/end', data: { turn: 1, step: 1 } },
    { type: 'turn/end', data: { turn: 1, reason: { kind: 'completed' } } },
  ]
  const header = { type: 'session', version: 0, id: name, createdAt: 0, delegationDepth: 0 }
  writeFileSync(join(dir, 'session.jsonl'), [header, ...tweak(lines)].map(line => JSON.stringify(line)).join('\n') + '\n')
}

describe('replay suite on scenarios of our own', () => {
  it('passes a faithful recording, prints the first difference of a tampered one, and skips a missing tool', async () => {
    const root = mkdtempSync(join(tmpdir(), 'dsh-replay-test-'))
    try {
      scenario(root, 'faithful')
      scenario(root, 'tampered', lines => lines.map(line => (line as { type: string }).type === 'turn/end' ? { type: 'turn/end', data: { turn: 1, reason: { kind: 'max-tokens' } } } : line))
      scenario(root, 'needs-tool', lines => [...lines.slice(0, 10), { type: 'tool/call', data: { turn: 1, step: 1, callId: 'c', name: 'teleport', arguments: '{}' } }, ...lines.slice(10)])
      const results: ConformanceResult[] = []
      for await (const result of replaySuite().run([root])) results.push(result)
      const by = (name: string) => results.find(r => r.path.endsWith(name))!
      expect(by('faithful').status).toBe('pass')
      expect(by('tampered').status).toBe('fail')
      expect(by('tampered').detail).toMatch(/^first difference at projected event \d+: recorded \{"type":"turn\/end".*"max-tokens".*replayed \{"type":"turn\/end".*"completed"/)
      expect(by('needs-tool')).toMatchObject({ status: 'skip', detail: 'missing capability: tool teleport' })
    } finally {
      rmSync(root, { recursive: true, force: true })
    }
  })
})

/** A turn cancelled while its tools run: one bash body started (it writes the cancel file), a later exclusive call not dispatched. */
function cancelDuringTools(root: string): void {
  const dir = join(root, 'examples', 'cancel-during-tools')
  mkdirSync(dir, { recursive: true })
  const prompt = { id: 'p1', role: 'user', content: [{ type: 'text', text: 'run two commands' }], source: { kind: 'user' } }
  const calls = [
    { type: 'tool-call', id: 'c1', name: 'bash', arguments: JSON.stringify({ command: 'touch .cancel-ready && sleep 30', description: 'wait' }) },
    { type: 'tool-call', id: 'c2', name: 'bash', arguments: JSON.stringify({ command: 'echo never', description: 'later' }) },
  ]
  const chunk = (c: object) => ({ type: 'assistant/chunk', data: { turn: 1, step: 1, chunk: c } })
  const result = (callId: string, code: string, name: string) => ({
    type: 'tool/result', surfaceOp: 'append',
    data: { turn: 1, step: 1, error: { name, code }, message: { id: `r-${callId}`, role: 'user', source: { kind: 'tool', callId }, content: [{ type: 'tool-result', toolCallId: callId, isError: true, content: [{ type: 'text', text: 'Error: aborted' }] }] } },
  })
  const lines: object[] = [
    { type: 'agent/inbox/spliced', data: { target: 'next-turn', start: 0, inserted: [prompt] } },
    { type: 'turn/start', data: { turn: 1 } },
    { type: 'agent/inbox/spliced', data: { target: 'next-turn', start: 0, removedCount: 1, inserted: [] } },
    { type: 'step/start', data: { turn: 1, step: 1 } },
    { type: 'user/message', data: prompt, surfaceOp: 'append' },
    { type: 'request/header', data: { header: { config: { provider: 'rec', model: 'm' }, system: '', tools: [] }, reason: 'initial' } },
    { type: 'request/context', data: { provider: 'rec', model: 'm' } },
    ...calls.map((call, index) => chunk({ type: 'block-end', index, block: call })),
    chunk({ type: 'finish', reason: { kind: 'tool-calls' } }),
    { type: 'assistant/message', data: { turn: 1, step: 1, message: { id: 'a', role: 'assistant', content: calls, source: { kind: 'model', provider: 'rec', model: 'm' } } }, sourceEventSeqs: [7, 8, 9], surfaceOp: 'append' },
    { type: 'tool/call', data: { turn: 1, step: 1, callId: 'c1', name: 'bash', arguments: calls[0]!.arguments } },
    { ...result('c1', 'ABORTED', 'BashError'), sourceEventSeqs: [11] },
    { type: 'tool/call', data: { turn: 1, step: 1, callId: 'c2', name: 'bash', arguments: calls[1]!.arguments } },
    { ...result('c2', 'ABORTED_BEFORE_DISPATCH', 'AbortError'), sourceEventSeqs: [13] },
    { type: 'step/end', data: { turn: 1, step: 1 } },
    { type: 'turn/end', data: { turn: 1, reason: { kind: 'aborted', reason: { kind: 'user' } } } },
  ]
  const header = { type: 'session', version: 0, id: 'cancel-during-tools', createdAt: 0, delegationDepth: 0 }
  writeFileSync(join(dir, 'session.jsonl'), [header, ...lines].map(line => JSON.stringify(line)).join('\n') + '\n')
  writeFileSync(join(dir, 'input.json'), JSON.stringify({ steps: [
    { op: 'initialize' }, { op: 'newSession' },
    { op: 'promptAndCancel', text: 'run two commands', waitForFile: { path: '.cancel-ready' } },
    { op: 'waitForTurnEnd' },
  ] }))
}

describe('replay suite cancel points', () => {
  it('A-9/T-6: a turn recorded as cancelled while a tool ran is cancelled when the tool writes the waitForFile', async () => {
    const root = mkdtempSync(join(tmpdir(), 'dsh-replay-cancel-'))
    try {
      cancelDuringTools(root)
      const results: ConformanceResult[] = []
      for await (const result of replaySuite().run([root])) results.push(result)
      expect(results.map(r => [r.status, r.detail])).toEqual([['pass', undefined]])
    } finally {
      rmSync(root, { recursive: true, force: true })
    }
  }, 30_000)
})

describe.skipIf(!existsSync(corpus))('PRODUCT scenarios whose capability dsh has (item 18)', () => {
  const one = async (name: string, root = 'examples/acp-agent') => {
    const results: ConformanceResult[] = []
    for await (const result of replaySuite({ filter: `snapshots/${name}` }).run([resolve(corpus, root)])) results.push(result)
    return results.map(result => [result.status, result.detail])
  }
  it('Y-1: agent-instructions (baseline, symlinked files, nested files after a read, a delimiter in the path, a baseline again after compaction) is replayed and passes', async () => {
    expect(await one('agent-instructions')).toEqual([['pass', undefined]])
  }, 60_000)
  it('code mode: a program\'s inner calls (tool/code-dispatch*), the image a read_image inner call returned and the nested AGENTS.md an inner read reached replay exactly', async () => {
    for (const name of ['code-mode-turn', 'code-mode-read-image', 'code-mode-workspace-context']) {
      expect([name, ...await one(name)]).toEqual([name, ['pass', undefined]])
    }
  }, 120_000)
  it('the packaged Python SDK\'s advanced run (a plugin tool the model defined, called from run_code; a foreground child; a workflow child; undefine) replays and passes', async () => {
    const results: ConformanceResult[] = []
    for await (const result of replaySuite({ filter: 'python-sdk-single-exe/advanced' }).run([resolve(corpus, 'scripts')])) results.push(result)
    expect(results.map(result => [result.status, result.detail])).toEqual([['pass', undefined]])
  }, 60_000)
  it('ralph-loop (two fresh rounds, continue then complete, from the children\'s recorded scripts) is replayed from its stream and passes', async () => {
    expect(await one('ralph-loop', 'examples/headless-agent')).toEqual([['pass', undefined]])
  }, 60_000)
  it('self-extension: cordis-inspect-jsdoc (two cordis_inspect_query calls) and advanced-toolchain (cordis, run_code, a subagent and a workflow) replay and pass', async () => {
    expect(await one('cordis-inspect-jsdoc')).toEqual([['pass', undefined]])
    expect(await one('advanced-toolchain')).toEqual([['pass', undefined]])
  }, 60_000)
  it('Y-1: offline-edit (AGENTS.md edited while the session was closed) is replayed: the resumed turn records the replacement, not a second baseline', async () => {
    expect(await one('offline-edit', 'examples/headless-agent')).toEqual([['pass', undefined]])
  }, 60_000)

  it('web-fetch is replayed against a local page server (not skipped) and passes', async () => {
    expect(await one('web-fetch')).toEqual([['pass', undefined]])
  }, 60_000)

  it('session-query-spill is replayed with session_event_read (not skipped) and passes', async () => {
    expect(await one('session-query-spill')).toEqual([['pass', undefined]])
  }, 60_000)

  it('product subagents: product-subagent-codex (two named Codex tools) and product-subagent-result-diagnostic (failed foreground and background runs, notices, job_output) replay and pass', async () => {
    expect(await one('product-subagent-codex')).toEqual([['pass', undefined]])
    expect(await one('product-subagent-result-diagnostic')).toEqual([['pass', undefined]])
  }, 60_000)
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
    for (const skipped of results.filter(r => r.status === 'skip')) expect(skipped.detail).toMatch(/capability|no recorded turn|^pwsh is not installed here/)
    for (const skipped of results.filter(r => r.status === 'skip')) expect(skipped.detail).not.toMatch(/hook/)
  }, 120_000)
})

describe('replay projection rules', () => {
  const ev = (type: string, data: unknown): SessionEvent => ({ type, seq: 0, time: 0, data }) as SessionEvent
  const prompt = { id: 'p', role: 'user', content: [{ type: 'text', text: 'x' }], source: { kind: 'user' } }
  it('A-3: input returned to the inbox before a turn/end error (a failed pre-step) is masked by rule; other splices still count', () => {
    const lost = [ev('turn/start', { turn: 1 }), ev('agent/inbox/spliced', { target: 'next-turn', start: 0, removedCount: 1, inserted: [] }), ev('turn/end', { turn: 1, reason: { kind: 'error', error: { code: 'X', message: 'm' } } })]
    const kept = [...lost.slice(0, 2), ev('agent/inbox/spliced', { target: 'next-turn', start: 0, inserted: [prompt] }), lost[2]!]
    expect(project(kept)).toEqual(project(lost))
    const completed = (events: SessionEvent[]) => events.map(e => e.type === 'turn/end' ? ev('turn/end', { turn: 1, reason: { kind: 'completed' } }) : e)
    expect(project(completed(kept))).not.toEqual(project(completed(lost)))
  })
})
