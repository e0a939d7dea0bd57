/** Product subagents: tasks delegated to an external coding-agent CLI (docs/subagents.md, "Product subagents"). */
export { CodexSubagentPlugin, ClaudeCodeSubagentPlugin, type ProductSubagentConfig } from './plugin.js'
export type { ProductToolConfig, ProductRunFinished, ProductDriver } from './api.js'
export { codexDriver } from './codex.js'
export { claudeCodeDriver } from './claude-code.js'
export { failureLine, type FailureFacts } from './diagnostic.js'
