/**
 * A terminal held by an editor client (ACP `terminal/create` and friends): while a surface
 * provides one for an agent's scope, `bash` runs its command there, so the editor shows it live.
 * The tool still decides everything else: approvals and escalations first, then the exact argv
 * (the sandbox runner's prefix included, so confinement does not depend on the editor), the
 * environment (secrets removed), the timeout and cancellation.
 */
import type { ScopeKey } from '../scope/index.js'

export interface EditorTerminalRequest {
  /** The tool call this command belongs to (the editor shows the terminal with it). */
  readonly callId: string
  /** Program and arguments, run as is (no shell of the editor's around them). */
  readonly argv: readonly string[]
  /** The whole environment of the command, secrets already removed. */
  readonly env: Readonly<Record<string, string>>
  /** Absolute working directory. */
  readonly cwd: string
  /** The editor keeps at most this many bytes of output (the end of it). */
  readonly outputByteLimit: number
  readonly timeoutMs: number
  /** Aborting kills the command. */
  readonly signal: AbortSignal
}

export interface EditorTerminalRun {
  /** stdout and stderr as the terminal captured them, interleaved. */
  readonly output: string
  /** The editor dropped the beginning of the output to stay within `outputByteLimit`. */
  readonly truncated: boolean
  readonly exitCode: number | null
  readonly signal: string | null
  readonly timedOut: boolean
  readonly aborted: boolean
  readonly durationMs: number
}

export interface EditorTerminal {
  /** Runs the command to its end (or timeout or abort: then it is killed); the terminal is released before this resolves. */
  run(request: EditorTerminalRequest): Promise<EditorTerminalRun>
}

const providers = new WeakMap<ScopeKey, EditorTerminal>()

/** Runs the `bash` calls of `scope` in `terminal`; the disposer restores local runs. */
export function provideEditorTerminal(scope: ScopeKey, terminal: EditorTerminal): () => void {
  providers.set(scope, terminal)
  return () => { if (providers.get(scope) === terminal) providers.delete(scope) }
}

/** The editor terminal provided for a tool call's scope, if any. */
export function editorTerminal(scope: ScopeKey | undefined): EditorTerminal | undefined {
  return scope === undefined ? undefined : providers.get(scope)
}
