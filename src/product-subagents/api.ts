/**
 * Product subagents: a task delegated to an external coding-agent CLI (Codex, Claude Code) run
 * as a child process. A driver knows one product: how to call its CLI non-interactively and how
 * to read its JSON event stream. The tool (`./tool.ts`) runs it in the foreground or as a job.
 */
import type { SandboxMode } from '../sandbox/modes.js'
import type { FailureFacts } from './diagnostic.js'

/** One configured tool of a product row. */
export interface ProductToolConfig {
  /** The tool's name (default `subagent_codex` / `subagent_claude_code`). */
  readonly name?: string
  /** The CLI: a command on PATH or a path, optionally with leading arguments (default `codex` / `claude`). */
  readonly command?: string | readonly string[]
  /** The child's model (`-m` / `--model`). */
  readonly model?: string
  /** Codex: a `model_providers` entry to use (`model_provider`), with its settings. */
  readonly provider?: { readonly id: string; readonly baseUrl?: string; readonly envKey?: string; readonly wireApi?: string }
  /** Extra `-c key=value` (Codex) or CLI arguments (both), passed through as given. */
  readonly config?: Readonly<Record<string, string>>
  readonly extraArgs?: readonly string[]
  /** Claude Code: `--max-turns`. */
  readonly maxTurns?: number
  /** Claude Code: `--max-budget-usd`. */
  readonly maxBudgetUsd?: number
  /** The product's own permission mode instead of the one mapped from the sandbox mode. */
  readonly permissionMode?: string
  /** Environment for the child over the scrubbed one: the product's key and endpoint (`OPENAI_API_KEY`, `ANTHROPIC_API_KEY`...). */
  readonly env?: Readonly<Record<string, string>>
  /** Names of the parent's secrets passed through to the child (the product's own key). */
  readonly passEnv?: readonly string[]
  /** SIGTERM → SIGKILL grace when the child is stopped (default 2000 ms). */
  readonly killGraceMs?: number
}

export interface ProductRequest {
  readonly prompt: string
  readonly cwd: string
  /** The parent's effective sandbox mode (mapped to the CLI's own sandbox or permission flags). */
  readonly mode: SandboxMode
}

/** How one run ended. */
export type ProductOutcome =
  | { readonly ok: true; readonly text: string }
  | { readonly ok: false; readonly facts: FailureFacts; readonly partial: string }

/** Reads the child's stdout, one JSON object a line. */
export interface StreamReader {
  line(event: Record<string, unknown>): void
  /** Assistant text seen so far (the partial output of a failed run). */
  partial(): string
  /** The outcome once the process has exited. */
  finish(exit: { code: number | null; signal: string | null }): ProductOutcome
}

export interface ProductDriver {
  /** Display name in diagnostics. */
  readonly product: string
  readonly defaultTool: string
  readonly defaultCommand: string
  /**
   * The variable naming the folder the CLI writes its own state in (`CODEX_HOME`,
   * `CLAUDE_CONFIG_DIR`): under a confining mode a private folder per run (`./tool.ts`).
   */
  readonly stateEnv: string
  /**
   * The variable naming the CLI's own temp folder, when it needs one written even under
   * read-only (Claude Code: `CLAUDE_CODE_TMPDIR`, else `/tmp/claude-<uid>`): `tmp` in the state folder.
   */
  readonly tempEnv?: string
  /** Arguments after the command. */
  args(tool: ProductToolConfig, request: ProductRequest): string[]
  /** What the child reads on stdin (the prompt: it stays out of the process list). */
  stdin(request: ProductRequest): string
  reader(): StreamReader
}

/** Data of `product-subagent/finished`. */
export interface ProductRunFinished {
  readonly sessionId: string
  readonly callId: string
  readonly tool: string
  readonly product: string
  readonly background: boolean
  readonly status: 'completed' | 'failed' | 'cancelled'
  readonly diagnostic?: string
}

/** Data of `product-subagent/started`. */
export interface ProductRunStarted {
  readonly sessionId: string
  readonly callId: string
  readonly tool: string
  readonly product: string
  /** The child's pid: the leader of its process group. */
  readonly pid: number
}

declare module 'cordis' {
  interface Events {
    /** @mode emit (contained). A product subagent's CLI process started. */
    'product-subagent/started'(info: ProductRunStarted): void
    /** @mode emit (contained). A product subagent run ended (foreground or background). */
    'product-subagent/finished'(info: ProductRunFinished): void
  }
}
