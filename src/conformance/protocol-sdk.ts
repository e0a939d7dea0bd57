/**
 * The SDK lane of the protocol suite: drives `dsh --profile sdk` through the client and compares
 * its notifications and result with `notifications.expected.jsonl` and `result.expected.json`.
 */
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import type { UserMessage } from '../llm/types.js'
import type { SessionEvent } from '../session/types.js'
import { DshClient, type Notification } from '../sdk/client.js'
import { isRuntimeContextSnapshot } from './replay-project.js'
import { type Scenario, type Plan } from './protocol-plan.js'
import { dshCommand, type Run, readJsonLines, placeholders, firstDifference, isRecord } from './protocol-process.js'

export async function runSdk(scenario: Scenario, plan: Plan, run: Run): Promise<string | undefined> {
  const prompt = plan.events.find(event => event.type === 'agent/inbox/spliced')
  const first = (prompt?.data as { inserted?: UserMessage[] } | undefined)?.inserted?.[0]
  if (first === undefined) return 'the recorded log has no prompt'
  const client = await DshClient.start({
    command: [...dshCommand(), '--profile', 'sdk', '--patch', run.patch] as [string, ...string[]],
    cwd: run.cwd,
    env: run.env,
    initialize: { cwd: run.cwd, provider: plan.route.provider, model: plan.route.model },
  })
  let result
  try {
    result = await client.run(first.content, { sessionId: plan.header.id })
  } finally {
    const closed = await client.close()
    if (closed.via !== 'eof' || closed.code !== 0) throw new Error(`dsh --profile sdk did not exit cleanly on EOF (${closed.via}, code ${closed.code}): ${client.stderr.trim().split('\n').slice(-3).join(' | ')}`)
  }
  const known = { sessionId: plan.header.id, cwd: run.cwd }
  const expected = readJsonLines(join(scenario.dir, 'notifications.expected.jsonl'))
  // Titles are dropped per session: by the live session id here, by seq continuity in the recording (ids are placeholders there).
  const actual = withoutTitles(result.notifications.map(normaliseNotification), byParamsSession).map(n => maskSdk(placeholders(n, known)))
  const difference = firstDifference(withoutTitles(expected.map(maskSdk), bySeqContinuity()), actual)
  if (difference !== undefined) return `notifications: ${difference}`
  const expectedResult = JSON.parse(readFileSync(join(scenario.dir, 'result.expected.json'), 'utf8')) as unknown
  const actualResult = placeholders({ sessionId: result.sessionId, finalResponse: result.finalResponse }, known)
  const resultDifference = firstDifference([expectedResult], [actualResult])
  return resultDifference === undefined ? undefined : `result: ${resultDifference}`
}

/** The recorded notifications are `{method, params}` with event times 0. */
function normaliseNotification(notification: Notification): unknown {
  if (notification.method !== 'session.event') return { method: notification.method, params: notification.params }
  const event = notification.params.event as SessionEvent
  return { method: notification.method, params: { ...notification.params, event: { ...event, time: 0 } } }
}

/**
 * Product text and product-owned fields: the request header's system prompt and tool schemas
 * (placeholders in the recording), the header config beyond the route, and the context window
 * of `request/context` (a catalogue detail: the replay catalogue entry has one, the original's
 * route reported none), and `tool/result.meta` (an additive dsh field the original never wrote).
 */
export function maskSdk(value: unknown): unknown {
  const n = value as { method?: string; params?: { event?: SessionEvent } }
  const event = n.params?.event
  if (event === undefined) return value
  if (event.type === 'tool/result' && isRecord(event.data) && 'meta' in event.data) {
    // `tool/result.meta` (structured data for UIs: exit codes, diffs, counts) is a documented
    // additive extension of dsh: masked for every tool, never per scenario.
    const { meta: _meta, ...data } = event.data
    return { ...n, params: { ...n.params, event: { ...event, data } } }
  }
  if (event.type === 'user/message' && isRuntimeContextSnapshot(event.data as UserMessage)) {
    // The snapshot's wording and plugin name are product text; its sections (what the runtime
    // tells the model: here a child's `subagent:delegation`) are compared.
    const message = event.data as UserMessage & { source: { sections?: { name: string; text: string }[] } }
    const masked = { ...message, content: '{{runtimeContext}}', source: { kind: message.source.kind, sections: message.source.sections?.map(section => ({ name: section.name, text: section.text })) } }
    return { ...n, params: { ...n.params, event: { ...event, data: masked } } }
  }
  if (event.type === 'request/header') {
    const data = event.data as { header: { config: { provider: string; model: string } }; reason: string }
    const masked = { ...data, header: { config: { provider: data.header.config.provider, model: data.header.config.model }, system: '{{system}}', tools: '{{tools}}' } }
    return { ...n, params: { ...n.params, event: { ...event, data: masked } } }
  }
  if (event.type === 'request/context') {
    const { contextWindow: _window, ...data } = event.data as { contextWindow?: number }
    return { ...n, params: { ...n.params, event: { ...event, data } } }
  }
  return value
}

/**
 * Drops `session/title` events and renumbers the remaining seqs (and `sourceEventSeqs`) to stay
 * contiguous: the title is product text, and our title plugin appends it one microtask after the
 * prompt (after `request/header`), where the original appended it before.
 */
export function withoutTitles(notifications: readonly unknown[], sessionOf: (n: SessionNotification) => string = () => ''): unknown[] {
  const all = notifications as SessionNotification[]
  const keys = all.map(n => (n.params.event !== undefined ? sessionOf(n) : ''))
  const kept = all.map((n, i) => [n, keys[i]!] as const).filter(([n]) => n.params.event?.type !== 'session/title')
  // Per session (a delegating run interleaves its children's events): old seq -> new seq.
  const seqs = new Map<string, Map<number, number>>()
  for (const [n, key] of kept) {
    if (n.params.event === undefined) continue
    const own = seqs.get(key) ?? new Map<number, number>()
    seqs.set(key, own)
    own.set(n.params.event.seq, own.size)
  }
  return kept.map(([n, key]) => {
    const event = n.params.event
    if (event === undefined) return n
    const own = seqs.get(key)!
    const renumbered = { ...event, seq: own.get(event.seq)! }
    if (event.sourceEventSeqs !== undefined) renumbered.sourceEventSeqs = event.sourceEventSeqs.map(seq => own.get(seq) ?? -1)
    return { ...n, params: { ...n.params, event: renumbered } }
  })
}

type SessionNotification = { method: string; params: { sessionId?: string; event?: SessionEvent & { sourceEventSeqs?: number[] } } }

/** The live run: events carry their session's own id. */
function byParamsSession(n: SessionNotification): string {
  return n.params.sessionId ?? ''
}

/**
 * The recording (every id is a placeholder): an event belongs to the session whose next seq it
 * is; a seq-0 event opens a new session's stream (a child starts at 0). Each session's seqs are
 * contiguous, so this assigns every event of a run whose sessions are at different positions.
 */
function bySeqContinuity(): (n: SessionNotification) => string {
  const next: number[] = []
  return (n) => {
    const seq = n.params.event!.seq
    let stream = seq === 0 ? -1 : next.lastIndexOf(seq)
    if (stream < 0) {
      stream = next.length
      next.push(0)
    }
    next[stream] = seq + 1
    return String(stream)
  }
}

// ---- comparison ----
