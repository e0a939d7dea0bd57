import { existsSync } from 'node:fs'
import { dirname, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { HOOK_SCENARIOS, SKILL_SCENARIOS } from '../../test-support/conformance-scenarios.js'
import { describe, expect, it } from 'vitest'
import { floatAnswers, maskSdk, normaliseAcp, protocolSuite } from './protocol-suite.js'
import type { ConformanceResult } from './types.js'

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '../..')
const examples = resolve(repoRoot, '../shared/fixtures/dsh/examples')

describe('protocol suite normalisation (INDEX.md)', () => {
  it('renumbers answer ids and agent-request ids apart, in first-seen order, and replaces session id, cwd and UUIDs', () => {
    const frames = [
      { jsonrpc: '2.0', id: 0, result: { protocolVersion: 1 } },
      { jsonrpc: '2.0', id: 1, result: { sessionId: 'sess-1' } },
      { jsonrpc: '2.0', id: 0, method: 'session/request_permission', params: { sessionId: 'sess-1', toolCall: { toolCallId: 'c' } } },
      { jsonrpc: '2.0', method: 'session/update', params: { sessionId: 'sess-1', update: { text: 'in /work/x/file and 0b7e2a06-9f9b-4248-b7df-0b7e2a069c0a' } } },
      { jsonrpc: '2.0', id: 2, result: { stopReason: 'end_turn' } },
    ]
    expect(normaliseAcp(frames, { sessionId: 'sess-1', cwd: '/work/x' })).toEqual([
      { jsonrpc: '2.0', id: 1, result: { protocolVersion: 1 } },
      { jsonrpc: '2.0', id: 2, result: { sessionId: '{{sessionId}}' } },
      { jsonrpc: '2.0', id: 1, method: 'session/request_permission', params: { sessionId: '{{sessionId}}', toolCall: { toolCallId: 'c' } } },
      { jsonrpc: '2.0', method: 'session/update', params: { sessionId: '{{sessionId}}', update: { text: 'in {{cwd}}/file and {{sessionId}}' } } },
      { jsonrpc: '2.0', id: 3, result: { stopReason: 'end_turn' } },
    ])
  })
})

describe('answers to prompts the driver did not wait for', () => {
  it('are compared just before the next non-update frame: a report or notice racing the first idle does not decide the comparison', () => {
    const update = (text: string) => ({ method: 'session/update', params: { update: { text } } })
    const answer = (id: number) => ({ id, result: { stopReason: 'end_turn' } })
    const early = [answer(2), update('STARTED'), answer(3), update('SETTLED'), update('CHILD'), answer(4)]
    const late = [answer(2), update('STARTED'), update('SETTLED'), answer(3), update('CHILD'), answer(4)]
    expect(floatAnswers(early, new Set([3]))).toEqual(floatAnswers(late, new Set([3])))
    expect(floatAnswers(early, new Set([3]))).toEqual([answer(2), update('STARTED'), update('SETTLED'), update('CHILD'), answer(3), answer(4)])
    // Awaited answers keep their place; a floating answer never moves past another answer.
    expect(floatAnswers(early, new Set())).toEqual(early)
    expect(floatAnswers(late, new Set([2]))).toEqual([update('STARTED'), update('SETTLED'), answer(2), answer(3), update('CHILD'), answer(4)])
  })
})

if (!existsSync(examples)) console.warn('skipping: ../shared/fixtures/dsh absent')
describe.skipIf(!existsSync(examples))('PRODUCT scenarios whose capability dsh has', () => {
  it('the todo-write ACP transcript is run (not skipped by class) and passes', async () => {
    const results: ConformanceResult[] = []
    for await (const result of protocolSuite({ filter: 'snapshots/todo-write' }).run([resolve(examples, 'acp-agent')])) results.push(result)
    expect(results.map(result => [result.status, result.detail])).toEqual([['pass', undefined]])
  }, 60_000)

  it('the session-query-spill ACP transcript is run with session_event_read (not skipped) and passes', async () => {
    const results: ConformanceResult[] = []
    for await (const result of protocolSuite({ filter: 'snapshots/session-query-spill' }).run([resolve(examples, 'acp-agent')])) results.push(result)
    expect(results.map(result => [result.status, result.detail])).toEqual([['pass', undefined]])
  }, 60_000)

  it('the cordis-inspect-jsdoc ACP transcript is run with the cordis row on (DSH_CORDIS_TOOLS=1) and passes', async () => {
    const results: ConformanceResult[] = []
    for await (const result of protocolSuite({ filter: 'snapshots/cordis-inspect-jsdoc' }).run([resolve(examples, 'acp-agent')])) results.push(result)
    expect(results.map(result => [result.status, result.detail])).toEqual([['pass', undefined]])
  }, 60_000)

  it('the product-subagent transcripts are run with the product rows (a stand-in CLI for the recorded calls) and pass', async () => {
    const results: ConformanceResult[] = []
    for await (const result of protocolSuite({ filter: 'snapshots/product-subagent-' }).run([resolve(examples, 'acp-agent')])) results.push(result)
    expect(results.map(result => [result.status, result.detail])).toEqual([['pass', undefined], ['pass', undefined]])
  }, 120_000)

  it('the web-fetch ACP transcript is run against a local page server (not skipped) and passes', async () => {
    const results: ConformanceResult[] = []
    for await (const result of protocolSuite({ filter: 'snapshots/web-fetch' }).run([resolve(examples, 'acp-agent')])) results.push(result)
    expect(results.map(result => [result.status, result.detail])).toEqual([['pass', undefined]])
  }, 60_000)
})

describe.skipIf(!existsSync(examples))('headless stream-json scenarios recorded without a session log', () => {
  it('goal-tools (GL-1 fillers, GOAL_NOT_FOUND, create and get; no automatic round in a headless run) is run from input.json and replay.override.json and passes', async () => {
    const results: ConformanceResult[] = []
    for await (const result of protocolSuite({ filter: 'snapshots/goal-tools' }).run([resolve(examples, 'headless-agent')])) results.push(result)
    expect(results.map(result => [result.status, result.path.split(/[\\/]/).slice(-2).join('/'), result.detail])).toEqual([['pass', 'goal-tools/stream-json.expected.jsonl', undefined]])
  }, 60_000)
  it('ralph-loop (a header-only parent log; the rounds\' scripts in session.N.jsonl) runs the real ralph tool over two children and passes', async () => {
    const results: ConformanceResult[] = []
    for await (const result of protocolSuite({ filter: 'snapshots/ralph-loop' }).run([resolve(examples, 'headless-agent')])) results.push(result)
    expect(results.map(result => [result.status, result.detail])).toEqual([['pass', undefined]])
  }, 60_000)
})

describe.skipIf(!existsSync(examples))('protocol suite over the recorded ACP and SDK transcripts', () => {
  it('the CORE ACP scenarios and the SDK text turn pass; nothing fails; every skip names a reason', async () => {
    const results: ConformanceResult[] = []
    for await (const result of protocolSuite().run([resolve(examples, 'acp-agent'), resolve(examples, 'jsonrpc-agent')])) results.push(result)
    const failed = results.filter(result => result.status === 'fail')
    expect(failed).toEqual([])
    const passed = results.filter(result => result.status === 'pass').map(result => result.path.split(/[\\/]/).slice(-5, -1).join('/'))
    const hooks = [...HOOK_SCENARIOS, ...SKILL_SCENARIOS, 'hook-cc-promptsubmit-block', 'hook-codex-promptsubmit-block', 'todo-write'].map(name => `acp-agent/tests/snapshots/${name}`)
    for (const name of [...hooks, 'acp-agent/tests/snapshots/text-turn', 'acp-agent/tests/snapshots/cancel', 'acp-agent/tests/snapshots/error-finish', 'acp-agent/tests/snapshots/handshake', 'jsonrpc-agent/tests/snapshots/text-turn',
      // AP-4: the recorded session/request_permission frames; SB-1 root; SB-3 partial Landlock.
      'acp-agent/tests/snapshots/escalation-approved', 'acp-agent/tests/snapshots/fs-escalation-approved',
      'acp-agent/tests/snapshots/session-sandbox-root', 'acp-agent/tests/snapshots/partial-landlock-child-failure',
      // SA-8..SA-12 over the process boundary: the settlement and report driver ops.
      'acp-agent/tests/snapshots/subagent-report', 'acp-agent/tests/snapshots/subagent-continuable', 'acp-agent/tests/snapshots/subagent-continuable-inheritance',
      'acp-agent/tests/snapshots/subagent-child-question-rejection', 'jsonrpc-agent/tests/snapshots/subagent-spawn-in-process',
      // GL-2 GL-3 over ACP; the override-only headless stream.
      'acp-agent/tests/goal-snapshots/goal-round-driver',
      // Code mode (DSH_TOOLS_MODE=code): inner bash calls, an inner read_image, an inner read reaching a nested AGENTS.md.
      'acp-agent/tests/snapshots/code-mode-turn', 'acp-agent/tests/snapshots/code-mode-read-image', 'acp-agent/tests/snapshots/code-mode-workspace-context',
      // Self-extension (DSH_CORDIS_TOOLS=1): cordis_inspect_query in the dsh process.
      'acp-agent/tests/snapshots/cordis-inspect-jsdoc',
      // cordis, run_code, a subagent and a workflow in one turn.
      'acp-agent/tests/snapshots/advanced-toolchain',
      // The SDK's persistent-tools composition (the shell's `exit` line as recorded).
      'jsonrpc-agent/tests/snapshots/persistent-tools']) {
      expect(passed).toContain(name)
    }
    expect(results.filter(result => result.status === 'skip').every(result => (result.detail ?? '') !== '')).toBe(true)
  }, 480_000)
})

describe('SDK transcript masking', () => {
  const note = (data: object) => ({ method: 'session.event', params: { sessionId: 's', event: { type: 'tool/result', seq: 5, time: 0, data } } })
  const base = { turn: 1, step: 1, message: { id: 'r', role: 'user', source: { kind: 'tool', callId: 'c' }, content: [{ type: 'tool-result', toolCallId: 'c', isError: false, content: [{ type: 'text', text: 'x\n' }] }] } }

  it('tool/result.meta is an additive extension masked by rule for every tool, while the rest of the result still counts', () => {
    const recorded = maskSdk(note(base))
    for (const meta of [{ exitCode: 0, durationMs: 12 }, { path: '/tmp/a', totalLines: 3 }, {}]) {
      expect(maskSdk(note({ ...base, meta }))).toEqual(recorded)
    }
    const failed = { ...base, message: { ...base.message, content: [{ ...base.message.content[0]!, isError: true }] } }
    expect(maskSdk(note({ ...failed, meta: { exitCode: 1 } }))).not.toEqual(recorded)
  })
})
