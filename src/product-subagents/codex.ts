/**
 * Codex (`codex exec --json`): one non-interactive, ephemeral run per call. Its JSONL events
 * (`thread.started`, `turn.started`, `item.completed` with `agent_message` items, `turn.completed`
 * or `turn.failed`, `error`) are read; the last agent message is the answer.
 */
import type { ProductDriver, ProductOutcome, ProductRequest, ProductToolConfig, StreamReader } from './api.js'
import { safeCategory } from './diagnostic.js'

const PRODUCT = 'Codex'

/** dsh's sandbox mode as Codex's own `--sandbox` (approvals never: nobody is there to answer). */
function sandboxArgs(mode: ProductRequest['mode'], override: string | undefined): string[] {
  if (override === 'dangerously-bypass-approvals-and-sandbox') return ['--dangerously-bypass-approvals-and-sandbox']
  const sandbox = override ?? mode
  return ['--sandbox', sandbox, '-c', 'approval_policy="never"']
}

const toml = (value: string) => JSON.stringify(value)

export const codexDriver: ProductDriver = {
  product: PRODUCT,
  defaultTool: 'subagent_codex',
  defaultCommand: 'codex',
  stateEnv: 'CODEX_HOME',
  args(tool: ProductToolConfig, request: ProductRequest): string[] {
    const args = ['exec', '--json', '--ephemeral', '--skip-git-repo-check', '--color', 'never', '-C', request.cwd, ...sandboxArgs(request.mode, tool.permissionMode)]
    if (tool.provider !== undefined) {
      const { id, baseUrl, envKey, wireApi } = tool.provider
      if (!/^[A-Za-z0-9_-]+$/.test(id)) throw new Error(`provider id ${JSON.stringify(id)} may hold only letters, digits, _ and -`)
      const fields = [`name = ${toml(id)}`, `wire_api = ${toml(wireApi ?? 'responses')}`]
      if (baseUrl !== undefined) fields.push(`base_url = ${toml(baseUrl)}`)
      if (envKey !== undefined) fields.push(`env_key = ${toml(envKey)}`)
      args.push('-c', `model_providers.${id}={ ${fields.join(', ')} }`, '-c', `model_provider=${toml(id)}`)
    }
    if (tool.model !== undefined) args.push('--model', tool.model)
    for (const [key, value] of Object.entries(tool.config ?? {})) args.push('-c', `${key}=${value}`)
    args.push(...tool.extraArgs ?? [], '-')
    return args
  },
  stdin: request => request.prompt,
  reader: () => new CodexReader(),
}

/** Category and HTTP status of a failed turn, from the status Codex reports (never its prose). */
function turnFailure(message: unknown): { category: string; httpStatus?: number } {
  const text = typeof message === 'string' ? message : ''
  const status = /\bstatus (\d{3})\b/.exec(text)?.[1]
  if (/context window|context_length_exceeded/i.test(text)) return { category: 'contextWindowExceeded' }
  if (status === undefined) return { category: /stream disconnected/i.test(text) ? 'responseStreamDisconnected' : 'other' }
  const code = Number(status)
  const category = code === 401 || code === 403 ? 'unauthorized' : code === 400 ? 'badRequest' : code === 429 ? 'usageLimitExceeded' : code === 500 ? 'internalServerError' : 'httpConnectionFailed'
  return { category, httpStatus: code }
}

class CodexReader implements StreamReader {
  private answer: string | undefined
  private texts: string[] = []
  private failed: { category: string; httpStatus?: number } | undefined
  private completed = false
  private started = false

  line(event: Record<string, unknown>): void {
    switch (event.type) {
      case 'thread.started':
      case 'turn.started':
        this.started = true
        break
      case 'item.completed': {
        const item = event.item as { type?: string; text?: unknown } | undefined
        if (item?.type === 'agent_message' && typeof item.text === 'string') {
          this.answer = item.text
          this.texts.push(item.text)
        }
        break
      }
      case 'turn.completed':
        this.completed = true
        break
      case 'turn.failed':
        this.failed = turnFailure((event.error as { message?: unknown } | undefined)?.message)
        break
      case 'error':
        this.failed ??= turnFailure(event.message)
        break
    }
  }

  partial(): string {
    return this.texts.join('\n\n')
  }

  finish(exit: { code: number | null; signal: string | null }): ProductOutcome {
    const process = { ...exit.code !== null && exit.code !== 0 ? { exitCode: exit.code } : {}, ...exit.signal !== null ? { signal: exit.signal } : {} }
    if (this.failed !== undefined) return { ok: false, facts: { product: PRODUCT, stage: 'turn', category: safeCategory(this.failed.category), ...this.failed.httpStatus !== undefined && { httpStatus: this.failed.httpStatus }, ...process }, partial: this.partial() }
    if (this.completed && exit.code === 0 && this.answer !== undefined && this.answer.trim() !== '') return { ok: true, text: this.answer }
    if (this.completed && exit.code === 0) return { ok: false, facts: { product: PRODUCT, stage: 'turn', category: 'missing-answer' }, partial: this.partial() }
    return { ok: false, facts: { product: PRODUCT, stage: this.started ? 'process' : 'spawn', category: 'process-exit', ...process }, partial: this.partial() }
  }
}
