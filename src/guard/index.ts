/**
 * Guards (docs/guards.md): plugins above the tools and agent seams that watch the loop for
 * unproductive patterns and bound tool calls. Each is a row of the base bundle a patch can drop.
 */
export { RepeatToolReminderPlugin, REPEAT_TOOL_DEFAULTS, REPEAT_TOOL_PLUGIN, type RepeatToolConfig } from './repeat-tool.js'
export { TimeoutPolicy, TimeoutPolicyPlugin, TOOL_TIMEOUT, type TimeoutPolicyConfig } from './timeout-policy.js'
