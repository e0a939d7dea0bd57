/**
 * `ask_user_question` over ACP: the questions as an `elicitation/create` form (form mode,
 * session-scoped) and the client's answer back as question answers. See docs/protocols.md.
 *
 * One form for the whole call. Per question:
 * - options, single choice: a required `string` property whose `oneOf` lists the options
 *   (`const` = the label, `title` = the label and its description);
 * - options with `multiSelect`: a required `array` property whose `items.anyOf` lists them;
 * - options either way: an optional `string` property for a free answer beside the choice
 *   (the question format allows selected labels and text together);
 * - no options: a required `string` property (the free answer).
 * The property of the choice (or the free answer) is keyed by the question id; the companion
 * free-text property by `<id>.text` (made unique should another question use that id).
 */
import type { PendingQuestion, QuestionAnswer, UserQuestion } from '../approval/api.js'
import type { JsonRpcPeer } from '../sdk/jsonrpc.js'

export type ElicitationProperty =
  | { type: 'string'; title: string; description?: string; minLength?: number; oneOf?: { const: string; title: string }[] }
  | { type: 'array'; title: string; description?: string; items: { anyOf: { const: string; title: string }[] } }

export interface ElicitationForm {
  readonly message: string
  readonly requestedSchema: {
    type: 'object'
    properties: Record<string, ElicitationProperty>
    required: string[]
  }
  /** Which property holds what, by question id. */
  readonly keys: ReadonlyMap<string, { readonly answer: string; readonly text?: string }>
}

/** The form that asks `questions`. */
export function questionForm(questions: readonly UserQuestion[]): ElicitationForm {
  const taken = new Set(questions.map(q => q.id))
  const properties: Record<string, ElicitationProperty> = {}
  const required: string[] = []
  const keys = new Map<string, { answer: string; text?: string }>()
  for (const q of questions) {
    const title = q.header ?? q.question
    const description = q.header === undefined ? undefined : q.question
    const options = q.options ?? []
    if (options.length === 0) {
      properties[q.id] = { type: 'string', title, ...(description === undefined ? {} : { description }), minLength: 1 }
      required.push(q.id)
      keys.set(q.id, { answer: q.id })
      continue
    }
    const choices = options.map(o => ({ const: o.label, title: o.description === undefined ? o.label : `${o.label} — ${o.description}` }))
    properties[q.id] = q.multiSelect === true
      ? { type: 'array', title, ...(description === undefined ? {} : { description }), items: { anyOf: choices } }
      : { type: 'string', title, ...(description === undefined ? {} : { description }), oneOf: choices }
    required.push(q.id)
    let textKey = `${q.id}.text`
    while (taken.has(textKey)) textKey += '_'
    taken.add(textKey)
    properties[textKey] = { type: 'string', title: 'Anything to add (optional)', description: `A free answer to "${q.question}", beside the choice.` }
    keys.set(q.id, { answer: q.id, text: textKey })
  }
  const message = questions.length === 1 ? questions[0]!.question : `The agent asks ${questions.length} questions:\n${questions.map(q => `- ${q.question}`).join('\n')}`
  return { message, requestedSchema: { type: 'object', properties, required }, keys }
}

/** An answer the client sent that does not fit the form. */
export class ElicitationAnswerError extends Error {
  override name = 'ElicitationAnswerError'
}

/**
 * The client's `elicitation/create` result as question answers: `accept` with content ⇒ the
 * answers, `decline` / `cancel` ⇒ `cancelled`. Anything else throws an `ElicitationAnswerError`
 * saying what is wrong (the question then fails closed).
 */
export function formAnswers(questions: readonly UserQuestion[], form: ElicitationForm, result: unknown): readonly QuestionAnswer[] | 'cancelled' {
  const reply = result as { action?: unknown; content?: unknown } | null
  const action = typeof reply === 'object' && reply !== null ? reply.action : undefined
  if (action === 'decline' || action === 'cancel') return 'cancelled'
  if (action !== 'accept') throw new ElicitationAnswerError(`the action must be accept, decline or cancel, got ${JSON.stringify(action)}`)
  const content = reply!.content
  if (typeof content !== 'object' || content === null || Array.isArray(content)) throw new ElicitationAnswerError('accept came without content')
  const values = content as Record<string, unknown>
  const answers: QuestionAnswer[] = []
  for (const q of questions) {
    const keys = form.keys.get(q.id)!
    const value = values[keys.answer]
    const extra = keys.text === undefined ? undefined : values[keys.text]
    if (extra !== undefined && extra !== null && typeof extra !== 'string') throw new ElicitationAnswerError(`"${keys.text}" must be a string`)
    const text = typeof extra === 'string' && extra.trim() !== '' ? extra : undefined
    if (value === undefined || value === null) throw new ElicitationAnswerError(`the answer to "${q.id}" is missing`)
    const labels = new Set((q.options ?? []).map(o => o.label))
    if (labels.size === 0) {
      if (typeof value !== 'string' || value.trim() === '') throw new ElicitationAnswerError(`the answer to "${q.id}" must be a non-empty string`)
      answers.push({ id: q.id, text: value })
    } else if (q.multiSelect === true) {
      if (!Array.isArray(value) || !value.every(v => typeof v === 'string')) throw new ElicitationAnswerError(`the answer to "${q.id}" must be an array of option labels`)
      const unknown = value.find(v => !labels.has(v))
      if (unknown !== undefined) throw new ElicitationAnswerError(`"${unknown}" is not an option of "${q.id}"`)
      answers.push({ id: q.id, selected: value, ...(text === undefined ? {} : { text }) })
    } else {
      if (typeof value !== 'string') throw new ElicitationAnswerError(`the answer to "${q.id}" must be one option label`)
      if (!labels.has(value)) throw new ElicitationAnswerError(`"${value}" is not an option of "${q.id}"`)
      answers.push({ id: q.id, selected: [value], ...(text === undefined ? {} : { text }) })
    }
  }
  return answers
}

/**
 * Asks the client with `elicitation/create` (form mode, tied to the session and the tool call);
 * an abort while the form is open withdraws it (`$/cancel_request`). A JSON-RPC error or an
 * answer that does not fit the form is reported on `stderr` and fails closed (throws).
 */
export async function askForm(peer: JsonRpcPeer, question: PendingQuestion, signal: AbortSignal, stderr: { write(text: string): unknown }): Promise<readonly QuestionAnswer[] | 'cancelled'> {
  const form = questionForm(question.questions)
  let result: unknown
  try {
    result = await peer.request('elicitation/create', {
      sessionId: question.sessionId,
      toolCallId: question.callId,
      mode: 'form',
      message: form.message,
      requestedSchema: form.requestedSchema,
    }, { signal, cancelNotification: '$/cancel_request' })
  } catch (error) {
    if (signal.aborted) return 'cancelled'
    const message = error instanceof Error ? error.message : String(error)
    stderr.write(`dsh acp: the client answered elicitation/create with an error (${message}); the question fails closed\n`)
    throw error
  }
  if (signal.aborted) return 'cancelled'
  try {
    return formAnswers(question.questions, form, result)
  } catch (error) {
    if (error instanceof ElicitationAnswerError) stderr.write(`dsh acp: the client's answer to elicitation/create does not fit the form: ${error.message}; the question fails closed\n`)
    throw error
  }
}
