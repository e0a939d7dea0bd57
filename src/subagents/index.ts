/**
 * The delegation seam: `ctx.subagents` (SubagentsPlugin) and the model-facing tools
 * (SubagentToolsPlugin). See docs/subagents.md.
 */
export * from './api.js'
export { SubagentsPlugin, spawnProvider, forkProvider, descriptorProblem, DESCRIPTOR_EVENT, type SubagentsConfig, type ProviderOptions } from './service.js'
export {
  SubagentToolsPlugin, DEFAULT_TOOL_ROWS, delegationTool, sendMessageTool, interruptAgentTool, listAgentsTool,
  type SubagentToolRow, type SubagentToolsConfig,
} from './tools.js'
export * as texts from './texts.js'
