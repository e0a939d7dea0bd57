/**
 * `ask_user_question` in the terminal app (docs/questions.md): the questions of one call, one at
 * a time, in a box like the approval prompt. ↑/↓ move between the options and the free-text
 * line, a number picks (or, with multi-select, toggles) that option, Space toggles with
 * multi-select, typing writes a free answer, Enter answers the question, Esc dismisses the call.
 * The key handling is a pure function (`questionKey`) so it can be checked without a terminal.
 */
import { Box, Text, useInput, type Key } from 'ink'
import type { QuestionAnswer, UserQuestion } from '../approval/api.js'
import { c } from './theme.js'
import { useLatestState } from './latest-state.js'
import { terminalSafe } from '../host/terminal-text.js'

export interface QuestionPrompt {
  readonly id: string
  readonly questions: readonly UserQuestion[]
  answer(outcome: readonly QuestionAnswer[] | 'cancelled'): void
}

export interface QuestionState {
  /** Which question of the call is shown. */
  readonly index: number
  /** The cursor: an option index, or the options' count for the free-text line. */
  readonly cursor: number
  readonly selected: readonly string[]
  readonly text: string
  readonly answers: readonly QuestionAnswer[]
}

export const initialQuestionState: QuestionState = { index: 0, cursor: 0, selected: [], text: '', answers: [] }

export type QuestionStep =
  | { readonly kind: 'state'; readonly state: QuestionState }
  | { readonly kind: 'done'; readonly answers: readonly QuestionAnswer[] }
  | { readonly kind: 'cancelled' }

/** One key on the question prompt. */
export function questionKey(questions: readonly UserQuestion[], state: QuestionState, input: string, key: Pick<Key, 'upArrow' | 'downArrow' | 'return' | 'escape' | 'backspace' | 'delete' | 'ctrl' | 'meta' | 'tab'>): QuestionStep {
  // Keys typed quickly arrive as one chunk ("13"): each character is a key of its own.
  const plain = !key.upArrow && !key.downArrow && !key.return && !key.escape && !key.backspace && !key.delete && !key.ctrl && !key.meta && !key.tab
  if (plain && [...input].length > 1) {
    let step: QuestionStep = { kind: 'state', state }
    for (const char of input) {
      if (step.kind !== 'state') break
      step = questionKey(questions, step.state, char, key)
    }
    return step
  }
  const question = questions[state.index]
  const options = question.options ?? []
  const multi = question.multiSelect === true
  const next = (state: QuestionState): QuestionStep => ({ kind: 'state', state })
  const finish = (answer: QuestionAnswer): QuestionStep => {
    const answers = [...state.answers, answer]
    if (state.index + 1 >= questions.length) return { kind: 'done', answers }
    return next({ ...initialQuestionState, index: state.index + 1, answers })
  }
  const toggle = (label: string) => state.selected.includes(label) ? state.selected.filter(l => l !== label) : [...state.selected, label]
  const onText = state.cursor >= options.length

  if (key.escape || (key.ctrl && input === 'c')) return { kind: 'cancelled' }
  if (key.upArrow) return next({ ...state, cursor: Math.max(0, state.cursor - 1) })
  if (key.downArrow || key.tab) return next({ ...state, cursor: Math.min(options.length, state.cursor + 1) })
  if (key.return) {
    const text = state.text.trim()
    if (multi) {
      if (state.selected.length === 0 && text === '') return next(state)
      return finish({ id: question.id, ...state.selected.length > 0 ? { selected: options.map(o => o.label).filter(l => state.selected.includes(l)) } : {}, ...text !== '' ? { text } : {} })
    }
    if (!onText) return finish({ id: question.id, selected: [options[state.cursor].label], ...text !== '' ? { text } : {} })
    return text === '' ? next(state) : finish({ id: question.id, text })
  }
  if (key.backspace || key.delete) return next({ ...state, cursor: options.length, text: state.text.slice(0, -1) })
  if (key.ctrl || key.meta || input === '') return next(state)
  // On an option, a number picks (toggles) it and Space toggles; elsewhere they are text.
  if (!onText && /^[1-9]$/.test(input) && Number(input) <= options.length) {
    const label = options[Number(input) - 1].label
    if (multi) return next({ ...state, cursor: Number(input) - 1, selected: toggle(label) })
    return finish({ id: question.id, selected: [label] })
  }
  if (!onText && multi && input === ' ') return next({ ...state, selected: toggle(options[state.cursor].label) })
  return next({ ...state, cursor: options.length, text: state.text + input.replace(/[\r\n]/g, ' ') })
}

/** The prompt for the first pending question call; `active` is false while an approval is shown. */
export function QuestionView({ prompt, active }: { prompt: QuestionPrompt; active: boolean }) {
  // Keys can arrive faster than renders: read and write the latest state through a ref.
  const [state, latest, setState] = useLatestState<QuestionState>(initialQuestionState)
  useInput((input, key) => {
    const step = questionKey(prompt.questions, latest.current, input, key)
    if (step.kind === 'state') {
      setState(step.state)
    } else {
      // After this key has reached every input handler: the app's own (Esc cancels the turn)
      // still sees the question pending and leaves the key alone.
      const outcome = step.kind === 'done' ? step.answers : 'cancelled'
      queueMicrotask(() => prompt.answer(outcome))
    }
  }, { isActive: active })

  const question = prompt.questions[state.index]
  const options = question.options ?? []
  const multi = question.multiSelect === true
  const count = prompt.questions.length > 1 ? ` (${state.index + 1}/${prompt.questions.length})` : ''
  const onText = state.cursor >= options.length
  return (
    <Box flexDirection="column" borderStyle="round" borderColor={c('magenta')} paddingX={1}>
      <Text bold>{terminalSafe(question.header ?? 'Question')}{count}</Text>
      <Text>{terminalSafe(question.question)}</Text>
      {options.map((option, i) => {
        const here = state.cursor === i
        const mark = multi ? (state.selected.includes(option.label) ? '[x]' : '[ ]') : (here ? '›' : ' ')
        return (
          <Text key={option.label} wrap="truncate-end" inverse={here}>
            {mark} {i + 1}. {terminalSafe(option.label)}{option.description !== undefined ? <Text dimColor> — {terminalSafe(option.description)}</Text> : null}
          </Text>
        )
      })}
      <Text wrap="truncate-end" inverse={onText}>
        {options.length > 0 ? (onText ? '›' : ' ') + ' Other: ' : '› '}{state.text === '' ? <Text dimColor>type an answer</Text> : terminalSafe(state.text)}
      </Text>
      <Text dimColor>
        {options.length > 0 ? (multi ? '↑↓ move · Space/number toggle · ' : '↑↓ move · number picks · ') : ''}Enter answers · Esc dismisses
      </Text>
    </Box>
  )
}
