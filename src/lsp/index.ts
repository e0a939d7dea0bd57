/**
 * Language servers for the model (docs/lsp.md): the `lsp` tool over LSP stdio servers chosen per
 * file extension, started on first use and shared by the process's calls.
 */
export { LspPlugin, type LspPluginConfig } from './plugin.js'
export { LspQueries, LSP_OPERATIONS, type LspArgs, type LspOperation } from './queries.js'
export { LspError, LspErrorCode, ServerPool } from './pool.js'
export { SHIPPED_SERVERS, LSP_DEFAULTS, type LspServerConfig, type LspSettings } from './config.js'
export { createLspTool, LSP_TOOL_NAME, lspParameters } from './tool.js'
