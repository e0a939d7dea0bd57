/**
 * `defineTool`: the recommended way to write a tool. One zod 4 schema gives both the JSON Schema
 * the model sees (`parameters`) and the validator the registry runs (`parse`), so the two cannot
 * drift apart. zod is only a type import here (the schema brings its own methods), so loading
 * the tools seam never loads zod; the built-in tools use plain JSON Schema (json-schema.ts).
 */
import type { z } from 'zod'
import type { Tool, ToolContext, ToolOutput } from './api.js'
import { ToolError, ToolErrorCode } from './errors.js'

export interface ToolDefinition<S extends z.ZodType> {
  readonly name: string
  readonly description: string
  /** Arguments schema; the model sees its input-side JSON Schema (defaults are optional there). */
  readonly schema: S
  execute(args: z.output<S>, context: ToolContext): Promise<ToolOutput> | ToolOutput
  readonly timeoutMs?: number
  /** T-2: return exactly `true` when this call may overlap other parallel calls. */
  isConcurrencySafe?(args: z.output<S>): unknown
}

/** One line per problem, `path: message`, so the model can fix its call. */
export function formatIssues(error: z.ZodError): string {
  return error.issues
    .map((issue) => `${issue.path.length > 0 ? issue.path.map(String).join('.') : '(arguments)'}: ${issue.message}`)
    .join('; ')
}

export function defineTool<S extends z.ZodType>(definition: ToolDefinition<S>): Tool<z.output<S>> {
  const { schema } = definition
  // `$schema` only adds tokens to every request; providers do not need it.
  const { $schema: _dialect, ...parameters } = schema.toJSONSchema({ io: 'input' }) as Record<string, unknown>
  if (parameters.type !== 'object') {
    throw new TypeError(`dsh-tools: tool ${definition.name}: schema must describe an object (providers take named arguments), got ${JSON.stringify(parameters.type)}`)
  }
  const tool: Tool<z.output<S>> = {
    name: definition.name,
    description: definition.description,
    parameters,
    parse(args: unknown): z.output<S> {
      const result = schema.safeParse(args)
      if (!result.success) throw new ToolError(formatIssues(result.error), ToolErrorCode.invalidArguments)
      return result.data
    },
    execute: (args, context) => definition.execute(args, context),
    ...(definition.timeoutMs !== undefined ? { timeoutMs: definition.timeoutMs } : {}),
    ...(definition.isConcurrencySafe ? { isConcurrencySafe: (args: z.output<S>) => definition.isConcurrencySafe!(args) } : {}),
  }
  return tool
}
