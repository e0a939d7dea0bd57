/**
 * The slash-command registry (`ctx.commands`, API and usage in ./api.ts, docs/commands.md) and
 * the commands that belong to no other plugin (`/model`). Other plugins add theirs:
 * compaction `/compact`, skills `/skills` and one command per user-invocable skill.
 */
import { randomBytes } from 'node:crypto'
import { Context, Service } from 'cordis'
import { emitContained } from '../kernel/index.js'
import { contextScope, ScopedLayers, type ScopeKey } from '../scope/index.js'
import type { EventDataValidator, SessionEvent } from '../session/types.js'
import { priceOf, trajectoryOf, type PriceTable } from '../session/trajectory.js'
import { compactNumber } from '../host/numbers.js'
import '../llm/api.js'
import type {} from '../llm/presets/index.js'
import { availableModels, findRoute } from '../host/route.js'
import type { Agent } from '../agent/api.js'
import '../approval/api.js'
import { NETWORK_MODES, type NetworkMode } from '../sandbox/modes.js'
import type { CommandOutcome, CommandsService, ExecuteOptions, SlashCommand } from './api.js'
import { contextCommand, costCommand } from './usage.js'

export * from './api.js'

const NAME = /^[a-z0-9][a-z0-9_:-]*$/i
const SLASH = /^\/([A-Za-z0-9][A-Za-z0-9_:-]*)(\s[\s\S]*)?$/

const validateRun: EventDataValidator = (data) => {
  const d = data as Record<string, unknown>
  if (typeof d !== 'object' || d === null || typeof d.commandId !== 'string' || typeof d.name !== 'string') return 'command/run needs string commandId and name'
  if (d.args !== undefined && typeof d.args !== 'string') return 'command/run args must be a string'
  return null
}

const validateDone: EventDataValidator = (data) => {
  const d = data as Record<string, unknown>
  if (typeof d !== 'object' || d === null || typeof d.commandId !== 'string' || typeof d.kind !== 'string') return 'command/done needs string commandId and kind'
  if (d.text !== undefined && typeof d.text !== 'string') return 'command/done text must be a string'
  return null
}

export interface CommandsConfig {
  /** USD per million tokens by model or provider/model, for `/status` (settings `model.prices`). */
  readonly prices?: PriceTable
}

export class CommandsPlugin extends Service implements CommandsService {
  static readonly inject = ['sessions']

  private readonly layers = new ScopedLayers<SlashCommand>('command')
  private readonly prefix = `cmd-${randomBytes(4).toString('hex')}`
  private counter = 0

  constructor(ctx: Context, config: CommandsConfig = {}) {
    super(ctx, 'commands')
    ctx.effect(() => ctx.sessions.registerEventType({ type: 'command/run', owner: 'commands', validate: validateRun }))
    ctx.effect(() => ctx.sessions.registerEventType({ type: 'command/done', owner: 'commands', validate: validateDone }))
    this.register(modelCommand(ctx))
    this.register(statusCommand(ctx, config.prices ?? {}))
    this.register(costCommand(config.prices ?? {}))
    this.register(contextCommand(ctx))
    ctx.inject(['approval'], (inner) => {
      inner.effect(() => this.register(permissionCommand(inner)))
      inner.effect(() => this.register(networkCommand(inner)))
    })
  }

  register(command: SlashCommand, scope: ScopeKey | undefined = contextScope(this.ctx)): () => void {
    if (typeof command?.name !== 'string' || !NAME.test(command.name)) throw new TypeError(`dsh-commands: command name ${JSON.stringify(command?.name)} must match ${NAME}`)
    if (typeof command.run !== 'function') throw new TypeError(`dsh-commands: command ${command.name} needs a run function`)
    if (typeof command.description !== 'string') throw new TypeError(`dsh-commands: command ${command.name} needs a description`)
    const dispose = this.ctx.effect(() => {
      const remove = this.layers.register(command, scope)
      this.changed()
      return () => { remove(); this.changed() }
    }, `command:${command.name}`)
    return () => { void dispose() }
  }

  get(name: string, scope?: ScopeKey): SlashCommand | undefined {
    return this.layers.get(name, scope)
  }

  list(scope?: ScopeKey): readonly SlashCommand[] {
    return this.layers.view(scope).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
  }

  parse(text: string): { name: string; args: string } | undefined {
    const match = SLASH.exec(text.replace(/\s+$/, ''))
    if (match === null) return undefined
    return { name: match[1]!, args: match[2] ?? '' }
  }

  async execute(agent: Agent, text: string, options: ExecuteOptions = {}): Promise<CommandOutcome | undefined> {
    const parsed = this.parse(text)
    if (parsed === undefined) return undefined
    const command = this.get(parsed.name, agent.scope)
    if (command === undefined) return undefined
    const source = options.source ?? { kind: 'user' as const }
    const commandId = `${this.prefix}-${++this.counter}`
    const session = agent.session
    session.append('command/run', { commandId, name: command.name, ...(parsed.args !== '' ? { args: parsed.args } : {}), source })
    let outcome: CommandOutcome
    try {
      outcome = await command.run({ agent, args: parsed.args, source, signal: options.signal ?? new AbortController().signal })
      if (outcome === null || typeof outcome !== 'object' || !['success', 'error', 'prompt'].includes(outcome.kind)) {
        outcome = { kind: 'error', text: `/${command.name} returned no outcome` }
      }
    } catch (error) {
      outcome = { kind: 'error', text: `/${command.name} failed: ${error instanceof Error ? error.message : String(error)}` }
    }
    session.append('command/done', { commandId, kind: outcome.kind, ...(outcome.text !== undefined ? { text: outcome.text } : {}) })
    if (outcome.kind === 'prompt' && options.queue !== false) {
      // `/model` may have replaced the agent: queue on the live one.
      const live = this.ctx.get('agents')?.get(agent.id) ?? agent
      live.followup(outcome.input)
    }
    return outcome
  }

  private changed(): void {
    emitContained(this.ctx, 'commands/changed', [])
  }
}

/** `/permission [preset]`: show the preset in force, or switch it between turns (AP-5). */
function permissionCommand(ctx: Context): SlashCommand {
  return {
    name: 'permission',
    description: 'Show the permission preset, or switch to read-only, workspace-write or danger-full-access',
    argumentHint: '[preset]',
    run({ agent, args }) {
      const approval = ctx.approval
      const session = agent.session
      const names = approval.presets().map(p => p.name)
      const current = () => `Permission preset: ${approval.preset(session)} (sandbox ${approval.mode(session)}, approvals ${approval.policy(session)})`
      const wanted = args.trim()
      if (wanted === '') return { kind: 'success', text: `${current()}\nPresets: ${names.join(', ')}` }
      const preset = names.find(name => name === wanted)
      if (preset === undefined) return { kind: 'error', text: `Unknown permission preset ${JSON.stringify(wanted)}. Presets: ${names.join(', ')}` }
      approval.selectPreset(session, preset)
      return { kind: 'success', text: current() }
    },
  }
}

/** What each network mode means for sandboxed commands (`/network` lists them). */
export const NETWORK_TEXT: Readonly<Record<NetworkMode, string>> = {
  full: "share this machine's network",
  allowlist: 'only hosts in sandbox.allowedHosts (a proxy asks about others)',
  none: 'no network at all',
}

/**
 * `/network [full|allowlist|none]`: show the network mode of sandboxed commands and what each
 * means, or switch it (logged as `sandbox/network` only when it changes).
 */
function networkCommand(ctx: Context): SlashCommand {
  return {
    name: 'network',
    description: 'Show the network mode of sandboxed commands, or switch to full, allowlist or none',
    argumentHint: '[full|allowlist|none]',
    run({ agent, args }) {
      const approval = ctx.approval
      const session = agent.session
      const wanted = args.trim()
      const unconfined = () => approval.mode(session) === 'danger-full-access'
        ? ['The sandbox is danger-full-access: commands run unconfined, so this applies once the sandbox confines them again.'] : []
      if (wanted === '') {
        const current = approval.network(session)
        const width = Math.max(...NETWORK_MODES.map(mode => mode.length))
        const rows = NETWORK_MODES.map(mode => `${mode === current ? '*' : ' '} ${mode.padEnd(width)}  ${NETWORK_TEXT[mode]}`)
        return { kind: 'success', text: [`Network of sandboxed commands: ${current}`, ...rows, ...unconfined(), `Switch with /network ${NETWORK_MODES.join('|')}`].join('\n') }
      }
      const mode = NETWORK_MODES.find(name => name === wanted)
      if (mode === undefined) return { kind: 'error', text: `Unknown network mode ${JSON.stringify(wanted)}. Modes: ${NETWORK_MODES.join(', ')}` }
      approval.setNetwork(session, mode)
      return { kind: 'success', text: [`Network of sandboxed commands: ${mode} — ${NETWORK_TEXT[mode]}`, ...unconfined()].join('\n') }
    },
  }
}

/** `/model [name]`: show the route and the catalogue, or switch between turns. */
function modelCommand(ctx: Context): SlashCommand {
  return {
    name: 'model',
    description: 'Show the model, or switch to another one for the next turns',
    argumentHint: '[model]',
    async run({ agent, args }) {
      const llm = ctx.get('llm')
      const models = llm?.models() ?? []
      const wanted = args.trim()
      if (wanted === '') {
        const names = models.map(info => info.model === agent.config.model && info.provider === agent.config.provider ? `* ${info.model}` : `  ${info.model}`)
        const presets = ctx.get('llmPresets')?.hint()
        return { kind: 'success', text: `Model: ${agent.config.model} (${agent.config.provider})${names.length > 0 ? `\nAvailable:\n${names.join('\n')}` : ''}${presets === undefined ? '' : `\nOr a provider's model, ${presets}: /model openai/gpt-5, /model anthropic/claude-sonnet-4-5, /model ollama/llama3.2`}` }
      }
      let found: { provider: string; model: string } | undefined
      try {
        found = llm === undefined ? undefined : findRoute(ctx, wanted)
      } catch (error) {
        return { kind: 'error', text: (error as Error).message }
      }
      if (found === undefined) return { kind: 'error', text: `Unknown model "${wanted}" (${llm === undefined ? 'available: none' : availableModels(ctx)})` }
      if (agent.status === 'running') return { kind: 'error', text: 'The model can change between turns: stop the running turn first.' }
      const agents = ctx.get('agents')
      if (agents === undefined) return { kind: 'error', text: 'No agent registry is loaded.' }
      // The route is fixed per agent; the inbox lives in the log, so a new agent keeps it.
      const { id } = agent
      const cwd = agent.session.header.cwd
      await agents.dispose(id)
      agents.create({ sessionId: id, ...(cwd !== undefined ? { cwd } : {}), loop: { provider: found.provider, model: found.model } })
      return { kind: 'success', text: `Model: ${found.model} (${found.provider})` }
    },
  }
}

/**
 * `/status`: the session, its folder, model and permission, the tokens so far, the context in use
 * and the cost (from the log, as the web's trajectory counts them).
 */
function statusCommand(ctx: Context, prices: PriceTable): SlashCommand {
  return {
    name: 'status',
    description: 'Session, folder, model, permission, tokens, context in use and cost so far',
    run({ agent }) {
      const session = agent.session
      const { totals } = trajectoryOf(session.events, prices)
      const { provider, model } = agent.config
      const row = (label: string, value: string) => `${label.padEnd(12)}${value}`
      const turns = session.position.turn
      const lines = [
        row('Session', `${agent.id} (${turns} turn${turns === 1 ? '' : 's'}, ${totals.steps} step${totals.steps === 1 ? '' : 's'})`),
        row('Folder', session.header.cwd ?? '(none)'),
        row('Model', `${model} (${provider})`),
      ]
      const approval = ctx.get('approval')
      if (approval !== undefined) {
        lines.push(row('Permission', `${approval.preset(session)} (sandbox ${approval.mode(session)}, approvals ${approval.policy(session)})`))
      }
      const { inputTokens, cachedTokens, outputTokens, reasoningTokens } = totals.usage
      const prompt = inputTokens + cachedTokens
      lines.push(row('Tokens', prompt + outputTokens === 0 ? 'none yet'
        : `${compactNumber(prompt)} in${cachedTokens > 0 ? ` (${compactNumber(cachedTokens)} cached)` : ''} · ${compactNumber(outputTokens)} out${reasoningTokens > 0 ? ` (${compactNumber(reasoningTokens)} reasoning)` : ''}`))
      const window = ctx.get('llm')?.models().find(info => info.provider === provider && info.model === model)?.contextWindow
      const used = lastContextTokens(session.events)
      if (window !== undefined && used > 0) lines.push(row('Context', `${compactNumber(used)} of ${compactNumber(window)} (${used / window < 0.01 ? '<1' : Math.round((used / window) * 100)}%)`))
      lines.push(row('Cost', totals.cost !== null && totals.unpricedSteps === 0 ? `$${totals.cost.toFixed(4)}`
        : totals.cost !== null ? `$${totals.cost.toFixed(4)} and ${totals.unpricedSteps} step${totals.unpricedSteps === 1 ? '' : 's'} without a price`
        : totals.steps === 0 && priceOf(prices, provider, model) !== undefined ? '$0.0000'
        : `unknown: no price for ${model} (add model.prices to settings.yaml)`))
      return { kind: 'success', text: lines.join('\n') }
    },
  }
}

/** The tokens of the last answered request: its prompt (cached or not) and its answer. */
function lastContextTokens(events: readonly SessionEvent[]): number {
  for (let index = events.length - 1; index >= 0; index -= 1) {
    const event = events[index]!
    if (event.type !== 'assistant/message') continue
    const usage = (event.data as { usage?: { inputTokens?: number; cacheReadTokens?: number; cacheWriteTokens?: number; outputTokens?: number } }).usage
    if (usage?.inputTokens === undefined) continue
    return usage.inputTokens + (usage.cacheReadTokens ?? 0) + (usage.cacheWriteTokens ?? 0) + (usage.outputTokens ?? 0)
  }
  return 0
}
