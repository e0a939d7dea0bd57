/**
 * `ask_user_question` in the conversation (docs/questions.md): the session's pending questions
 * arrive on its event stream (`questions`, sent again on every change and when the page
 * connects); each is a card with the header and question, its options as radio buttons (check
 * boxes with `multiSelect`), a free-text answer, Submit and Dismiss. Enter submits, Escape
 * dismisses. `question.answer` settles it; the tool result is in the log as usual.
 */
import { useState, type FormEvent, type KeyboardEvent } from 'react'
import { call } from './api'

export interface UserQuestion {
  readonly id: string
  readonly question: string
  readonly header?: string
  readonly options?: readonly { readonly label: string; readonly description?: string }[]
  readonly multiSelect?: boolean
}

/** A pending `ask_user_question` call (the approval seam's PendingQuestion). */
export interface PendingQuestion {
  readonly id: string
  readonly sessionId: string
  readonly callId: string
  readonly questions: readonly UserQuestion[]
}

interface Draft { selected: string[]; text: string }

/** The answers a draft gives: one entry per question with a choice or text. */
function answersOf(questions: readonly UserQuestion[], drafts: Record<string, Draft>) {
  return questions.flatMap(q => {
    const draft = drafts[q.id] ?? { selected: [], text: '' }
    const text = draft.text.trim()
    if (draft.selected.length === 0 && text === '') return []
    return [{ id: q.id, ...(draft.selected.length > 0 ? { selected: draft.selected } : {}), ...(text !== '' ? { text } : {}) }]
  })
}

/** The pending questions of one session, oldest first. */
export function QuestionCards(props: { questions: readonly PendingQuestion[]; onError(error: unknown): void }) {
  if (props.questions.length === 0) return null
  return <>{props.questions.map(question => <QuestionCard key={question.id} pending={question} onError={props.onError} />)}</>
}

function QuestionCard({ pending, onError }: { pending: PendingQuestion; onError(error: unknown): void }) {
  const [drafts, setDrafts] = useState<Record<string, Draft>>({})
  const [sent, setSent] = useState(false)
  const answers = answersOf(pending.questions, drafts)
  const update = (id: string, change: (draft: Draft) => Draft) =>
    setDrafts(all => ({ ...all, [id]: change(all[id] ?? { selected: [], text: '' }) }))

  const settle = async (params: Record<string, unknown>) => {
    setSent(true)
    try { await call('question.answer', { questionId: pending.id, ...params }) } catch (error) { setSent(false); onError(error) }
  }
  const submit = (event?: FormEvent) => {
    event?.preventDefault()
    if (sent || answers.length === 0) return
    void settle({ answers })
  }
  const dismiss = () => { if (!sent) void settle({ dismissed: true }) }
  const keys = (event: KeyboardEvent<HTMLFormElement>) => {
    if (event.key === 'Escape') { event.preventDefault(); dismiss() }
    else if (event.key === 'Enter' && !event.shiftKey && !event.nativeEvent.isComposing && (event.target as HTMLElement).tagName !== 'BUTTON') {
      event.preventDefault()
      submit()
    }
  }
  const title = pending.questions.length === 1 ? (pending.questions[0].header ?? 'Question') : 'Questions'

  return (
    <form className="approval-card question-card pending" data-testid="question-card" data-own-escape aria-label={`Question from the agent: ${title}`}
      onSubmit={submit} onKeyDown={keys}>
      <div className="approval-title">{title}<span className="muted"> · the agent asks</span></div>
      {pending.questions.map((q, index) => {
        const draft = drafts[q.id] ?? { selected: [], text: '' }
        const name = `${pending.id}-${q.id}`
        return (
          <fieldset className="question" key={q.id} data-testid="question" data-question-id={q.id}>
            <legend className="question-text" data-testid="question-text">
              {pending.questions.length > 1 && q.header !== undefined ? <span className="question-header">{q.header}: </span> : null}
              {q.question}
            </legend>
            {q.options !== undefined ? (
              <div className="question-options" role="presentation">
                {q.options.map((option, i) => {
                  const checked = draft.selected.includes(option.label)
                  return (
                    <label className={`question-option${checked ? ' checked' : ''}`} key={option.label} data-testid="question-option">
                      <input type={q.multiSelect === true ? 'checkbox' : 'radio'} name={name} value={option.label} checked={checked} disabled={sent}
                        autoFocus={index === 0 && i === 0}
                        onChange={event => update(q.id, d => ({
                          ...d,
                          selected: q.multiSelect === true
                            ? (event.target.checked ? [...d.selected, option.label] : d.selected.filter(l => l !== option.label))
                            : [option.label],
                        }))} />
                      <span className="question-label">{option.label}</span>
                      {option.description !== undefined ? <span className="question-description muted"> — {option.description}</span> : null}
                    </label>
                  )
                })}
              </div>
            ) : null}
            <input className="question-free" type="text" value={draft.text} disabled={sent} data-testid="question-text-input"
              autoFocus={index === 0 && q.options === undefined}
              aria-label={q.options !== undefined ? `Other answer to: ${q.question}` : `Answer to: ${q.question}`}
              placeholder={q.options !== undefined ? 'Or type another answer' : 'Type your answer'}
              onChange={event => { const text = event.target.value; update(q.id, d => ({ ...d, text })) }} />
          </fieldset>
        )
      })}
      <div className="approval-actions">
        <button type="submit" className="primary" disabled={sent || answers.length === 0} data-testid="question-submit">Submit</button>
        <button type="button" className="ghost" disabled={sent} onClick={dismiss} data-testid="question-dismiss">Dismiss</button>
        <span className="muted question-keys">Enter submits · Esc dismisses</span>
      </div>
    </form>
  )
}
