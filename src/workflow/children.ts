/**
 * One child of a workflow or a Ralph round: a one-shot child through the delegation service,
 * equipped, when an output schema is asked for, with a scoped `structured_output` tool whose
 * call ends the child's turn and is its answer.
 */
import type { Context } from 'cordis'
import type { Agent } from '../agent/api.js'
import type { JsonValue } from '../session/types.js'
import type { StartOptions } from '../subagents/api.js'
import type { Tool } from '../tools/api.js'
import { schemaProblems } from '../tools/json-schema.js'

export const STRUCTURED_OUTPUT = 'structured_output'
export const STRUCTURED_OUTPUT_DESCRIPTION = "Report your final structured result. Call this exactly once, when your answer is complete; the arguments must match this tool's parameter schema exactly."
export const STRUCTURED_OUTPUT_RECORDED = 'Structured output recorded.'

export interface ChildRequest {
  readonly parent: Agent
  readonly prompt: string
  readonly provider: string
  readonly maxDepth: number
  readonly callId: string
  readonly label?: string
  readonly schema?: Readonly<Record<string, unknown>>
  readonly route?: { readonly provider?: string; readonly model?: string }
  onPublished?(childId: string): void
}

export type ChildOutcome =
  | { readonly kind: 'completed'; readonly text: string; readonly structured?: JsonValue; readonly childId: string }
  | { readonly kind: 'failed' | 'cancelled'; readonly message: string; readonly childId: string }

export async function runChild(ctx: Context, request: ChildRequest, signal: AbortSignal): Promise<ChildOutcome> {
  let structured: { value: JsonValue } | undefined
  const schema = request.schema
  const setup = schema === undefined ? undefined : (child: Agent) => {
    const tool: Tool<JsonValue> = {
      name: STRUCTURED_OUTPUT,
      description: STRUCTURED_OUTPUT_DESCRIPTION,
      parameters: schema,
      parse: (value) => {
        const problems = schemaProblems(schema, value)
        if (problems.length > 0) throw new Error(problems.join('; '))
        return value as JsonValue
      },
      execute: (value) => {
        if (structured !== undefined) return { content: [{ type: 'text', text: 'Error: structured output was already recorded; it is recorded once.' }], isError: true, concludesTurn: true }
        structured = { value }
        return { content: [{ type: 'text', text: STRUCTURED_OUTPUT_RECORDED }], concludesTurn: true }
      },
    }
    child.ctx.get('tools')?.register(tool, child.scope)
  }
  const options: StartOptions = {
    parent: request.parent, provider: request.provider, prompt: request.prompt, maxDepth: request.maxDepth, callId: request.callId,
    ...request.label !== undefined && { label: request.label },
    ...request.route !== undefined && { route: request.route },
    ...request.onPublished !== undefined && { onPublished: request.onPublished },
    ...setup !== undefined && { setup },
  }
  const result = await ctx.subagents.run(options, signal)
  if (signal.aborted || result.reason?.kind === 'aborted') return { kind: 'cancelled', message: result.output, childId: result.childSessionId }
  if (result.isError || result.reason?.kind !== 'completed') return { kind: 'failed', message: result.output, childId: result.childSessionId }
  if (schema !== undefined && structured === undefined) return { kind: 'failed', message: `the child ended without calling ${STRUCTURED_OUTPUT}`, childId: result.childSessionId }
  return { kind: 'completed', text: result.text, ...structured !== undefined && { structured: structured.value }, childId: result.childSessionId }
}
