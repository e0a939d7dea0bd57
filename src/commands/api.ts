/**
 * `ctx.commands`: the one slash-command registry every surface uses (docs/commands.md).
 *
 * ## For plugins that add commands
 *
 * ```ts
 * ctx.inject(['commands'], (ctx) => {
 *   ctx.commands.register({
 *     name: 'hello',                       // typed as `/hello`
 *     description: 'Say hello',            // shown in completion lists
 *     argumentHint: '[name]',              // optional, shown after the name
 *     run: ({ agent, args }) => ({ kind: 'success', text: `hello${args}` }),
 *   })                                     // returns a disposer; unloading the plugin removes it
 * })
 * ```
 *
 * A command runs between turns, never as model input. Its outcome is one of:
 * - `{kind:'success', text?}` / `{kind:'error', text}`: shown to the user, nothing reaches the model;
 * - `{kind:'prompt', input, text?}`: `input` is queued as the next turn's user input (a skill's
 *   instructions, say), so the command continues as a normal turn.
 *
 * ## For surfaces (headless, ACP, web, terminal apps)
 *
 * - Prompt text: call `ctx.commands.execute(agent, text)` first. `undefined` means "not a
 *   command": send the text to the agent as usual. Otherwise the command ran (logged as
 *   `command/run` ... `command/done`) and the returned outcome says what to show; for
 *   `prompt` outcomes the input is already queued (`agent.followup`) unless `queue:false`.
 * - Completion / advertised lists: `ctx.commands.list(agent.scope)` (sorted by name), and the
 *   `commands/changed` event (emit) whenever the set changes (ACP `available_commands_update`).
 * - Re-read the agent after a command (`ctx.agents.get(id)`): `/model` replaces it.
 */
import type {} from 'cordis'
import type { Agent } from '../agent/api.js'
import type { AgentInput } from '../agent/api.js'
import type { MessageSource } from '../llm/types.js'
import type { ScopeKey } from '../scope/index.js'

export interface CommandContext {
  readonly agent: Agent
  /** Argument text after the name exactly as typed (the leading space kept, as the log records it). */
  readonly args: string
  /** Who typed it (`{kind:'user'}` from every surface). */
  readonly source: MessageSource
  readonly signal: AbortSignal
}

export type CommandOutcome =
  | { readonly kind: 'success'; readonly text?: string }
  | { readonly kind: 'error'; readonly text: string }
  | { readonly kind: 'prompt'; readonly input: AgentInput; readonly text?: string }

export interface SlashCommand {
  /** Without the slash: `[a-z0-9][a-z0-9_:-]*`. */
  readonly name: string
  readonly description: string
  readonly argumentHint?: string
  run(context: CommandContext): CommandOutcome | Promise<CommandOutcome>
}

export interface ExecuteOptions {
  readonly source?: MessageSource
  readonly signal?: AbortSignal
  /** Queue a `prompt` outcome's input with `agent.followup` (default true). */
  readonly queue?: boolean
}

export interface CommandsService {
  /** Registers globally or for one agent scope; the disposer removes it. Names are unique per layer. */
  register(command: SlashCommand, scope?: ScopeKey): () => void
  get(name: string, scope?: ScopeKey): SlashCommand | undefined
  /** Visible from `scope`, sorted by name. */
  list(scope?: ScopeKey): readonly SlashCommand[]
  /** `/name args` -> `{name, args}` (args keep their leading space); undefined when not slash syntax. */
  parse(text: string): { readonly name: string; readonly args: string } | undefined
  /**
   * Runs `text` as a command when it names a registered one (else `undefined`): appends
   * `command/run`, runs it, appends `command/done`. Never throws for a failing command.
   */
  execute(agent: Agent, text: string, options?: ExecuteOptions): Promise<CommandOutcome | undefined>
}

/** `command/run`: a slash command started (outside any turn). */
export interface CommandRunData {
  readonly commandId: string
  readonly name: string
  readonly args?: string
  readonly source?: MessageSource
}

/** `command/done`: its outcome (`success`, `error` or `prompt`) and the text shown. */
export interface CommandDoneData {
  readonly commandId: string
  readonly kind: CommandOutcome['kind']
  readonly text?: string
}

declare module 'cordis' {
  interface Context {
    commands: CommandsService
  }
  interface Events {
    /** @mode emit (contained). The set of registered commands changed. */
    'commands/changed'(): void
  }
}

declare module '../session/types.js' {
  interface SessionEventMap {
    'command/run': CommandRunData
    'command/done': CommandDoneData
  }
}
