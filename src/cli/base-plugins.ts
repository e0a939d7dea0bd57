/**
 * The plugins of the `base` bundle (every agent profile: headless, tui, web, sdk, acp) in one
 * module, so the catalogue loads them with one import. In the bundled launcher (dist/bundle,
 * scripts/bundle.mjs) each dynamic import becomes a chunk boundary: one import here keeps the
 * agent's code in a few chunks instead of a chunk per plugin and per set of plugins sharing a
 * module (~70 files read, resolved and linked at start-up otherwise). The storage plugins
 * (`sessions`, `persistence-jsonl`) stay separate imports: `dsh sessions` needs only them.
 */
export { LlmServicePlugin } from '../llm/service.js'
export { DeepSeekPlugin } from '../llm/deepseek/index.js'
export { SettingsProvidersPlugin } from '../llm/openai/providers.js'
export { ToolsPlugin } from '../tools/index.js'
export { BuiltinToolsPlugin } from '../tools/builtin/index.js'
export { SystemPromptPlugin, RuntimeContextsPlugin } from '../prompt/index.js'
export { WorkspaceInstructionsPlugin } from '../instructions/index.js'
export { ApprovalPlugin } from '../approval/service.js'
export { SandboxPlugin } from '../sandbox/service.js'
export { ReactLoopPlugin, AgentsServicePlugin, LoopInvariantPlugin } from '../agent/index.js'
export { SubagentsPlugin, SubagentToolsPlugin } from '../subagents/index.js'
export { SessionTitlePlugin } from '../title/index.js'
export { CompactionPlugin } from '../compaction/index.js'
export { LlmRetryPlugin } from '../retry/index.js'
export { CheckpointPolicy } from '../persistence/checkpoint.js'
export { CommandsPlugin } from '../commands/index.js'
export { SkillsPlugin } from '../skills/index.js'
export { PlanModePlugin } from '../plan/index.js'
export { QuestionToolPlugin } from '../questions/index.js'
export { GoalsPlugin } from '../goals/index.js'
export { HooksPlugin } from '../hooks/index.js'
export { McpPlugin } from '../mcp/plugin.js'
