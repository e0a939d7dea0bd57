/**
 * Hook config files as Claude Code and Codex write them (HK-1, HK-2): parsing, validation and
 * matchers. A file is all or nothing: one invalid consumed matcher or malformed entry rejects
 * every hook in it, and the caller logs the reason.
 *
 * Shape (both dialects): `{"hooks": {"<Event>": [{"matcher"?: string, "hooks": [{"type":
 * "command", "command": string, "timeout"?: seconds}]}]}}`; Codex also accepts `timeoutSec`.
 * A Claude Code settings file (`.claude/settings.json`) holds the same `hooks` key.
 */
import type { HookDialect, HookPoint } from './api.js'

export const HOOK_POINTS: readonly HookPoint[] = ['SessionStart', 'UserPromptSubmit', 'PreToolUse', 'PostToolUse', 'Stop', 'SubagentStart', 'SubagentStop']

/** Points each dialect defines; Codex has no subagent hooks (its files' entries are ignored). */
export const DIALECT_POINTS: Readonly<Record<HookDialect, readonly HookPoint[]>> = {
  'claude-code': HOOK_POINTS,
  codex: ['SessionStart', 'UserPromptSubmit', 'PreToolUse', 'PostToolUse', 'Stop'],
}

/** The matcher subject of the subagent points: Claude Code's agent type, constant in dsh. */
export const SUBAGENT_TYPE = 'general-purpose'

/** Points whose groups consume a matcher; the others discard the field before validation. */
const MATCHED: ReadonlySet<HookPoint> = new Set(['SessionStart', 'PreToolUse', 'PostToolUse', 'SubagentStart', 'SubagentStop'])

/**
 * Claude Code tool names users paste into matchers, and the dsh tools they stand for. A literal
 * matcher naming one of them also matches the dsh tool (and the dsh name matches itself).
 */
export const CLAUDE_CODE_TOOL_NAMES: Readonly<Record<string, readonly string[]>> = {
  Bash: ['bash'],
  Read: ['read'],
  Write: ['write'],
  Edit: ['edit'],
  MultiEdit: ['edit'],
  Glob: ['glob'],
  Grep: ['grep'],
  WebFetch: ['web_fetch'],
  WebSearch: ['web_search'],
  TodoWrite: ['todo_write'],
}

/** The Claude Code names of a dsh tool (`bash` -> `Bash`), for regex matchers. */
const DSH_TO_CLAUDE_CODE = new Map<string, string[]>()
for (const [cc, names] of Object.entries(CLAUDE_CODE_TOOL_NAMES)) {
  for (const name of names) DSH_TO_CLAUDE_CODE.set(name, [...DSH_TO_CLAUDE_CODE.get(name) ?? [], cc])
}

export interface HookCommand {
  readonly command: string
  /** Seconds, from the file; undefined means the plugin's default. */
  readonly timeoutSec?: number
}

export interface HookGroup {
  readonly point: HookPoint
  /** The matcher as written (absent for points that take none). */
  readonly matcher?: string
  readonly test: (subject: string) => boolean
  readonly hooks: readonly HookCommand[]
}

export interface ParsedHookFile {
  readonly groups: readonly HookGroup[]
  /** Entries skipped without rejecting the file (unsupported hook types, async Codex hooks). */
  readonly warnings: readonly string[]
}

export class HookConfigError extends Error {
  override name = 'HookConfigError'
}

const LITERAL_LIST = /^[A-Za-z0-9_|]+$/

/** HK-2: the matcher of one group as a predicate over the subject (tool name, session source). */
export function compileMatcher(dialect: HookDialect, matcher: string | undefined): (subject: string) => boolean {
  if (matcher === undefined || matcher === '' || matcher === '*') return () => true
  if (dialect === 'claude-code' && LITERAL_LIST.test(matcher)) {
    const names = new Set<string>()
    for (const name of matcher.split('|')) {
      if (name === '') continue
      names.add(name)
      for (const alias of CLAUDE_CODE_TOOL_NAMES[name] ?? []) names.add(alias)
    }
    return subject => names.has(subject)
  }
  // Claude Code: anything else is a regex; Codex: always an unanchored regex. Throws when invalid.
  const regex = new RegExp(matcher)
  return subject => regex.test(subject) || (DSH_TO_CLAUDE_CODE.get(subject)?.some(name => regex.test(name)) ?? false)
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

/** Parses one file's text. Throws `HookConfigError` naming the first problem (HK-1). */
export function parseHookFile(text: string, dialect: HookDialect): ParsedHookFile {
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch (error) {
    throw new HookConfigError(`not JSON: ${error instanceof Error ? error.message : String(error)}`)
  }
  if (!isRecord(json)) throw new HookConfigError('the file must hold a JSON object')
  const hooks = json.hooks
  if (hooks === undefined) return { groups: [], warnings: [] }
  if (!isRecord(hooks)) throw new HookConfigError('"hooks" must be an object keyed by event name')
  const groups: HookGroup[] = []
  const warnings: string[] = []
  for (const [event, entries] of Object.entries(hooks)) {
    // Unsupported events are ignored before parsing.
    if (!(DIALECT_POINTS[dialect] as readonly string[]).includes(event)) continue
    const point = event as HookPoint
    if (!Array.isArray(entries)) throw new HookConfigError(`hooks.${event} must be an array of groups`)
    entries.forEach((entry, i) => {
      const where = `hooks.${event}[${i}]`
      if (!isRecord(entry)) throw new HookConfigError(`${where} must be an object`)
      const matcher = MATCHED.has(point) ? entry.matcher : undefined
      if (matcher !== undefined && typeof matcher !== 'string') throw new HookConfigError(`${where}.matcher must be a string`)
      let test: (subject: string) => boolean
      try {
        test = compileMatcher(dialect, matcher)
      } catch (error) {
        throw new HookConfigError(`${where}.matcher ${JSON.stringify(matcher)} is not a valid regular expression: ${error instanceof Error ? error.message : String(error)}`)
      }
      if (!Array.isArray(entry.hooks)) throw new HookConfigError(`${where}.hooks must be an array`)
      const commands: HookCommand[] = []
      entry.hooks.forEach((hook, j) => {
        const at = `${where}.hooks[${j}]`
        if (!isRecord(hook)) throw new HookConfigError(`${at} must be an object`)
        if (hook.type !== 'command') {
          warnings.push(`${at}: hook type ${JSON.stringify(hook.type)} is not supported (only "command" runs); skipped`)
          return
        }
        if (dialect === 'codex' && hook.async === true) {
          warnings.push(`${at}: async hooks are not supported; skipped`)
          return
        }
        if (typeof hook.command !== 'string' || hook.command.trim() === '') throw new HookConfigError(`${at}.command must be a non-empty string`)
        const timeout = hook.timeout ?? (dialect === 'codex' ? hook.timeoutSec : undefined)
        if (timeout !== undefined && !(typeof timeout === 'number' && Number.isFinite(timeout) && timeout > 0)) {
          throw new HookConfigError(`${at}.timeout must be a positive number of seconds`)
        }
        commands.push({ command: hook.command, ...(timeout !== undefined ? { timeoutSec: timeout as number } : {}) })
      })
      groups.push({ point, ...(typeof matcher === 'string' ? { matcher } : {}), test, hooks: commands })
    })
  }
  return { groups, warnings }
}
