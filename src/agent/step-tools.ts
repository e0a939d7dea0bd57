/**
 * The tool half of a step (T-3, T-4, T-6): hands the model's calls to the scheduler and turns
 * each call into log events: `tool/call` when the call starts, `tool/result` at its ordered
 * commit (role user, one tool-result block, `sourceEventSeqs:[callSeq]`).
 */
import { randomUUID } from 'node:crypto'
import type { Context } from 'cordis'
import type { ToolCallBlock, ToolResultMessage } from '../llm/types.js'
import type { Session } from '../session/api.js'
import type { ScopeKey } from '../scope/index.js'
import type { ToolExecution, ToolResultRecord, ToolsService } from '../tools/api.js'
import { abortedBeforeDispatchRecord, errorRecord, ToolErrorCode } from '../tools/errors.js'
import { runToolCalls } from './tool-calls.js'

export interface StepToolsOptions {
  readonly ctx: Context
  readonly session: Session
  readonly tools: ToolsService | undefined
  readonly scope: ScopeKey
  readonly turn: number
  readonly step: number
  readonly calls: readonly ToolCallBlock[]
  readonly signal: AbortSignal
  /** Read at each group start (T-3). */
  readonly maxParallelToolCalls: () => number
}

export interface StepToolsOutcome {
  /** A committed result asked to end the tool loop. */
  readonly concludesTurn: boolean
}

export async function runStepTools(options: StepToolsOptions): Promise<StepToolsOutcome> {
  const { session, turn, step, signal, tools, scope } = options
  const cwd = session.header.cwd ?? process.cwd()
  const execution = (call: ToolCallBlock): ToolExecution => ({ callId: call.id, name: call.name, arguments: call.arguments, scope })
  const appendCall = (call: ToolCallBlock): number =>
    session.append('tool/call', { turn, step, callId: call.id, name: call.name, arguments: call.arguments }).seq
  const writeResult = (call: ToolCallBlock, callSeq: number, record: ToolResultRecord): void => {
    const message: ToolResultMessage = {
      id: randomUUID(),
      role: 'user',
      content: [{ type: 'tool-result', toolCallId: call.id, content: record.content, isError: record.isError }],
      source: { kind: 'tool', callId: call.id },
    }
    session.append('tool/result', {
      turn, step, message,
      ...(record.error !== undefined ? { error: { name: record.error.name, code: record.error.code } } : {}),
      ...(record.meta !== undefined ? { meta: record.meta } : {}),
    }, { surfaceOp: 'append', sourceEventSeqs: [callSeq] })
  }
  if (tools === undefined) {
    for (const call of options.calls) {
      writeResult(call, appendCall(call), errorRecord(`unknown tool ${call.name}: no tools service is loaded`, 'ToolError', ToolErrorCode.unknownTool))
    }
    return { concludesTurn: false }
  }
  // Keyed by identity: the model may repeat a call id, the scheduler hands back our objects.
  const blocks = new Map(options.calls.map(call => [execution(call), call] as const))
  const callOf = (exec: ToolExecution): ToolCallBlock => blocks.get(exec)!
  const summary = await runToolCalls({
    calls: [...blocks.keys()],
    tools,
    signal,
    context: { cwd, session },
    maxParallelToolCalls: options.maxParallelToolCalls,
    startCall: async (exec) => appendCall(callOf(exec)),
    commitResult: (exec, record, callSeq) => { writeResult(callOf(exec), callSeq, record) },
    abortedBeforeDispatch: async (exec) => {
      const call = callOf(exec)
      writeResult(call, appendCall(call), abortedBeforeDispatchRecord())
    },
  })
  return { concludesTurn: summary.concludesTurn }
}
