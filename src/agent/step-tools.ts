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

export interface StepToolsOptions {
  readonly ctx: Context
  readonly session: Session
  readonly tools: ToolsService | undefined
  readonly scope: ScopeKey
  readonly turn: number
  readonly step: number
  readonly calls: readonly ToolCallBlock[]
  readonly signal: AbortSignal
  readonly maxParallelToolCalls: number
}

export interface StepToolsOutcome {
  /** A committed result asked to end the tool loop. */
  readonly concludesTurn: boolean
}

export async function runStepTools(options: StepToolsOptions): Promise<StepToolsOutcome> {
  const { session, turn, step, signal, tools, scope } = options
  const cwd = session.header.cwd ?? process.cwd()
  let concludesTurn = false
  const execution = (call: ToolCallBlock): ToolExecution => ({ callId: call.id, name: call.name, arguments: call.arguments, scope })
  const appendCall = (call: ToolCallBlock): number =>
    session.append('tool/call', { turn, step, callId: call.id, name: call.name, arguments: call.arguments }).seq
  const commit = (call: ToolCallBlock, callSeq: number, record: ToolResultRecord): void => {
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
    if (record.concludesTurn === true) concludesTurn = true
    tools?.committed(execution(call), record)
  }
  for (const call of options.calls) {
    if (signal.aborted) {
      commit(call, appendCall(call), abortedBeforeDispatchRecord())
      continue
    }
    const callSeq = appendCall(call)
    if (tools === undefined) {
      commit(call, callSeq, errorRecord(`unknown tool ${call.name}: no tools service is loaded`, 'ToolError', ToolErrorCode.unknownTool))
      continue
    }
    const prepared = await tools.prepare(execution(call), { cwd, signal, session })
    const record = prepared.kind === 'ready' ? await prepared.run() : prepared.record
    commit(call, callSeq, await tools.finish(execution(call), record))
  }
  return { concludesTurn }
}
