/**
 * The session's state above the composer and in the conversation: the current goal (objective,
 * phase, round n of its cap, Pause / Resume) and plan mode. Pause and Resume run the goals
 * plugin's `/goal pause` and `/goal resume` through the command registry (the same seam as typing
 * them), and the bar follows the `goal/change` events that come back on the stream.
 */
import { useEffect, useState } from 'react'
import { call } from './api'
import { describeGoalItem, type GoalItem, type GoalView } from './session-state'

/** One line in the conversation: a goal round began, or the goal changed. */
export function GoalLine({ item }: { item: GoalItem }) {
  return (
    <div className={`row goal-line goal-${item.event}`} data-testid="goal-line" data-event={item.event}>
      <span className="goal-mark" aria-hidden>{item.event === 'complete' ? '✓' : item.event === 'round' ? '↻' : '◎'}</span>
      <span className="goal-line-text">{describeGoalItem(item)}</span>
    </div>
  )
}

const PHASE_TEXT: Record<GoalView['phase'], string> = { active: 'active', paused: 'paused', blocked: 'blocked', complete: 'complete' }

/** Whether this session's command registry has `/goal` (the goals plugin is loaded). */
function useGoalCommand(sessionId: string, wanted: boolean): boolean {
  const [available, setAvailable] = useState(false)
  useEffect(() => {
    if (!wanted) return
    let live = true
    call<{ commands: { name: string }[] }>('commands.list', { id: sessionId })
      .then(result => { if (live) setAvailable(result.commands.some(command => command.name === 'goal')) }, () => {})
    return () => { live = false }
  }, [sessionId, wanted])
  return available
}

export function SessionStateBar(props: { sessionId: string; goal: GoalView | undefined; planMode: boolean; onError(error: unknown): void }) {
  const { goal, sessionId } = props
  const control = useGoalCommand(sessionId, goal !== undefined)
  const [busy, setBusy] = useState(false)
  // A click waits for the goal/change it causes; the next snapshot re-enables the button.
  useEffect(() => setBusy(false), [goal?.revision, goal?.phase])
  if (goal === undefined && !props.planMode) return null
  const act = async (action: 'pause' | 'resume') => {
    setBusy(true)
    try {
      const result = await call('prompt', { id: sessionId, text: `/goal ${action}` })
      if (result.command?.kind === 'error') { setBusy(false); props.onError(new Error(result.command.text)) }
    } catch (error) {
      setBusy(false)
      props.onError(error)
    }
  }
  return (
    <div className="state-bar" role="region" aria-label="Session state" data-testid="session-state">
      {props.planMode ? <span className="state-pill plan-mode" data-testid="plan-mode" title="Plan mode: the agent explores and plans before changing anything (/plan off to leave)">Plan mode</span> : null}
      {goal !== undefined ? (
        <div className={`goal-bar phase-${goal.phase}`} data-testid="goal-bar" data-goal-id={goal.id} data-phase={goal.phase}>
          <span className="goal-label">Goal</span>
          <span className={`state-pill goal-phase ${goal.phase}`} data-testid="goal-phase">{PHASE_TEXT[goal.phase]}</span>
          <span className="goal-objective" title={goal.objective} data-testid="goal-objective">{goal.objective}</span>
          <span className="goal-round" data-testid="goal-round">round {goal.rounds} of {goal.maxGoalRounds}</span>
          {goal.blockedReason && goal.phase === 'blocked' ? <span className="goal-reason" title={goal.blockedReason}>{goal.blockedReason}</span> : null}
          {control && goal.phase === 'active' ? (
            <button className="ghost goal-action" disabled={busy} onClick={() => void act('pause')} data-testid="goal-pause" aria-label="Pause the goal">Pause</button>
          ) : null}
          {control && (goal.phase === 'paused' || goal.phase === 'blocked') ? (
            <button className="ghost goal-action" disabled={busy} onClick={() => void act('resume')} data-testid="goal-resume" aria-label="Resume the goal">Resume</button>
          ) : null}
        </div>
      ) : null}
    </div>
  )
}
