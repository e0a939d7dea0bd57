/**
 * `/cost` and `/context`, as Claude Code names them: what the session has cost so far (from the
 * log, as `/status` and the web's trajectory count it), and what fills the context window the
 * model last saw: the measured total, split into an estimate of the system prompt, the tool
 * schemas and the conversation (the rest).
 */
import type { Context } from 'cordis'
import type { SessionEvent } from '../session/types.js'
import { priceOf, trajectoryOf, type PriceTable } from '../session/trajectory.js'
import { compactNumber } from '../host/numbers.js'
import type { SlashCommand } from './api.js'

const row = (label: string, value: string) => `${label.padEnd(14)}${value}`
const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`
const dollars = (usd: number) => `$${usd.toFixed(4)}`

/** Characters per token of the estimate (English prose and JSON average about four). */
const CHARS_PER_TOKEN = 4

export function costCommand(prices: PriceTable): SlashCommand {
  return {
    name: 'cost',
    description: 'What this session has cost so far: in all, by model and for the last turn',
    run({ agent }) {
      const { turns, totals } = trajectoryOf(agent.session.events, prices)
      const { provider, model } = agent.config
      if (totals.steps === 0) {
        return { kind: 'success', text: priceOf(prices, provider, model) === undefined
          ? `Nothing spent yet; no price for ${model} (add model.prices to settings.yaml).`
          : 'Nothing spent yet: $0.0000.' }
      }
      const byModel = new Map<string, { cost: number; steps: number; unpriced: number }>()
      for (const step of turns.flatMap(turn => turn.steps)) {
        const key = step.model ?? '(unknown model)'
        const entry = byModel.get(key) ?? { cost: 0, steps: 0, unpriced: 0 }
        entry.steps += 1
        if (step.cost === null) entry.unpriced += 1
        else entry.cost += step.cost
        byModel.set(key, entry)
      }
      const total = totals.cost === null ? 'unknown'
        : totals.unpricedSteps === 0 ? dollars(totals.cost) : `${dollars(totals.cost)} and ${plural(totals.unpricedSteps, 'step')} without a price`
      const lines = [row('Total', `${total} (${plural(turns.length, 'turn')}, ${plural(totals.steps, 'step')})`)]
      for (const [name, entry] of byModel) {
        lines.push(row(byModel.size === 1 ? 'Model' : '', `${name}: ${entry.unpriced === entry.steps ? 'no price (add model.prices to settings.yaml)' : dollars(entry.cost)}${entry.unpriced > 0 && entry.unpriced < entry.steps ? `, ${plural(entry.unpriced, 'step')} unpriced` : ''} · ${plural(entry.steps, 'step')}`))
      }
      const { inputTokens, cachedTokens, outputTokens, reasoningTokens } = totals.usage
      lines.push(row('Tokens', `${compactNumber(inputTokens + cachedTokens)} in${cachedTokens > 0 ? ` (${compactNumber(cachedTokens)} cached)` : ''} · ${compactNumber(outputTokens)} out${reasoningTokens > 0 ? ` (${compactNumber(reasoningTokens)} reasoning)` : ''}`))
      const last = turns.at(-1)
      if (last !== undefined && turns.length > 1) lines.push(row('Last turn', last.cost === null ? 'no price' : dollars(last.cost)))
      return { kind: 'success', text: lines.join('\n') }
    },
  }
}

interface Header { readonly system?: string; readonly tools?: readonly unknown[] }

/** The last request's header and the context its answer left (prompt, cached or not, and the answer). */
function lastRequest(events: readonly SessionEvent[]): { header?: Header; used: number } {
  let used = 0
  let header: Header | undefined
  for (let index = events.length - 1; index >= 0 && (used === 0 || header === undefined); index -= 1) {
    const event = events[index]!
    if (used === 0 && event.type === 'assistant/message') {
      const usage = (event.data as { usage?: { inputTokens?: number; cacheReadTokens?: number; cacheWriteTokens?: number; outputTokens?: number } }).usage
      if (usage?.inputTokens !== undefined) used = usage.inputTokens + (usage.cacheReadTokens ?? 0) + (usage.cacheWriteTokens ?? 0) + (usage.outputTokens ?? 0)
    } else if (header === undefined && event.type === 'request/header') header = (event.data as { header?: Header }).header
  }
  return { ...header !== undefined && { header }, used }
}

export function contextCommand(ctx: Context): SlashCommand {
  return {
    name: 'context',
    description: 'What fills the context window: system prompt, tools and conversation',
    run({ agent }) {
      const { provider, model } = agent.config
      const window = ctx.get('llm')?.models().find(info => info.provider === provider && info.model === model)?.contextWindow
      const { header, used } = lastRequest(agent.session.events)
      if (used === 0) return { kind: 'success', text: `No request answered yet${window !== undefined ? `; ${model} has a window of ${compactNumber(window)} tokens` : ''}.` }
      const share = (n: number) => window === undefined ? '' : ` (${n / window < 0.01 ? '<1' : Math.round((n / window) * 100)}%)`
      const system = Math.round((header?.system?.length ?? 0) / CHARS_PER_TOKEN)
      const tools = Math.round(JSON.stringify(header?.tools ?? []).length / CHARS_PER_TOKEN)
      const conversation = Math.max(0, used - system - tools)
      const lines = [
        row('Context', `${compactNumber(used)}${window !== undefined ? ` of ${compactNumber(window)}` : ''}${share(used)}, as of the last answer`),
        row('  System', `~${compactNumber(system)} (estimated)`),
        row('  Tools', `~${compactNumber(tools)} (${plural(header?.tools?.length ?? 0, 'tool')}, estimated)`),
        row('  Messages', `~${compactNumber(conversation)} (the rest)`),
      ]
      if (window !== undefined) lines.push(row('Free', `${compactNumber(Math.max(0, window - used))}${share(Math.max(0, window - used))}`))
      return { kind: 'success', text: lines.join('\n') }
    },
  }
}
