/** The tools seam: `ctx.tools` (ToolsPlugin), `defineTool` and the error-record helpers. */
export * from './api.js'
export { defineTool, formatIssues, type ToolDefinition } from './define.js'
export * from './errors.js'
export { decodeArguments, parseArguments, ToolsPlugin } from './registry.js'
