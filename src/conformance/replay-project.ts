/**
 * The replay suite's projection (./replay-suite.ts): what of a log is compared, event by event,
 * once ids, seq values, times, product wording and runtime-context snapshots are masked, and the
 * message classes the suite recognises (instructions, delegation, goals, skills, hooks, code mode,
 * compaction). docs/conformance.md, "Replay suite", says what is masked and why.
 */
import { TITLE_REQUEST_EVENT } from '../title/index.js'
import type { UserMessage } from '../llm/types.js'
import type { SessionEvent } from '../session/types.js'
import { RUNTIME_CONTEXT_PREFIX } from '../prompt/index.js'
import { APPROVAL_POLICY_CONTEXT, SANDBOX_POLICY_CONTEXT } from '../approval/index.js'
import { COMPACTION_PLUGINS, COMPARED, DELEGATION_SOURCES, HOOK_PLUGINS } from './replay-rules.js'
import { CODE_MODE_PLUGIN } from '../code-mode/index.js'
import { AGENT_INSTRUCTIONS_SOURCE, type InstructionsSource } from '../instructions/index.js'
import { isJobNotice, jobNoticeProjection } from './product-subagents.js'

/** The knob sections of a runtime-context snapshot, by name. */
const KNOB_SECTIONS = new Set([SANDBOX_POLICY_CONTEXT, APPROVAL_POLICY_CONTEXT])

export function snapshotSections(message: UserMessage): { name: string; text: string }[] {
  const sections = (message.source as { sections?: unknown }).sections
  return Array.isArray(sections) ? sections.filter((s): s is { name: string; text: string } => typeof s?.name === 'string' && typeof s?.text === 'string') : []
}

export function isInstructionsMessage(message: UserMessage): boolean {
  return (message.source.kind as string) === AGENT_INSTRUCTIONS_SOURCE
}

function instructionsSource(message: UserMessage): InstructionsSource {
  const source = message.source as unknown as InstructionsSource
  return { ...source, changes: Array.isArray(source.changes) ? source.changes : [] }
}

export function isDelegationMessage(message: UserMessage): boolean {
  return DELEGATION_SOURCES.has(message.source.kind)
}

const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/gi

function maskIds<T>(value: T): T {
  return JSON.parse(JSON.stringify(value).replace(UUID, '{{id}}')) as T
}

/** Goal rounds (`source.kind: goal`) and the completion notice (plugin `tool-goal`). */
export function isGoalMessage(message: UserMessage): boolean {
  const source = message.source as { kind: string; plugin?: string }
  return source.kind === 'goal' || (source.kind === 'plugin' && source.plugin === 'tool-goal')
}

/** Goal ids are random (`goal-<uuid>`; the ACP recording has placeholders): masked like every id. */
function maskGoalId(value: string): string {
  return value.startsWith('goal-') ? 'goal-{{id}}' : value
}

export function isSkillCatalog(message: UserMessage): boolean {
  return (message.source as { kind: string }).kind === 'skill-catalog'
}

export function isHookMessage(message: UserMessage): boolean {
  const source = message.source as { kind: string; plugin?: string }
  return source.kind === 'plugin' && source.plugin !== undefined && HOOK_PLUGINS.has(source.plugin)
}

/** Images a program's inner calls returned, joining the conversation (compared in full). */
export function isCodeModeMessage(message: UserMessage): boolean {
  const source = message.source as { kind: string; plugin?: string }
  return source.kind === 'plugin' && source.plugin === CODE_MODE_PLUGIN
}

export function isCompactionMessage(message: UserMessage): boolean {
  const source = message.source as { kind: string; plugin?: string }
  return source.kind === 'plugin' && source.plugin !== undefined && COMPACTION_PLUGINS.has(source.plugin)
}

/**
 * A runtime-context snapshot in a recorded log. Matched by its text alone: the recording runtime
 * may have named the plugin differently, so `isRuntimeContextMessage` (ours) is too strict here.
 */
export function isRuntimeContextSnapshot(message: UserMessage): boolean {
  const first = message.content[0]
  return first?.type === 'text' && first.text.startsWith(RUNTIME_CONTEXT_PREFIX)
}

/**
 * A deliberate divergence, masked by rule: when a turn fails before entering its claimed input
 * (`agent/pre-step` or prompt assembly threw), dsh puts that input back at the front of its
 * list (one or two pure-insert splices at 0) right before `turn/end {kind:'error'}`; the
 * original lost it. Those splices are left out of the projection.
 */
function isReturnOfClaimedInput(events: readonly SessionEvent[], index: number): boolean {
  let i = index
  while (i < events.length && isPureInsertAtFront(events[i]!)) i++
  if (i === index || i >= events.length) return false
  const end = events[i]!
  return end.type === 'turn/end' && (end.data as { reason?: { kind?: string } }).reason?.kind === 'error'
}

/**
 * The inbox route of an instructions message (masked by rule): the recording queued it on
 * next-step (a splice inserting only instructions messages, then its removal marked `canceled`
 * when the step took it); dsh adds it to the step directly. The message itself is compared.
 */
function isInstructionsRoute(events: readonly SessionEvent[], index: number): boolean {
  const event = events[index]!
  if (event.type !== 'agent/inbox/spliced') return false
  const onlyInstructions = (e: SessionEvent | undefined) => {
    const inserted = (e?.data as { inserted?: UserMessage[] } | undefined)?.inserted
    return e?.type === 'agent/inbox/spliced' && Array.isArray(inserted) && inserted.length > 0 && inserted.every(isInstructionsMessage)
  }
  if (onlyInstructions(event)) return true
  const data = event.data as { removedCount?: number; inserted: unknown[]; outcome?: string }
  return data.outcome === 'canceled' && data.inserted.length === 0 && onlyInstructions(events[index - 1])
}

function isPureInsertAtFront(event: SessionEvent): boolean {
  if (event.type !== 'agent/inbox/spliced') return false
  const data = event.data as { start: number; removedCount?: number; inserted: unknown[]; outcome?: string }
  return data.start === 0 && (data.removedCount ?? 0) === 0 && data.inserted.length > 0 && data.outcome === undefined
}

type Projected = Record<string, unknown>

/**
 * Keeps what the runtime decides and drops what is product wording or incidental: ids, seq
 * values, times, tool-result text, header contents, runtime-context snapshots and product events.
 */
export function project(events: readonly SessionEvent[], cwd?: string, knobSections = false): Projected[] {
  const out: Projected[] = []
  const uncwd = (text: string) => cwd === undefined || cwd === '' ? text : text.split(cwd).join('{{cwd}}')
  // The live folder wherever it is inside a value (a tool call's arguments, as the recorded `{{cwd}}`).
  const uncwdIn = <T>(value: T): T => cwd === undefined || cwd === '' ? value : JSON.parse(uncwd(JSON.stringify(value))) as T
  for (let index = 0; index < events.length; index++) {
    const event = events[index]!
    if (!COMPARED.has(event.type)) continue
    if (isReturnOfClaimedInput(events, index)) continue
    if (isInstructionsRoute(events, index)) continue
    const data = event.data as Record<string, unknown>
    switch (event.type) {
      case 'user/message': {
        const message = data as unknown as UserMessage
        if (isCompactionMessage(message)) {
          out.push({ type: event.type, surfaceOp: event.surfaceOp, source: 'compaction', sources: event.sourceEventSeqs?.length })
          continue
        }
        // The catalog's wording is product text: its entries are what the runtime decides.
        if (isSkillCatalog(message)) {
          out.push({ type: event.type, surfaceOp: event.surfaceOp, source: 'skill-catalog', entries: (message.source as { entries?: unknown }).entries })
          continue
        }
        if (isCodeModeMessage(message)) {
          out.push({ type: event.type, surfaceOp: event.surfaceOp, source: CODE_MODE_PLUGIN, content: uncwd(JSON.stringify(message.content)) })
          continue
        }
        if (isHookMessage(message)) {
          out.push({ type: event.type, surfaceOp: event.surfaceOp, source: (message.source as { plugin: string }).plugin, content: message.content })
          continue
        }
        // Goal messages: who sent them and their format lines (objective, round); the guidance prose is product wording.
        if (isGoalMessage(message)) {
          const source = message.source as unknown as Record<string, unknown>
          const first = message.content[0]
          const lines = first?.type === 'text' ? first.text.split('\n').filter(line => /^<\/?goal_(round|complete)>$|^Objective: |^Round: /.test(line)) : []
          out.push({
            type: event.type, surfaceOp: event.surfaceOp,
            source: { ...source, ...typeof source.goalId === 'string' && { goalId: maskGoalId(source.goalId) }, ...typeof source.summary === 'string' && { summary: source.summary } },
            lines,
          })
          continue
        }
        // A job's settlement notice: which job it names (its wording is product text).
        if (isJobNotice(message)) {
          out.push({ type: event.type, surfaceOp: event.surfaceOp, source: 'job-notice', ...jobNoticeProjection(message) })
          continue
        }
        if (isDelegationMessage(message)) {
          out.push(maskIds({ type: event.type, surfaceOp: event.surfaceOp, source: message.source, content: message.content }))
          continue
        }
        // Workspace instructions: which files, how they changed and their digests; the wrapping
        // wording is product text.
        if (isInstructionsMessage(message)) {
          const source = instructionsSource(message)
          out.push({ type: event.type, surfaceOp: event.surfaceOp, source: AGENT_INSTRUCTIONS_SOURCE, baseline: source.baseline === true,
            changes: source.changes.map(({ action, scope, path, digest }) => ({ action, scope, path, digest })) })
          continue
        }
        // Runtime-context snapshots are product text except the knob sections, compared byte-exact
        // (scenarios with other plugin messages are skipped).
        if (message.source.kind !== 'user') {
          const knobs = knobSections && isRuntimeContextSnapshot(message) ? snapshotSections(message).filter(s => KNOB_SECTIONS.has(s.name)) : []
          if (knobs.length > 0) out.push({ type: event.type, surfaceOp: event.surfaceOp, source: 'runtime-context', sections: knobs.map(s => ({ name: s.name, text: uncwd(s.text) })) })
          continue
        }
        out.push({ type: event.type, surfaceOp: event.surfaceOp, source: message.source.kind, content: message.content })
        break
      }
      case 'assistant/message': {
        const message = data.message as { content: unknown }
        out.push({
          type: event.type, turn: data.turn, step: data.step, content: uncwdIn(message.content), interrupted: data.interrupted ?? false,
          surfaceOp: event.surfaceOp, chunks: event.sourceEventSeqs?.length,
        })
        break
      }
      case 'tool/result': {
        const message = data.message as { content: [{ toolCallId: string; isError: boolean }] }
        out.push({ type: event.type, turn: data.turn, step: data.step, callId: message.content[0].toolCallId, isError: message.content[0].isError, surfaceOp: event.surfaceOp })
        break
      }
      case 'hook/result': {
        const { durationMs: _duration, ...rest } = data
        out.push({ type: event.type, ...rest })
        break
      }
      // A program's inner calls: which tool, with what, and whether it failed (its output text,
      // like a tool result's, is the tool's wording).
      case 'tool/code-dispatch-start':
      case 'tool/code-dispatch':
        out.push({
          type: event.type, rootCallId: data.rootCallId, parentCallId: data.parentCallId, subCallId: data.subCallId, name: data.name,
          arguments: uncwd(JSON.stringify(data.arguments)), ...(event.type === 'tool/code-dispatch' ? { isError: data.isError } : {}),
        })
        break
      // A workflow run's records; the run id is random (the child ids are the recorded ones).
      case 'tool-workflow/run-start':
      case 'tool-workflow/agent-start':
      case 'tool-workflow/agent-end':
      case 'tool-workflow/run-end': {
        const { runId: _run, ...rest } = data
        out.push({ type: event.type, ...rest })
        break
      }
      case 'request/header':
        out.push({ type: event.type, reason: data.reason })
        break
      // The title request as sent (message ids masked, keys in one order).
      case TITLE_REQUEST_EVENT: {
        const messages = (data.messages as UserMessage[]).map(message => ({ role: message.role, source: message.source, content: message.content }))
        out.push({ type: event.type, titleProvider: data.titleProvider, messageSeqs: data.messageSeqs, route: data.route, system: data.system, messages, maxTokens: data.maxTokens })
        break
      }
      case 'request/context':
        out.push({ type: event.type, provider: data.provider, model: data.model })
        break
      case 'agent/inbox/spliced': {
        const inserted = data.inserted as UserMessage[]
        out.push({ type: event.type, target: data.target, start: data.start, removedCount: data.removedCount ?? 0, inserted: inserted.length, outcome: data.outcome ?? null })
        break
      }
      case 'llm/retry':
        out.push({ type: event.type, turn: data.turn, step: data.step, retry: data.retry, code: (data.failure as { code: string }).code })
        break
      case 'compaction/start':
        out.push({ type: event.type, turn: data.turn })
        break
      case 'compaction/summary':
        out.push({ type: event.type, shadowedRange: data.shadowedRange, shadowedSeqs: data.shadowedSeqs })
        break
      case 'compaction/end':
        out.push({ type: event.type, turn: data.turn, failed: data.error !== undefined })
        break
      case 'approval/asked':
        out.push({ type: event.type, toolName: data.toolName, callId: data.callId, reason: data.reason })
        break
      case 'goal/change': {
        // Ids and times are masked (placeholders in the recording); the rest is the runtime's decision.
        const { createdAt: _created, updatedAt: _updated, ...rest } = data as Record<string, unknown> & { goal?: { id: string }; cleared?: { id: string } }
        const goal = rest.goal as { id: string } | undefined
        const cleared = rest.cleared as { id: string } | undefined
        out.push({ type: event.type, ...rest, ...goal !== undefined && { goal: { ...goal, id: maskGoalId(goal.id) } }, ...cleared !== undefined && { cleared: { ...cleared, id: maskGoalId(cleared.id) } } })
        break
      }
      case 'approval/decided':
        out.push({ type: event.type, outcome: data.outcome })
        break
      case 'llm/retry-started':
        out.push({ type: event.type, turn: data.turn, step: data.step, retry: data.retry })
        break
      default:
        out.push({ type: event.type, ...uncwdIn(data) })
    }
  }
  return out
}

export function firstDifference(recorded: readonly Projected[], actual: readonly Projected[]): string | undefined {
  const n = Math.max(recorded.length, actual.length)
  for (let i = 0; i < n; i++) {
    const a = recorded[i] === undefined ? undefined : JSON.stringify(recorded[i])
    const b = actual[i] === undefined ? undefined : JSON.stringify(actual[i])
    if (a !== b) {
      return `first difference at projected event ${i}: recorded ${clip(a ?? '(end of log)')}, replayed ${clip(b ?? '(end of log)')}`
    }
  }
  return undefined
}

function clip(text: string): string {
  return text.length > 300 ? `${text.slice(0, 300)}...` : text
}
