/**
 * The web UI's answers to `ask_user_question` (docs/questions.md).
 */
import type { Context } from 'cordis'
import type { PendingQuestion, QuestionAnswer } from '../approval/api.js'
import { WebApiError, type WebMethod } from './api.js'
import { str } from './params.js'
import '../approval/api.js'

/** `question.answer`'s answers, checked against what was asked; a 400 naming the problem otherwise. */
function checkedAnswers(pending: PendingQuestion, answers: unknown): QuestionAnswer[] {
  const bad = (message: string) => new WebApiError(400, 'BAD_PARAMS', message)
  if (!Array.isArray(answers) || answers.length === 0) throw bad('"answers" must be a non-empty array of {id, selected?, text?} (or pass dismissed: true)')
  const seen = new Set<string>()
  return answers.map((answer: unknown, i): QuestionAnswer => {
    const a = answer as Record<string, unknown> | null
    if (typeof a !== 'object' || a === null || typeof a.id !== 'string') throw bad(`answers[${i}].id must be a string`)
    const question = pending.questions.find(q => q.id === a.id)
    if (question === undefined) throw bad(`answers[${i}].id "${a.id}" was not asked`)
    if (seen.has(a.id)) throw bad(`answers[${i}].id "${a.id}" is answered twice`)
    seen.add(a.id)
    if (a.text !== undefined && typeof a.text !== 'string') throw bad(`answers[${i}].text must be a string`)
    if (a.selected !== undefined) {
      if (!Array.isArray(a.selected) || !a.selected.every(label => typeof label === 'string')) throw bad(`answers[${i}].selected must be an array of option labels`)
      const offered = new Set((question.options ?? []).map(option => option.label))
      const unknown = a.selected.find(label => !offered.has(label as string))
      if (unknown !== undefined) throw bad(`answers[${i}].selected: "${String(unknown)}" is not an option of "${a.id}"`)
      if (a.selected.length > 1 && question.multiSelect !== true) throw bad(`answers[${i}].selected: "${a.id}" takes one option`)
    }
    if (a.selected === undefined && a.text === undefined) throw bad(`answers[${i}] needs selected or text`)
    return { id: a.id, ...(a.selected !== undefined ? { selected: a.selected as string[] } : {}), ...(a.text !== undefined ? { text: a.text as string } : {}) }
  })
}

/**
 * The web UI answers `ask_user_question` (docs/questions.md): a pending question reaches the
 * page over the session's event stream (`questions`, also on connect: `pendingQuestions`), the
 * page draws a card, and `question.answer` settles it with answers or `{dismissed: true}`.
 * The approval seam checks the answers (asked ids, offered labels).
 */
export function registerQuestionMethods(ctx: Context, register: (name: string, method: WebMethod) => void): void {
  const waiting = new Map<string, { question: PendingQuestion; resolve(answer: readonly QuestionAnswer[] | 'cancelled'): void }>()
  ctx.inject(['approval'], (ctx) => {
    ctx.approval.questioner((question, signal) => new Promise<readonly QuestionAnswer[] | 'cancelled'>(resolve => {
      waiting.set(question.id, { question, resolve })
      signal.addEventListener('abort', () => { waiting.delete(question.id); resolve('cancelled') }, { once: true })
    }))
  })
  register('question.answer', params => {
    const id = str(params, 'questionId')
    const entry = waiting.get(id)
    if (entry === undefined) throw new WebApiError(404, 'NO_QUESTION', `no pending question "${id}" (already answered or cancelled)`)
    if (params.dismissed === true) {
      waiting.delete(id)
      entry.resolve('cancelled')
      return { ok: true }
    }
    // A bad answer is refused here and the question stays open (the seam would fail it closed).
    const answers = checkedAnswers(entry.question, params.answers)
    waiting.delete(id)
    entry.resolve(answers)
    return { ok: true }
  })
}
