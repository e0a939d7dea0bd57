/**
 * The Ralph loop (docs/workflows.md): one immutable objective, one fresh child per round (no
 * conversation seed, the workspace as memory), each ending with a structured report; only that
 * report crosses to the next round. The loop stops when a worker reports completion or a blocker,
 * when a child fails, or at the round cap. Foreground only; nothing of it is in the parent's log
 * but the call and its result (each round's child has its own log).
 */
import { randomUUID } from 'node:crypto'
import type { Context } from 'cordis'
import type { Agent } from '../agent/api.js'
import type { JsonValue } from '../session/types.js'
import type { Tool, ToolContext } from '../tools/api.js'
import { capText as cut, RUN_OUTPUT_TYPE, WORKFLOW_DEFAULTS, type WorkflowConfig } from './api.js'
import { runChild } from './children.js'
import { RALPH, RALPH_DESCRIPTION, RALPH_PARAMETERS } from './texts.js'

export interface RalphReport {
  readonly status: 'continue' | 'complete' | 'blocked'
  readonly summary: string
  readonly evidence: readonly string[]
  readonly nextSteps: readonly string[]
  readonly blocker: string
}

const strings = { type: 'array', items: { type: 'string' } }

/** The schema of a round's report (its `structured_output` parameters). */
export const REPORT_SCHEMA = Object.freeze({
  type: 'object',
  properties: {
    status: { type: 'string', enum: ['continue', 'complete', 'blocked'], description: 'continue: work remains; complete: the objective is achieved; blocked: a concrete blocker stops progress.' },
    summary: { type: 'string', description: 'What this round did and where things stand.' },
    evidence: { ...strings, description: 'Checkable facts that show progress or completion (files, commands and their results).' },
    nextSteps: { ...strings, description: 'What the next round should do (empty when complete or blocked).' },
    blocker: { type: 'string', description: 'The concrete blocker, or "" when there is none.' },
  },
  required: ['status', 'summary', 'evidence', 'nextSteps', 'blocker'],
  additionalProperties: false,
})

/** Why a report breaks the status rules, if it does. */
export function reportProblem(report: RalphReport): string | undefined {
  if (report.status === 'continue') {
    if (report.nextSteps.length === 0) return 'a "continue" report needs at least one next step'
    if (report.blocker !== '') return 'a "continue" report has an empty blocker'
  } else if (report.status === 'complete') {
    if (report.evidence.length === 0) return 'a "complete" report needs at least one piece of evidence'
    if (report.nextSteps.length > 0) return 'a "complete" report has no next steps'
  } else if (report.blocker.trim() === '') return 'a "blocked" report names its blocker'
  return undefined
}

const rounds = (n: number) => `${n} round${n === 1 ? '' : 's'}`
const json = (value: unknown) => JSON.stringify(value, null, 2)

/** The prompt of round `round`: six paragraphs, the objective verbatim. */
export function roundPrompt(objective: string, round: number, max: number, handoff: string | undefined): string {
  return [
    'You are one worker round of a Ralph loop: a fresh agent with no memory of earlier rounds. Make real progress toward the objective below, working in the shared workspace.',
    `Immutable objective:\n${objective}`,
    `Ralph round: ${round} of ${max}.`,
    'The workspace is the loop\'s long-term memory: read what earlier rounds left there, and leave your work, and any notes the next round needs, in files. Only your structured report reaches the next round.',
    `Previous structured handoff:\n${handoff ?? '(none — this is the first round)'}`,
    'Finish by calling structured_output exactly once. Report status "complete" (with evidence, no next steps) only when the objective is achieved; "blocked" with the concrete blocker when you cannot go on; otherwise "continue" with the next steps and an empty blocker.',
  ].join('\n\n')
}

export function ralphTool(ctx: Context, config: WorkflowConfig, parentOf: (context: ToolContext) => Agent): Tool<{ objective: string; maxRounds?: number }> {
  const settings = { ...WORKFLOW_DEFAULTS, ...config }
  const ceiling = settings.maxRounds
  return {
    name: RALPH,
    description: RALPH_DESCRIPTION,
    parameters: RALPH_PARAMETERS,
    outputType: RUN_OUTPUT_TYPE,
    parse(value) {
      const { objective, maxRounds } = (value ?? {}) as { objective?: unknown; maxRounds?: unknown }
      if (typeof objective !== 'string' || objective.trim() === '') throw new Error('objective must be a non-empty string')
      if (maxRounds !== undefined && (typeof maxRounds !== 'number' || !Number.isSafeInteger(maxRounds) || maxRounds < 1)) throw new Error('maxRounds must be a positive whole number')
      return { objective, ...maxRounds !== undefined && { maxRounds } }
    },
    isConcurrencySafe: () => false,
    async execute({ objective, maxRounds }, context) {
      const parent = parentOf(context)
      const max = Math.min(maxRounds ?? ceiling, ceiling)
      let handoff: string | undefined
      let last: RalphReport | undefined
      const runId = randomUUID()
      let started = 0
      const result = (text: string, isError = false) => ({
        content: [{ type: 'text' as const, text: cut(text, settings.maxRalphResultChars) }], ...isError && { isError },
        value: { runId, agentsStarted: started, result: (last ?? null) as unknown as JsonValue },
      })
      for (let round = 1; round <= max; round++) {
        started = round
        const child = await runChild(ctx, {
          parent, prompt: roundPrompt(objective, round, max, handoff), provider: settings.provider, maxDepth: settings.maxDepth,
          callId: context.callId, label: `Ralph round ${round}`, schema: REPORT_SCHEMA,
        }, context.signal).catch((error: unknown) => ({ kind: 'failed' as const, message: error instanceof Error ? error.message : String(error), childId: '' }))
        if (child.kind === 'cancelled' || context.signal.aborted) {
          const reason = context.signal.reason as { kind?: unknown } | undefined
          return result(`Error: Ralph workflow was cancelled (${typeof reason?.kind === 'string' ? reason.kind : 'cancelled'})`, true)
        }
        if (child.kind !== 'completed') {
          return result(`Ralph round ${round} child failed before producing a structured report.\n${handoff !== undefined ? `Last structured handoff:\n${handoff}` : 'No previous handoff was available.'}`, true)
        }
        const report = child.structured as unknown as RalphReport
        const problem = reportProblem(report)
        if (problem !== undefined) return result(`Error: Ralph workflow failed: round ${round} reported an invalid report: ${problem}`, true)
        last = report
        if (report.status === 'complete') return result(`Ralph worker reported completion after ${rounds(round)}.\nFinal report:\n${json(report)}`)
        if (report.status === 'blocked') return result(`Ralph worker reported a blocker after ${rounds(round)}.\nFinal report:\n${json(report)}`)
        handoff = cut(json(report), settings.maxHandoffChars)
      }
      return result(`Ralph reached its ${rounds(max)} limit; the worker reported work remaining.\nFinal report:\n${json(last)}`)
    },
  }
}
