/**
 * The model-facing `lsp` tool: the recorded schema (operation, file_path, one-based line and
 * UTF-16 character), with documentSymbol, workspaceSymbol and diagnostics added to the operations.
 */
import type { Tool } from '../tools/api.js'
import { ToolError, ToolErrorCode } from '../tools/errors.js'
import { LSP_OPERATIONS, type LspArgs, type LspQueries } from './queries.js'

export const LSP_TOOL_NAME = 'lsp'

export const lspParameters = {
  type: 'object',
  properties: {
    operation: {
      type: 'string',
      description: 'goToDefinition, findReferences, goToImplementation, hover, documentSymbol, workspaceSymbol, or diagnostics.',
      enum: [...LSP_OPERATIONS],
    },
    file_path: { type: 'string', description: 'The source file to query, relative to the workspace or absolute.' },
    line: { type: 'number', description: 'One-based line of the cursor.' },
    character: { type: 'number', description: 'One-based UTF-16 column of the cursor.' },
  },
  required: ['operation', 'file_path', 'line', 'character'],
} as const

export const LSP_DESCRIPTION = 'Query a language server for precise code navigation. operation is one of goToDefinition, findReferences, goToImplementation, hover, documentSymbol, workspaceSymbol, diagnostics. line and character are one-based UTF-16 cursor coordinates. findReferences includes the declaration. workspaceSymbol searches the workspace for the identifier at the cursor; documentSymbol and diagnostics are about the whole file (give line 1, character 1).'

function invalid(message: string): never {
  throw new ToolError(message, ToolErrorCode.invalidArguments)
}

export function parseLspArgs(raw: unknown): LspArgs {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) invalid('(arguments): expected an object')
  const args = raw as Record<string, unknown>
  if (typeof args.operation !== 'string' || !(LSP_OPERATIONS as readonly string[]).includes(args.operation)) {
    invalid(`operation: must be one of ${LSP_OPERATIONS.join(', ')}${args.operation === undefined ? '' : `, not ${JSON.stringify(args.operation)}`}`)
  }
  if (typeof args.file_path !== 'string' || args.file_path.trim() === '') invalid('file_path: must be a non-empty path')
  for (const key of ['line', 'character'] as const) {
    const value = args[key]
    if (typeof value !== 'number' || !Number.isInteger(value) || value < 1) invalid(`${key}: must be a whole number from 1 (one-based), not ${JSON.stringify(value)}`)
  }
  return { operation: args.operation as LspArgs['operation'], file_path: args.file_path, line: args.line as number, character: args.character as number }
}

export function createLspTool(queries: LspQueries, timeoutMs = 120_000): Tool<LspArgs> {
  return {
    name: LSP_TOOL_NAME,
    description: LSP_DESCRIPTION,
    parameters: lspParameters,
    parse: parseLspArgs,
    timeoutMs,
    isConcurrencySafe: () => true,
    execute: (args, context) => queries.run(args, context),
  }
}
