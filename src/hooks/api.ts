/**
 * Hooks (docs/hooks.md): shell commands from Claude Code and Codex config files, run at the
 * agent's interception points. This module holds the shared shapes and the two log events.
 */

export type HookDialect = 'claude-code' | 'codex'

export type HookPoint = 'SessionStart' | 'UserPromptSubmit' | 'PreToolUse' | 'PostToolUse' | 'Stop' | 'SubagentStart' | 'SubagentStop'

/**
 * The decision one hook run expressed: `block` (exit 2 or legacy `decision:"block"`), the
 * `permissionDecision` values `deny`/`ask`/`allow`, legacy `approve`, `stop` (`continue:false`),
 * else `pass`.
 */
export type HookDecision = 'block' | 'deny' | 'ask' | 'allow' | 'approve' | 'stop' | 'pass'

/** `hook/invoked` (HK-3): appended right before a hook command runs, inside an open turn. */
export interface HookInvokedData {
  readonly turn: number
  readonly point: HookPoint
  readonly dialect: HookDialect
  /** `<dialect>:<Point>:<n>`, n counting invocations of that point in this process. */
  readonly handlerId: string
  /** Present only when the group had a matcher. */
  readonly matcher?: string
}

/** `hook/result` (HK-3): appended right after, sharing `handlerId`. */
export interface HookResultData {
  readonly turn: number
  readonly point: HookPoint
  readonly handlerId: string
  readonly decision: HookDecision
  readonly exitCode?: number
  /** Trimmed stderr capped at `stderrSummaryMaxChars` (+ `…`); absent when empty. */
  readonly stderrSummary?: string
  readonly durationMs: number
}

/** One config file to load. */
export interface HookFileSource {
  readonly dialect: HookDialect
  /** Absolute, or relative to the plugin's `cwd`. */
  readonly path: string
  /** Claude Code: `CLAUDE_PROJECT_DIR` (default: the session cwd). */
  readonly projectDir?: string
  /** Claude Code: `${CLAUDE_PLUGIN_ROOT}` in commands. */
  readonly pluginRoot?: string
  /** Project files need the trust step; explicit rows and user files do not. */
  readonly origin?: 'explicit' | 'user' | 'project'
}

declare module '../session/types.js' {
  interface SessionEventMap {
    'hook/invoked': HookInvokedData
    'hook/result': HookResultData
  }
}
