/**
 * Claude Code (`claude -p --output-format stream-json --verbose`): one non-interactive query per
 * call, no session kept. Its stream-json messages are read; the `result` message decides: a
 * `success` that is not an error gives the answer, an error subtype (`error_max_turns`,
 * `error_max_budget_usd`, `error_during_execution`...) is the failure's category.
 */
import type { ProductDriver, ProductOutcome, ProductRequest, ProductToolConfig, StreamReader } from './api.js'
import { safeCategory } from './diagnostic.js'

const PRODUCT = 'Claude Code'

/**
 * dsh's sandbox mode as Claude Code's permission mode (nobody answers its prompts). The CLI
 * refuses to bypass its checks when run as root: there full access stays at accepting edits.
 */
function permissionMode(mode: ProductRequest['mode']): string {
  if (mode === 'danger-full-access') return process.getuid?.() === 0 ? 'acceptEdits' : 'bypassPermissions'
  return mode === 'workspace-write' ? 'acceptEdits' : 'dontAsk'
}

export const claudeCodeDriver: ProductDriver = {
  product: PRODUCT,
  defaultTool: 'subagent_claude_code',
  defaultCommand: 'claude',
  stateEnv: 'CLAUDE_CONFIG_DIR',
  tempEnv: 'CLAUDE_CODE_TMPDIR',
  args(tool: ProductToolConfig, request: ProductRequest): string[] {
    const args = ['-p', '--output-format', 'stream-json', '--verbose', '--no-session-persistence', '--permission-mode', tool.permissionMode ?? permissionMode(request.mode),
      // Nobody is there to answer a question.
      '--disallowed-tools', 'AskUserQuestion']
    if (tool.model !== undefined) args.push('--model', tool.model)
    if (tool.maxTurns !== undefined) args.push('--max-turns', String(tool.maxTurns))
    if (tool.maxBudgetUsd !== undefined) args.push('--max-budget-usd', String(tool.maxBudgetUsd))
    args.push(...tool.extraArgs ?? [])
    return args
  },
  stdin: request => request.prompt,
  reader: () => new ClaudeReader(),
}

class ClaudeReader implements StreamReader {
  private texts: string[] = []
  private result: Record<string, unknown> | undefined
  private started = false

  line(event: Record<string, unknown>): void {
    if (event.type === 'system') this.started = true
    else if (event.type === 'assistant') {
      this.started = true
      const message = event.message as { content?: unknown; model?: unknown } | undefined
      // The CLI's own notes written as assistant messages (API errors) are product prose, not the model's.
      if (message?.model === '<synthetic>' || !Array.isArray(message?.content)) return
      const content = message.content as unknown[]
      const text = content.filter((block): block is { type: 'text'; text: string } => (block as { type?: unknown } | null)?.type === 'text' && typeof (block as { text?: unknown }).text === 'string').map(block => block.text).join('')
      if (text !== '') this.texts.push(text)
    } else if (event.type === 'result') this.result = event
  }

  partial(): string {
    return this.texts.join('\n\n')
  }

  finish(exit: { code: number | null; signal: string | null }): ProductOutcome {
    const process = { ...exit.code !== null && exit.code !== 0 ? { exitCode: exit.code } : {}, ...exit.signal !== null ? { signal: exit.signal } : {} }
    const result = this.result
    if (result === undefined) return { ok: false, facts: { product: PRODUCT, stage: this.started ? 'process' : 'query-start', category: 'process-exit', ...process }, partial: this.partial() }
    if (result.subtype === 'success' && result.is_error !== true && typeof result.result === 'string' && result.result.trim() !== '') return { ok: true, text: result.result }
    const status = typeof result.api_error_status === 'number' ? { httpStatus: result.api_error_status } : {}
    const category = result.subtype === 'success' ? (status.httpStatus !== undefined ? 'api_error' : 'invalid-success') : safeCategory(result.subtype)
    return { ok: false, facts: { product: PRODUCT, stage: 'query-run', category, ...status, ...process }, partial: this.partial() }
  }
}
