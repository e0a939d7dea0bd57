/** Model-facing wording of delegation (tool descriptions, results, notices), kept in one place. */
import type { TurnEndReason } from '../session/types.js'

export const DELEGATION_CONTEXT_NAME = 'subagent:delegation'
export const DELEGATION_CONTEXT_TEXT = 'You are a delegated subagent: your permission scope was fixed when you were started and cannot be widened from inside this session — operations that require approval are rejected automatically. When the task needs access beyond that scope, do not retry the denied operation; state the limitation in your reply so the delegating agent can handle it.'

export const REPORT_SECTION_TEXT = 'Deliver your result with the report tool before you finish: call it once with a self-contained answer. The agent that started you shares your workspace but does not automatically receive your transcript, tool output, or reasoning, so a closing remark such as "done" leaves it nothing it can use. Report earlier as well whenever a partial finding changes what that agent should do next; reporting never ends your turn.'

const DELEGATE_INTRO = 'Delegate a self-contained task to a subagent (a separate agent that works in its own context) to offload focused, independent work — research, a scoped implementation, an analysis — so it does not consume this conversation\'s context. The subagent returns its result, not its intermediate steps. Give it a complete, standalone prompt: it does not see this conversation.'

export const SUBAGENT_CONTINUABLE_DESCRIPTION = `${DELEGATE_INTRO} This tool runs in the background by default, immediately returns a durable subagent id, and keeps the child conversation available for later turns. When that run settles, the runtime sends the parent a notice containing its outcome and any final assistant message; \`send_message\` starts a later turn in the same child conversation. Set \`run_in_background: false\` only when your next action depends on receiving the result.`
export const SUBAGENT_ONE_SHOT_DESCRIPTION = `${DELEGATE_INTRO} This call waits for the subagent and returns its result.`
export const SUBAGENT_FORK_DESCRIPTION = 'Delegate a task to a subagent that inherits this conversation: a child agent seeded with all completed turns so far (it does not see the current in-flight turn). Use this when the subtask builds on this conversation\'s context — a follow-up analysis, a review, a continuation — without consuming this conversation\'s context for the work itself. You receive its result, not its intermediate steps. This call waits for the subagent and returns its result.'

export const DESCRIPTION_PARAM = 'A short (3-5 word) description of the delegated task, for display.'
export const PROMPT_PARAM = 'The complete, self-contained task for the subagent. It does not share this conversation\'s context, so include everything it needs.'
export const FORK_PROMPT_PARAM = 'The task for the subagent. It already sees this conversation\'s completed turns, so build on them freely and state only what is new.'
export const BACKGROUND_PARAM = 'Whether to run in the background and return a durable subagent id immediately. Defaults to true. Set false to wait for the result when your next action depends on it.'

export const SEND_MESSAGE_DESCRIPTION = 'Send a message to a background subagent by its subagent id, continuing the same conversation. It becomes the subagent\'s next turn: if it is still working, the message waits until its current turn finishes, so it cannot redirect work already underway. This call returns no answer from the subagent — only confirmation that the message was delivered — so use it to give it more work. A failure means the message was NOT delivered.'
export const INTERRUPT_DESCRIPTION = 'Request cancellation of a background agent\'s current turn by its agent id. The target may be your direct child or a deeper agent created under you. Only the current turn stops: messages already queued for the agent stay parked until a later send_message, agents it started keep running, and the agent itself stays available for follow-ups. This call returns as soon as the stop request is accepted, so the target may keep running briefly; interrupting an agent that already finished is an accepted no-op.'
export const LIST_AGENTS_DESCRIPTION = 'List your continuable background subagents by durable id and label. Use it to recall which ones you started, not to poll for completion — you are told when one finishes. Status comes from the live registry: running means the agent is working right now, idle means it is loaded but between turns (it may be waiting on agents it started), and ready means it exists only in storage — resumable, not terminal, and not a result waiting to be collected; a `send_message` starts a new turn on the same conversation, and a direct child remains a `send_message` candidate in every status. The snapshot is not a delivery promise — `send_message` performs the authoritative check and may still fail. Children that could not be read are reported as diagnostics instead of being silently dropped. Scope `descendants` walks the whole tree below you in stable pre-order, annotating each entry with its durable direct-parent session id and depth. You may use `send_message` only for depth-1 entries; deeper entries are candidates for `interrupt_agent` only.'
export const REPORT_DESCRIPTION = 'Report selected content to the agent that started you. Call this once before you finish, with a self-contained final result, and earlier for progress or findings that change what that agent does next. That agent shares your workspace but does not automatically receive your transcript, tool output, or reasoning, so finishing your work is not itself a result. Reporting does not end your turn or finish your work, and only your direct parent receives it. A failed call may still have arrived, so do not blindly repeat it.'

export const depthRejected = (depth: number, maxDepth: number): string => `subagent depth ${depth} exceeds maxDepth ${maxDepth}`
export const startedText = (id: string): string => `started subagent ${id}`
export const queuedText = (id: string): string => `message queued as the next turn for subagent ${id}`
export const unavailableText = (id: string): string => `subagent ${JSON.stringify(id)} is unavailable`
export const interruptText = (id: string): string => `interrupt requested for agent ${id}`
export const reportAcceptedText = (messageId: string): string => `report accepted by the agent that started you as message ${messageId}`
export const NO_SUBAGENTS = '(no subagents)'

/** SA-6 headline of a child run that did not complete. */
export function failureHeadline(reason: TurnEndReason | undefined): string {
  switch (reason?.kind) {
    case 'aborted': return 'subagent run was cancelled'
    case 'max-tokens': return 'subagent run hit its token limit before finishing'
    default: return (reason as { kind: string } | undefined)?.kind === 'refusal' ? 'subagent declined the task' : 'subagent run failed'
  }
}

/** The diagnostic line of a failed child run, when the end reason carries one. */
export function failureDiagnostic(reason: TurnEndReason | undefined): string | undefined {
  if (reason === undefined) return 'the child run did not start a turn'
  if (reason.kind === 'error') return `${reason.error.code}: ${reason.error.message}`
  if (reason.kind === 'blocked') return reason.message === undefined ? 'the turn was blocked' : `the turn was blocked: ${reason.message}`
  if (reason.kind === 'interrupted') return 'the run was interrupted'
  return undefined
}

/** SA-10/11: the outcome line of a settlement notice. */
export function outcomeLine(id: string, reason: TurnEndReason | undefined): string {
  const prefix = `Background subagent ${id} `
  switch (reason?.kind) {
    case 'completed': return `${prefix}finished and will do no further work unless you send it more.`
    case 'aborted': return `${prefix}was stopped before it finished.`
    case 'max-tokens': return `${prefix}ran out of room before it finished.`
    case 'error': return `${prefix}failed before it finished.`
    default: {
      const kind = (reason as { kind: string } | undefined)?.kind ?? 'no turn'
      return kind === 'refusal' ? `${prefix}declined the task.` : `${prefix}ended abnormally (${kind}) before it finished.`
    }
  }
}
