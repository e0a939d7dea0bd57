/**
 * The headless lane of the protocol suite: runs a recorded override-driven headless task and
 * compares its stream-json lines with `stream-json.expected.jsonl`.
 */
import { spawn } from 'node:child_process'
import { readdirSync, readFileSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { applyOverride, scriptFromEvents, type ReplayEntry } from '../replay/index.js'
import type { UserMessage } from '../llm/types.js'
import { parseSessionFile } from '../session/codec.js'
import type { SessionEvent } from '../session/types.js'
import { isRuntimeContextSnapshot } from './replay-project.js'
import type { ConformanceResult } from './types.js'
import { BUILTIN_TOOLS } from './replay-rules.js'
import { fixtureCompactions } from './fixture-compaction.js'
import { type Scenario, type Step, type Plan } from './protocol-plan.js'
import { SUITE, scenarioFolders, dshCommand, writePatch, childEnv, readJsonLines, placeholders, firstDifference } from './protocol-process.js'
import { maskSdk, withoutTitles } from './protocol-sdk.js'

/**
 * A headless run recorded only as its `--output stream-json` stream (override-driven): the
 * replay script is `replay.override.json`, the task the one `prompt` of `input.json`, the route
 * the stream's first `request/header`; stdout is compared line by line, normalised like the SDK
 * notifications (ids and the cwd as placeholders, event times 0, titles dropped with seqs
 * renumbered, the request header's product text and `tool/result.meta` masked, goal times 0).
 */
export async function runHeadlessScenario(scenario: Scenario, path: string): Promise<ConformanceResult> {
  const dir = scenario.dir
  let steps: Step[]
  let expected: Record<string, unknown>[]
  let script: ReplayEntry[]
  try {
    steps = (JSON.parse(readFileSync(join(dir, 'input.json'), 'utf8')) as { steps: Step[] }).steps
    expected = readJsonLines(join(dir, 'stream-json.expected.jsonl')) as Record<string, unknown>[]
    script = applyOverride([], JSON.parse(readFileSync(join(dir, 'replay.override.json'), 'utf8')))
  } catch (error) {
    return { suite: SUITE, status: 'fail', path, detail: `cannot read the scenario: ${error instanceof Error ? error.message : String(error)}` }
  }
  if (steps.length !== 1 || steps[0]!.op !== 'prompt' || typeof steps[0]!.text !== 'string') return { suite: SUITE, status: 'skip', path, detail: 'missing capability: a headless driver script other than one prompt' }
  const events = expected.filter(line => line.type === 'session_event').map(line => line.event as SessionEvent)
  const lacking = events.map(event => event.type === 'tool/call' ? (event.data as { name: string }).name : undefined).find(name => name !== undefined && !BUILTIN_TOOLS.has(name))
  if (lacking !== undefined) return { suite: SUITE, status: 'skip', path, detail: `missing capability: tool ${lacking}` }
  const header = events.find(event => event.type === 'request/header')?.data as { header: { config: { provider: string; model: string } } } | undefined
  const route = header?.header.config ?? { provider: 'replay', model: 'replay' }
  const runtimeContext = events.some(event => event.type === 'user/message' && isRuntimeContextSnapshot(event.data as UserMessage))
  // Children's model calls, in creation order, from their logs (session.N.jsonl).
  const children = readdirSync(dir).filter(name => /^session\.\d+\.jsonl$/.test(name))
    .sort((x, y) => Number(x.split('.')[1]) - Number(y.split('.')[1]))
    .map(file => {
      const child = parseSessionFile(readFileSync(join(dir, file), 'utf8'))
      return { id: child.header.id, script: scriptFromEvents(child.events) }
    })
  const { work, cwd, home } = scenarioFolders('dsh-headless-', dir)
  try {
    const plan = {
      events, header: { id: '' }, steps, permissionAnswers: [], script, route: { provider: route.provider, model: route.model }, runtimeContext,
      hooks: [], children, fenceChildren: false, fetched: [], fixtureCompactions: fixtureCompactions(events),
    } satisfies Plan
    const patch = writePatch(plan, work, 'headless')
    const [command, ...args] = dshCommand()
    const child = spawn(command, [...args, '--profile', 'headless', '--patch', patch, '--output', 'stream-json', '--', steps[0]!.text!], {
      cwd, env: childEnv({ DSH_HOME: home, DEEPSEEK_API_KEY: undefined, DEEPSEEK_BASE_URL: undefined, DSH_MODEL: undefined, DSH_NETWORK: 'full' }), stdio: ['ignore', 'pipe', 'pipe'],
    })
    let stdout = ''
    let stderr = ''
    child.stdout.setEncoding('utf8').on('data', (text: string) => { stdout += text })
    child.stderr.setEncoding('utf8').on('data', (text: string) => { stderr += text })
    const code = await new Promise<number | null>(resolve => child.on('close', resolve))
    const lines = stdout.split('\n').filter(line => line.trim() !== '').map(line => JSON.parse(line) as Record<string, unknown>)
    const sessionId = lines.find(line => typeof line.sessionId === 'string')?.sessionId as string | undefined
    if (code !== 0 && lines.length === 0) return { suite: SUITE, status: 'fail', path, detail: `dsh --profile headless exited ${code}: ${stderr.trim().split('\n').slice(-3).join(' | ')}` }
    const difference = firstDifference(normaliseStream(expected, { cwd: '{{cwd}}' }), normaliseStream(lines, { ...sessionId !== undefined && { sessionId }, cwd }))
    if (difference !== undefined) return { suite: SUITE, status: 'fail', path, detail: difference }
    return { suite: SUITE, status: 'pass', path }
  } catch (error) {
    return { suite: SUITE, status: 'fail', path, detail: error instanceof Error ? error.message : String(error) }
  } finally {
    rmSync(work, { recursive: true, force: true })
  }
}

/** Stream-json lines in the SDK notification shape, normalised and masked the same way, then back. */
function normaliseStream(lines: readonly Record<string, unknown>[], known: { sessionId?: string; cwd: string }): unknown[] {
  const wrapped = lines.map(line => line.type === 'session_event'
    ? { method: 'session.event', params: { sessionId: line.sessionId, event: goalTimes({ ...(line.event as SessionEvent), time: 0 }) } }
    : { method: String(line.type), params: line })
  return withoutTitles(wrapped.map(n => maskSdk(placeholders(n, known))))
}

/** `goal/change` times are placeholders (0) in the recordings. */
function goalTimes(event: SessionEvent): SessionEvent {
  if (event.type !== 'goal/change') return event
  const data = event.data as Record<string, unknown>
  return { ...event, data: { ...data, ...'createdAt' in data && { createdAt: 0 }, ...'updatedAt' in data && { updatedAt: 0 } } } as SessionEvent
}
