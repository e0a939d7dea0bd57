/**
 * Workflows and the Ralph loop (docs/workflows.md): the `workflow` tool runs an orchestration
 * script that starts child agents through the delegation service and waits on them; the `ralph`
 * tool re-runs one objective in fresh children until a worker reports completion or a blocker,
 * or the round cap. Both run in the foreground of the calling tool call: cancelling it cancels
 * the script and every child it started.
 */
import type { CodeRunLimits, CodeRuntime } from '../code-runtime/api.js'

/** Parent-log events of a workflow run (root calls only: a program's `workflow` call records none). */
export const RUN_START_EVENT = 'tool-workflow/run-start'
export const AGENT_START_EVENT = 'tool-workflow/agent-start'
export const AGENT_END_EVENT = 'tool-workflow/agent-end'
export const RUN_END_EVENT = 'tool-workflow/run-end'

export interface RunStartData { readonly runId: string; readonly name: string }
export interface AgentStartData { readonly runId: string; readonly seq: number; readonly label: string; readonly phase?: string; readonly childId: string }
export interface AgentEndData { readonly runId: string; readonly seq: number; readonly outcome: 'completed' | 'failed' | 'cancelled' }
export interface RunEndData { readonly runId: string; readonly stopReason: 'completed' | 'cancelled' | 'error' }

export interface WorkflowConfig {
  /** Delegation provider of the children (default `spawn`). */
  readonly provider?: string
  /** Children of one run at once; 0 (default) is the machine's CPUs. */
  readonly maxConcurrentAgents?: number
  /** Children of one run in all (default 1000). */
  readonly maxTotalAgents?: number
  /** Items of one `parallel` or `pipeline` call (default 4096). */
  readonly maxItemsPerCall?: number
  /** Characters of the tool result before it is cut (default 50000). */
  readonly maxResultChars?: number
  /** SA-2: the deepest child depth a run may reach (default 3, as the subagent tools). */
  readonly maxDepth?: number
  /** Limits of the script's thread (its busy time, default 60 s; the whole run, default 6 h). */
  readonly limits?: Partial<CodeRunLimits>
  /** The `ralph` tool (default on). */
  readonly ralph?: boolean
  /** Rounds of one Ralph call: the default and the ceiling (256). */
  readonly maxRounds?: number
  /** Characters of the handoff a Ralph round passes on (default 16384). */
  readonly maxHandoffChars?: number
  /** Characters of the Ralph tool result (default 16384). */
  readonly maxRalphResultChars?: number
  /** A runtime of the embedder's (tests) instead of a worker thread. */
  readonly codeRuntime?: CodeRuntime
}

export const WORKFLOW_DEFAULTS = Object.freeze({
  provider: 'spawn',
  maxConcurrentAgents: 0,
  maxTotalAgents: 1000,
  maxItemsPerCall: 4096,
  maxResultChars: 50_000,
  maxDepth: 3,
  maxRounds: 256,
  maxHandoffChars: 16_384,
  maxRalphResultChars: 16_384,
})

/** What a program's `await tools.workflow(...)` / `tools.ralph(...)` resolves to (code mode), as recorded. */
export const RUN_OUTPUT_TYPE = `{
  runId: string;
  agentsStarted: number;
  result: JsonValue;
}`

/** A tool result cut to `max` characters, saying how much was left out. */
export function capText(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max)}\n… [truncated: ${text.length - max} more characters]`
}

/** The script's thread: its own busy time is short; the run waits on children for as long as they take. */
export const WORKFLOW_RUN_LIMITS: Partial<CodeRunLimits> = Object.freeze({ computeMs: 60_000, maxWallMs: 6 * 3600_000 })
