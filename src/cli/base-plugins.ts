/**
 * The plugins of the `base` bundle (every agent profile: headless, tui, web, sdk, acp), the
 * headless app and a few small optional plugins whose modules the base ones already load, in one
 * module, so the catalogue loads them with one import. In the bundled launcher (dist/bundle,
 * scripts/bundle.mjs) each dynamic import becomes a chunk boundary, and esbuild makes a chunk
 * per set of entry points sharing a module: a catalogue import per plugin made ~70 files for
 * one headless run, this ~38. The storage plugins (`sessions`, `persistence-*`) and the apps
 * that pull large packages (terminal: ink; sdk and acp: zod; web) stay separate imports:
 * `dsh sessions` needs only storage, and a headless run none of those packages.
 */
export { LlmServicePlugin } from '../llm/service.js'
export { DeepSeekPlugin } from '../llm/deepseek/index.js'
export { SettingsProvidersPlugin } from '../llm/openai/providers.js'
export { ProviderPresetsPlugin } from '../llm/presets/index.js'
export { ToolsPlugin } from '../tools/index.js'
export { BuiltinToolsPlugin, WebFetchToolPlugin, SessionEventReadToolPlugin } from '../tools/builtin/index.js'
export { SystemPromptPlugin, RuntimeContextsPlugin } from '../prompt/index.js'
export { WorkspaceInstructionsPlugin } from '../instructions/index.js'
export { ApprovalPlugin } from '../approval/service.js'
export { PermissionsRow } from '../permissions/row.js'
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
export { WorkflowPlugin } from '../workflow/index.js'
export { HooksPlugin } from '../hooks/index.js'
export { ProjectTrustPlugin } from '../trust/plugin.js'
export { McpPlugin, McpServerPlugin } from '../mcp/plugin.js'
export { JobsPlugin } from '../jobs/service.js'
export { RepeatToolReminderPlugin, TimeoutPolicyPlugin } from '../guard/index.js'
export { ReadImageToolPlugin } from '../images/read-image.js'
export { OpenAiCompatiblePlugin } from '../llm/openai/index.js'
export { HeadlessApp } from './headless.js'
export { readPriceTable, withShippedPrices } from '../session/trajectory.js'
export { shippedPrices } from '../llm/presets/catalog.js'
