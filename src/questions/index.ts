/**
 * `ask_user_question` (QuestionToolPlugin, row `questions`; docs/questions.md): the model asks
 * the user one or more questions through the approval seam's question answerers
 * (`ctx.approval.ask`), which the surfaces register. A child agent owned by a live parent never
 * reaches a person (SA-14): its call fails with `UserQuestionError DELEGATED_CALLER` and it is
 * told to put the open question in its final result. With no surface that shows questions (a
 * headless run), the call fails closed with `UNAVAILABLE`.
 */
import type { Context } from 'cordis'
import type { QuestionAnswer, UserQuestion } from '../approval/api.js'
import type { Tool, ToolContext, ToolOutput } from '../tools/api.js'
import '../agent/api.js'
import '../approval/api.js'
import '../tools/api.js'

export const ASK_USER_QUESTION = 'ask_user_question'

export const ASK_USER_QUESTION_DESCRIPTION = 'Ask the user a concise question when you need confirmation, a choice, or missing information before proceeding. Send one or more questions, each with a stable id that will be echoed in the answer.'

/** SA-14: the recorded rejection of a delegated child's question. */
export const DELEGATED_CALLER_TEXT = 'human interaction is unavailable while the calling agent is owned by another live agent; include the unresolved question or decision in the child agent\'s final result'
export const NO_ANSWERER_TEXT = 'no one can answer questions in this session (nothing that shows questions to a person is connected, as in a headless run); decide from what you know, or state the open question in your final reply'
export const DISMISSED_TEXT = 'the user dismissed the question without answering; do not ask it again unless the user brings it up'

const PARAMETERS = {
  type: 'object',
  properties: {
    questions: {
      type: 'array',
      description: 'Questions to ask the user before continuing.',
      items: {
        type: 'object',
        additionalProperties: true,
        properties: {
          id: { type: 'string', description: 'Stable id for this question; echoed in the answer.' },
          question: { type: 'string', description: 'The specific question to ask the user.' },
          header: { type: 'string', description: 'Optional short heading for the question, such as "Confirm" or "Choose Mode".' },
          options: {
            type: 'array',
            description: 'Optional choices to show the user. If you recommend one, put it first and append "(Recommended)" to that label.',
            items: {
              type: 'object',
              additionalProperties: true,
              properties: {
                label: { type: 'string', description: 'Short user-facing option label.' },
                description: { type: 'string', description: 'One sentence explaining the tradeoff or impact.' },
              },
              required: ['label'],
            },
          },
          multi_select: { type: 'boolean', description: 'Whether the user may select more than one option. Defaults to false.' },
        },
        required: ['id', 'question'],
      },
    },
  },
  required: ['questions'],
} as const

export class UserQuestionError extends Error {
  override name = 'UserQuestionError'
  constructor(message: string, readonly code: 'DELEGATED_CALLER' | 'UNAVAILABLE' | 'CANCELLED') {
    super(message)
  }
}

/** Checks and converts the model's arguments; throws a readable message. */
export function parseQuestions(args: unknown): { questions: UserQuestion[] } {
  const list = (args as { questions?: unknown } | null)?.questions
  if (!Array.isArray(list) || list.length === 0) throw new TypeError('ask_user_question needs {questions: [{id, question, ...}, ...]} with at least one question')
  const ids = new Set<string>()
  const questions = list.map((item: unknown, i): UserQuestion => {
    const q = item as Record<string, unknown> | null
    if (typeof q !== 'object' || q === null) throw new TypeError(`questions[${i}] must be an object`)
    if (typeof q.id !== 'string' || q.id === '') throw new TypeError(`questions[${i}].id must be a non-empty string`)
    if (ids.has(q.id)) throw new TypeError(`questions[${i}].id "${q.id}" is used twice`)
    ids.add(q.id)
    if (typeof q.question !== 'string' || q.question.trim() === '') throw new TypeError(`questions[${i}].question must be a non-empty string`)
    if (q.header !== undefined && typeof q.header !== 'string') throw new TypeError(`questions[${i}].header must be a string`)
    if (q.multi_select !== undefined && typeof q.multi_select !== 'boolean') throw new TypeError(`questions[${i}].multi_select must be a boolean`)
    let options: { label: string; description?: string }[] | undefined
    if (q.options !== undefined) {
      if (!Array.isArray(q.options)) throw new TypeError(`questions[${i}].options must be an array`)
      options = q.options.map((option: unknown, j) => {
        const o = option as Record<string, unknown> | null
        if (typeof o !== 'object' || o === null || typeof o.label !== 'string' || o.label === '') throw new TypeError(`questions[${i}].options[${j}].label must be a non-empty string`)
        if (o.description !== undefined && typeof o.description !== 'string') throw new TypeError(`questions[${i}].options[${j}].description must be a string`)
        return { label: o.label, ...(typeof o.description === 'string' ? { description: o.description } : {}) }
      })
    }
    return {
      id: q.id, question: q.question,
      ...(typeof q.header === 'string' && q.header !== '' ? { header: q.header } : {}),
      ...(options !== undefined && options.length > 0 ? { options } : {}),
      ...(q.multi_select === true ? { multiSelect: true } : {}),
    }
  })
  return { questions }
}

/** The result text: `{"answers":[{"id","selected"?,"text"?}]}` (the recorded shape). */
export function answersText(answers: readonly QuestionAnswer[]): string {
  return JSON.stringify({ answers: answers.map(a => ({ id: a.id, ...(a.selected !== undefined ? { selected: a.selected } : {}), ...(a.text !== undefined ? { text: a.text } : {}) })) })
}

export function askUserQuestionTool(ctx: Context): Tool<{ questions: UserQuestion[] }> {
  return {
    name: ASK_USER_QUESTION,
    description: ASK_USER_QUESTION_DESCRIPTION,
    parameters: PARAMETERS,
    parse: parseQuestions,
    async execute({ questions }, context: ToolContext): Promise<ToolOutput> {
      const session = context.session
      // SA-14: a child whose parent agent is live cannot reach a person.
      const parent = session?.header.parentSession
      if (parent !== undefined && ctx.get('agents')?.get(parent) !== undefined) throw new UserQuestionError(DELEGATED_CALLER_TEXT, 'DELEGATED_CALLER')
      const approval = ctx.get('approval')
      if (session === undefined || approval === undefined) throw new UserQuestionError(NO_ANSWERER_TEXT, 'UNAVAILABLE')
      const outcome = await approval.ask({ session, callId: context.callId, questions, signal: context.signal })
      if (outcome.kind === 'answered') return { content: [{ type: 'text', text: answersText(outcome.answers) }] }
      if (outcome.kind === 'cancelled') throw new UserQuestionError(DISMISSED_TEXT, 'CANCELLED')
      throw new UserQuestionError(NO_ANSWERER_TEXT, 'UNAVAILABLE')
    },
  }
}

/** Registers `ask_user_question` (an effect of `ctx`). */
export class QuestionToolPlugin {
  static readonly inject = ['tools']

  constructor(ctx: Context) {
    ctx.effect(() => ctx.tools.register(askUserQuestionTool(ctx)), 'tool ask_user_question')
  }
}
