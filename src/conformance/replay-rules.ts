/**
 * What the replay suite (`./replay-suite.ts`) compares, masks and can replay: the tools it
 * loads, the events on the core projection, the plugin-authored message sources it knows, and
 * the driver operations it runs (docs/conformance.md, "Replay suite").
 */
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { RUN_CODE } from '../code-mode/texts.js'
import { CORDIS_TOOL_NAMES } from '../cordis-dynamic/texts.js'
import { PTY_TOOL_NAMES } from '../pty/schemas.js'
import { onPath } from '../shell/tool.js'

export { RUN_CODE }

/** Tools the suite loads (the built-in set). A recorded call to any other tool is a SKIP. */
export const BUILTIN_TOOLS = new Set(['bash', 'read', 'write', 'edit', 'glob', 'grep', 'todo_write', 'skill', 'web_fetch', 'session_event_read',
  'subagent', 'subagent_fork', 'send_message', 'interrupt_agent', 'list_agents', 'report', 'ask_user_question',
  'create_goal', 'get_goal', 'update_goal', 'job_output', 'job_kill', 'job_list', 'read_image', 'run_code', 'workflow', 'ralph', 'lsp', 'str_replace_editor', 'pwsh', ...CORDIS_TOOL_NAMES, ...PTY_TOOL_NAMES])

/**
 * Why a recording that calls `pwsh` cannot run here: no pwsh binary on PATH (the pwsh tools are
 * offered only where one is). Not a missing capability of dsh: installing PowerShell runs it.
 */
export function pwshMissing(events: readonly { type: string; data: unknown }[]): string | undefined {
  const called = events.some(event => event.type === 'tool/call' && (event.data as { name?: string }).name === 'pwsh')
  return called && onPath('pwsh') === undefined
    ? 'pwsh is not installed here (the pwsh tool is offered only where a pwsh binary is on PATH; install PowerShell 7 to run this scenario)'
    : undefined
}

/**
 * The persistent-tools composition (INDEX.md: persistent bash beside `str_replace_editor`): where
 * the recording calls the editor, its `bash` is the persistent shell (rows `tool-bash-persistent`,
 * `tool-str-replace-editor`, builtin bash off).
 */
export function persistentComposition(events: readonly { type: string; data: unknown }[]): boolean {
  return events.some(event => event.type === 'tool/call' && (event.data as { name?: string }).name === 'str_replace_editor')
}

/** Self-extension (`cordis_*`): loaded where the recording calls one of its tools, directly or from a program. */
export { CORDIS_TOOL_NAMES }

/** Message sources of delegation (notices, reports, relayed send_message turns), compared with ids masked. */
export const DELEGATION_SOURCES = new Set(['subagent-settled', 'subagent-report', 'coordinator'])

/** Events compared on the core projection. */
export const COMPARED = new Set([
  'turn/start', 'turn/end', 'step/start', 'step/end', 'user/message', 'assistant/chunk', 'assistant/message',
  'tool/call', 'tool/result', 'todo/write', 'request/header', 'request/context', 'agent/inbox/spliced',
  'llm/retry', 'llm/retry-started',
  'compaction/start', 'compaction/summary', 'compaction/end', 'compaction/prune',
  'hook/invoked', 'hook/result',
  'approval/asked', 'approval/decided', 'sandbox/mode', 'permission/preset',
  'subagent/descriptor', 'goal/change', 'session/title-llm-request',
  'tool/code-dispatch-start', 'tool/code-dispatch',
  'tool-workflow/run-start', 'tool-workflow/agent-start', 'tool-workflow/agent-end', 'tool-workflow/run-end',
])

/** Plugin-authored messages dsh produces itself (compared by surface op only: their text is product wording). */
export const COMPACTION_PLUGINS = new Set(['compact', 'compaction'])

/** Plugin-authored messages whose text comes from the scenario itself (hook output): compared in full. */
export const HOOK_PLUGINS = new Set(['hooks-claude-code', 'hooks-codex'])

/** Product-only events, dropped from both sides. */
export const MASKED = new Set(['session/title', 'approval/policy', 'session/end-seed'])

/** Event-type prefixes that name a capability dsh lacks (the scenario is skipped). */
export const CAPABILITIES: readonly [prefix: string, capability: string][] = [
  ['job/', 'background jobs'],
  ['workspace/', 'workspace instructions'],
]

export const SUPPORTED_OPS = new Set(['initialize', 'newSession', 'prompt', 'promptExpectError', 'promptAndCancel', 'waitForTurnEnd', 'promptContent',
  // Delegation waits: the driver waits for the whole agent tree to be quiet after every prompt.
  'waitForSubagentTurnEnd', 'waitForTurnStart', 'promptAndWaitForAgentMessage',
  // Goal rounds: a cancel of whatever turn hangs after the last prompt; the goal event lands before quiet.
  'cancel', 'waitForEventAfterTurnEnd'])

/**
 * How a recording presented tools (code mode): `both` where its tool schemas (the sidecar, else
 * the log's first request header) list `run_code` beside other tools, else `code` (the code-mode
 * scenarios share the sidecar of code-mode-turn, which lists `run_code` alone).
 */
export function recordedPresentation(dir: string, events: readonly { type: string; data: unknown }[] = []): 'code' | 'both' {
  const path = join(dir, 'tool-schemas.expected.json')
  let names: readonly string[] | undefined
  if (existsSync(path)) names = ((JSON.parse(readFileSync(path, 'utf8')) as { initial?: { name: string }[] }).initial ?? []).map(tool => tool.name)
  else {
    // Logs that keep the tool list (headless): the first request's tools, as schemas or names.
    const header = events.find(event => event.type === 'request/header')?.data as { header?: { tools?: unknown } } | undefined
    const tools = header?.header?.tools
    if (Array.isArray(tools)) names = tools.map(tool => typeof tool === 'string' ? tool : (tool as { name?: string }).name ?? '')
  }
  return (names ?? []).some(name => name !== RUN_CODE) ? 'both' : 'code'
}
