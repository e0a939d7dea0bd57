/**
 * The repeat-tool reminder (row `guard-repeat-tool`, docs/guards.md): an advisory nudge for an
 * agent that keeps making the same tool call. It is no tool and changes no call or result.
 *
 * - Per agent (its scope), it counts the run of consecutive calls the model made to the same tool
 *   with the same canonical arguments (`./canonical.ts`). A different tracked call starts a new
 *   run at 1; an untracked one (`include` / `exclude`) leaves the run as it is; a message the user
 *   wrote (claimed at a step) ends it. Denied and failed calls count: a call the model keeps
 *   making against a refusal is the loop worth breaking.
 * - When the run reaches one of `thresholds` (default 3, 5, 8), the agent gets a user message
 *   with source `{kind:'plugin', plugin:'repeat-tool-reminder', form:'reminder', ...}` through
 *   `agent.inject`: logged, and read at the next step, after the step's tool results, so the next
 *   request stays a function of the log. The first threshold gets a short nudge, the later ones
 *   the detailed form naming the tool, the count and the arguments (cut to
 *   `argumentsPreviewChars`). Past the highest threshold it says nothing more.
 * - The model's own calls only: calls a program makes (code mode's inner calls) and calls made
 *   outside any agent are not counted.
 * - O(1) per call. The state of an agent is rebuilt from its log the first time it is seen, so an
 *   agent loaded again mid-run (a resumed session) counts on from where its log stands.
 */
import { randomUUID } from 'node:crypto'
import type { Context } from 'cordis'
import type { Agent, PreStepDecision, PreStepPayload } from '../agent/api.js'
import type { UserMessage } from '../llm/types.js'
import type { ScopeKey } from '../scope/index.js'
import type { Session } from '../session/api.js'
import type { ToolExecution } from '../tools/api.js'
import { canonicalArguments } from './canonical.js'
import { namePatterns, type NamePattern } from './patterns.js'

export const REPEAT_TOOL_PLUGIN = 'repeat-tool-reminder'

export interface RepeatToolConfig {
  /** Run lengths that send a reminder (default `[3, 5, 8]`): integers of at least 2, no duplicates. */
  readonly thresholds?: readonly number[]
  /** Tool-name patterns counted (`*` wildcards); empty or absent: every tool. */
  readonly include?: readonly string[]
  /** Tool-name patterns left out of the count, transparent to a run (default `['todo_write']`). */
  readonly exclude?: readonly string[]
  /** The detailed reminder quotes at most this many characters of the arguments (default 500). */
  readonly argumentsPreviewChars?: number
}

export const REPEAT_TOOL_DEFAULTS = { thresholds: [3, 5, 8], exclude: ['todo_write'], argumentsPreviewChars: 500 } as const

/** The first reminder: short, no details. */
export const FIRST_REMINDER = 'You have made the same tool call with the same arguments several times in a row. Look at what the last result told you before calling it again: if it did not move the task forward, change the arguments or the approach instead of repeating the call.'

/** A later reminder: which call, how many times, with which arguments. */
export function detailedReminder(tool: string, count: number, args: string): string {
  return [
    `Repeated tool call: ${tool}, ${count} times in a row with the same arguments:`,
    args,
    'Repeating it is not getting anywhere. Do not make this exact call again: read the latest result, then take another action, use different arguments, or finish if you already have what you need.',
  ].join('\n')
}

/** `text` cut to `max` characters, with how many were left out. */
export function previewArguments(text: string, max: number): string {
  const chars = [...text]
  return chars.length <= max ? text : `${chars.slice(0, max).join('')}… (+${chars.length - max} more chars)`
}

interface Run {
  /** `name\0canonical arguments` of the run's call; undefined before any tracked call. */
  key: string | undefined
  name: string
  args: string
  count: number
}

interface Settings {
  readonly thresholds: readonly number[]
  readonly include: readonly NamePattern[]
  readonly exclude: readonly NamePattern[]
  readonly previewChars: number
}

function settingsOf(config: RepeatToolConfig): Settings {
  const where = 'guard-repeat-tool'
  const thresholds = config.thresholds ?? REPEAT_TOOL_DEFAULTS.thresholds
  if (!Array.isArray(thresholds) || thresholds.length === 0) throw new TypeError(`${where}: thresholds must be a non-empty list of integers of at least 2, not ${JSON.stringify(thresholds)}`)
  for (const value of thresholds) {
    if (!Number.isInteger(value) || value < 2) throw new TypeError(`${where}: thresholds must be integers of at least 2, not ${JSON.stringify(value)}`)
  }
  if (new Set(thresholds).size !== thresholds.length) throw new TypeError(`${where}: thresholds must not repeat a value (${JSON.stringify(thresholds)})`)
  const previewChars = config.argumentsPreviewChars ?? REPEAT_TOOL_DEFAULTS.argumentsPreviewChars
  if (!Number.isInteger(previewChars) || previewChars < 1) throw new TypeError(`${where}: argumentsPreviewChars must be an integer of at least 1, not ${JSON.stringify(previewChars)}`)
  return {
    thresholds: [...thresholds].sort((a, b) => a - b),
    include: namePatterns(config.include, `${where}: include`),
    exclude: namePatterns(config.exclude ?? REPEAT_TOOL_DEFAULTS.exclude, `${where}: exclude`),
    previewChars,
  }
}

export class RepeatToolReminderPlugin {
  static readonly inject = ['tools']
  private readonly settings: Settings
  /** Per agent scope; an agent that is gone takes its entry with it. */
  private readonly runs = new WeakMap<ScopeKey, Run>()

  constructor(private readonly ctx: Context, config: RepeatToolConfig = {}) {
    this.settings = settingsOf(config)
    ctx.on('agent/pre-step', (payload, next) => this.preStep(payload, next))
    ctx.on('tools/result', (execution) => this.called(execution))
  }

  private tracked(name: string): boolean {
    const { include, exclude } = this.settings
    if (include.length > 0 && !include.some(pattern => pattern.test(name))) return false
    return !exclude.some(pattern => pattern.test(name))
  }

  /** A message the user wrote, claimed at this step, ends the run; a new agent's run comes from its log. */
  private preStep(payload: PreStepPayload, next: () => Promise<PreStepDecision>): Promise<PreStepDecision> {
    const scope = payload.agent.scope
    if (payload.messages.some(message => message.source.kind === 'user')) this.runs.set(scope, emptyRun())
    else if (!this.runs.has(scope)) this.runs.set(scope, this.fromLog(payload.session))
    return next()
  }

  private called(execution: ToolExecution): void {
    const scope = execution.scope
    if (scope === undefined || execution.parentCallId !== undefined || !this.tracked(execution.name)) return
    let run = this.runs.get(scope)
    if (run === undefined) {
      // First seen here (no step of it went by this plugin): its log already holds this call.
      const agent = this.agentOf(scope)
      if (agent === undefined) return
      this.runs.set(scope, run = this.fromLog(agent.session))
    } else {
      const args = canonicalArguments(execution.arguments)
      const key = `${execution.name}\0${args}`
      if (key === run.key) run.count++
      else Object.assign(run, { key, name: execution.name, args, count: 1 })
    }
    if (!this.settings.thresholds.includes(run.count)) return
    this.agentOf(scope)?.inject(this.reminder(run))
  }

  private reminder(run: Run): UserMessage {
    const first = run.count === this.settings.thresholds[0]
    const text = first ? FIRST_REMINDER : detailedReminder(run.name, run.count, previewArguments(run.args, this.settings.previewChars))
    return {
      id: randomUUID(), role: 'user', content: [{ type: 'text', text }],
      source: { kind: 'plugin', plugin: REPEAT_TOOL_PLUGIN, form: 'reminder', tool: run.name, count: run.count, summary: `${run.name} called ${run.count} times in a row with the same arguments` },
    }
  }

  private agentOf(scope: ScopeKey): Agent | undefined {
    return this.ctx.get('agents')?.list().find(agent => agent.scope === scope)
  }

  /**
   * The run at the end of `session`'s log: read backwards from the last event to the last
   * message the user wrote or the first call that differs, so only the current run is read.
   */
  private fromLog(session: Session): Run {
    const events = session.events
    const run = emptyRun()
    for (let i = events.length - 1; i >= 0; i--) {
      const event = events[i]!
      if (event.type === 'user/message') {
        if ((event.data as UserMessage).source?.kind === 'user') break
        continue
      }
      if (event.type !== 'tool/call') continue
      const { name, arguments: raw } = event.data as { name: string; arguments: string }
      if (!this.tracked(name)) continue
      const args = canonicalArguments(raw)
      const key = `${name}\0${args}`
      if (run.key === undefined) Object.assign(run, { key, name, args, count: 1 })
      else if (key === run.key) run.count++
      else break
    }
    return run
  }
}

function emptyRun(): Run {
  return { key: undefined, name: '', args: '', count: 0 }
}
