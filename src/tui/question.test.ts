/** The terminal question prompt's keys (question.tsx), without a terminal. */
import { describe, expect, it } from 'vitest'
import type { UserQuestion } from '../approval/api.js'
import { initialQuestionState, questionKey, type QuestionState, type QuestionStep } from './question.js'

const none = { upArrow: false, downArrow: false, return: false, escape: false, backspace: false, delete: false, ctrl: false, meta: false, tab: false }
type Press = string | 'Up' | 'Down' | 'Enter' | 'Escape' | 'Backspace'

function run(questions: readonly UserQuestion[], presses: readonly Press[]): QuestionStep {
  let state: QuestionState = initialQuestionState
  let step: QuestionStep = { kind: 'state', state }
  for (const press of presses) {
    const key = { ...none, upArrow: press === 'Up', downArrow: press === 'Down', return: press === 'Enter', escape: press === 'Escape', backspace: press === 'Backspace' }
    const input = ['Up', 'Down', 'Enter', 'Escape', 'Backspace'].includes(press) ? '' : press
    step = questionKey(questions, state, input, key)
    if (step.kind !== 'state') return step
    state = step.state
  }
  return step
}

const db: UserQuestion = { id: 'db', question: 'Which database?', options: [{ label: 'PostgreSQL' }, { label: 'SQLite' }] }
const langs: UserQuestion = { id: 'langs', question: 'Which languages?', multiSelect: true, options: [{ label: 'Go' }, { label: 'Rust' }, { label: 'Zig' }] }
const name: UserQuestion = { id: 'name', question: 'Name?' }

describe('terminal question prompt keys', () => {
  it('Down and Enter pick the second option; the next question follows', () => {
    expect(run([db, name], ['Down', 'Enter', 'x', 'y', 'Enter'])).toEqual({ kind: 'done', answers: [{ id: 'db', selected: ['SQLite'] }, { id: 'name', text: 'xy' }] })
  })

  it('numbers toggle with multi-select, in the options\' order; typing adds a free answer', () => {
    expect(run([langs], ['3', '1', 'a', 'n', 'd', ' ', 'C', 'Enter'])).toEqual({ kind: 'done', answers: [{ id: 'langs', selected: ['Go', 'Zig'], text: 'and C' }] })
  })

  it('keys typed quickly arrive as one chunk and count one by one', () => {
    expect(run([langs], ['13', 'and C', 'Enter'])).toEqual({ kind: 'done', answers: [{ id: 'langs', selected: ['Go', 'Zig'], text: 'and C' }] })
  })

  it('a number picks a single-select option at once', () => {
    expect(run([db], ['2'])).toEqual({ kind: 'done', answers: [{ id: 'db', selected: ['SQLite'] }] })
  })

  it('Enter with nothing chosen does nothing; Escape dismisses', () => {
    const step = run([name], ['Enter'])
    expect(step.kind).toBe('state')
    expect(run([langs], ['Enter', 'Escape'])).toEqual({ kind: 'cancelled' })
  })

  it('Backspace edits the free answer; Up from the text line goes back to the options', () => {
    expect(run([db], ['a', 'b', 'Backspace', 'Enter'])).toEqual({ kind: 'done', answers: [{ id: 'db', text: 'a' }] })
    expect(run([db], ['x', 'Up', 'Enter'])).toEqual({ kind: 'done', answers: [{ id: 'db', selected: ['SQLite'], text: 'x' }] })
  })
})
