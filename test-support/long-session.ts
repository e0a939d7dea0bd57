/**
 * A long session written straight into a session log, for the history paging tests and the
 * web bench: many turns of prompts, streamed answers (chunks, then the message), a tool call
 * with its result, and the state that outlives a turn — plans (`todo/write`), plan mode, goals
 * with their rounds, completion and clearing — at known turns, so a test can check what a page
 * that starts late in the log shows.
 */
import { join } from 'node:path'
import { Context } from 'cordis'
import type { Session } from '../src/session/api.js'
import { SessionsServicePlugin } from '../src/session/index.js'
import { JsonlPersistencePlugin } from '../src/persistence/plugins.js'
import { assistantMessage, toolResultMessage, userMessage } from '../src/session/testing/fixtures.js'

export interface LongSessionOptions {
  readonly turns: number
  /** Text-delta chunks streamed before each answer (default 3). */
  readonly chunks?: number
  /** Leave the last turn open with a pending approval (default false). */
  readonly openLastTurn?: boolean
  /** The turn goal `g3` is set at (default `turns - 40`); it is paused at the end of the last turn. */
  readonly goalTurn?: number
  /** The turn plan mode goes on for good (default `turns - 30`). */
  readonly planModeTurn?: number
  /** No plans after this turn (default: plans to the end). */
  readonly plansUntil?: number
}

function goalChange(operation: string, id: string, phase: string, roundsStarted: number, objective = `ship part ${id}`) {
  return { kind: 'goal/change', version: 1, operation, goal: { id, revision: 1, objective, phase, maxGoalRounds: 1000 }, roundsStarted, createdAt: 1, updatedAt: 1 }
}

/**
 * Appends `turns` turns. Turn t asks `Question t`; its answer is `Answer t`. State changes:
 * a plan at every 10th turn (all done at every 20th), plan mode on at turns 5–8 and again from
 * `planModeTurn` on, goal `g1` rounds over turns 20–30 (complete at 30), goal `g2` set at 40 and
 * cleared at 45, goal `g3` set at `goalTurn` with one round per turn after it, paused at the end.
 */
export function appendLongSession(session: Session, options: LongSessionOptions): void {
  const { turns } = options
  const chunks = options.chunks ?? 3
  const goalFrom = options.goalTurn ?? turns - 40
  const planModeTurn = options.planModeTurn ?? turns - 30
  const plansUntil = options.plansUntil ?? turns
  for (let turn = 1; turn <= turns; turn += 1) {
    session.append('turn/start', { turn })
    session.append('step/start', { turn, step: 1 })
    if (turn === 20) session.append('goal/change', goalChange('create', 'g1', 'active', 0))
    if (turn === 40) session.append('goal/change', goalChange('create', 'g2', 'active', 0))
    if (turn === goalFrom) session.append('goal/change', goalChange('create', 'g3', 'active', 0, 'finish the long task'))
    if (turn > 20 && turn <= 30) session.append('user/message', { id: `g1-${turn}`, role: 'user', content: [{ type: 'text', text: '<goal_round>' }], source: { kind: 'goal', goalId: 'g1', revision: 1, round: turn - 20 } }, { surfaceOp: 'append' })
    else if (turn > goalFrom) session.append('user/message', { id: `g3-${turn}`, role: 'user', content: [{ type: 'text', text: '<goal_round>' }], source: { kind: 'goal', goalId: 'g3', revision: 1, round: turn - goalFrom } }, { surfaceOp: 'append' })
    else session.append('user/message', userMessage(`Question ${turn}: what does module ${turn} do?`, `u-${turn}`), { surfaceOp: 'append' })
    if (turn === 5 || turn === planModeTurn) session.append('plan/mode', { active: true })
    if (turn === 9) session.append('plan/mode', { active: false })
    const answer = `Answer ${turn}: module **${turn}** parses the config.\n\n\`\`\`ts\nexport const check${turn} = (input: string) => input.length > ${turn % 50}\n\`\`\``
    for (let chunk = 0; chunk < chunks; chunk += 1) session.append('assistant/chunk', { turn, step: 1, chunk: { type: 'text-delta', index: 0, text: answer.slice(chunk * 10, chunk * 10 + 10) } })
    const callId = `call-${turn}`
    session.append('assistant/message', { turn, step: 1, message: assistantMessage(`a-${turn}`, answer, [{ id: callId, name: 'bash', arguments: `{"command":"cat module${turn}.ts"}` }]), usage: { inputTokens: 900, outputTokens: 120 } }, { surfaceOp: 'append' })
    session.append('tool/call', { turn, step: 1, callId, name: 'bash', arguments: `{"command":"cat module${turn}.ts"}` })
    session.append('tool/result', { turn, step: 1, message: toolResultMessage(callId, `// module ${turn}\nexport {}`) }, { surfaceOp: 'append' })
    if (turn % 10 === 0 && turn <= plansUntil) {
      const done = turn % 20 === 0
      session.append('todo/write', { todos: [{ content: `Plan step A of turn ${turn}`, status: 'completed', activeForm: 'Doing A' }, { content: `Plan step B of turn ${turn}`, status: done ? 'completed' : 'in_progress', activeForm: 'Doing B' }] })
    }
    session.append('step/end', { turn, step: 1 })
    if (turn === 30) session.append('goal/change', goalChange('complete', 'g1', 'complete', 10))
    if (turn === 45) session.append('goal/change', { kind: 'goal/change', version: 1, operation: 'clear', cleared: { id: 'g2', revision: 1 } })
    if (turn === turns) session.append('goal/change', goalChange('pause', 'g3', 'paused', turn - goalFrom, 'finish the long task'))
    if (turn === turns && options.openLastTurn === true) {
      session.append('approval/asked', { id: 'approval-last', toolName: 'bash', callId, reason: 'runs a command outside the workspace' })
      return
    }
    session.append('turn/end', { turn, reason: { kind: 'completed' } })
  }
}

/**
 * Registers the plugin-owned event types the long session uses (goals, plan mode, approvals) on a
 * context that runs without those plugins; a type already registered is left as it is.
 */
export function registerLongSessionTypes(ctx: Context): void {
  for (const type of ['goal/change', 'plan/mode', 'approval/asked']) {
    if (ctx.sessions.eventType(type) === undefined) ctx.sessions.registerEventType({ type, owner: 'test' })
  }
}

/** Writes a long session into `<home>/sessions` as a stored log and returns its id. */
export async function storeLongSession(home: string, cwd: string, options: LongSessionOptions): Promise<string> {
  const ctx = new Context()
  await ctx.plugin(SessionsServicePlugin).await()
  await ctx.plugin(JsonlPersistencePlugin, { root: join(home, 'sessions') }).await()
  registerLongSessionTypes(ctx)
  const session = ctx.sessions.create({ cwd })
  appendLongSession(session, options)
  session.append('session/title', { title: 'A very long session', messageSeqs: [], source: { kind: 'user' } })
  await ctx.sessionPersistence.flush(session)
  const id = session.id
  for (const fiber of [...ctx.registry.values()].flatMap(runtime => [...runtime.fibers]).reverse()) await fiber.dispose()
  return id
}
