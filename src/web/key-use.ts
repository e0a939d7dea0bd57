/**
 * The web UI asks before a stored key's first use with an endpoint (docs/security.md, "The
 * project .env"), through the question card every page already draws (`ctx.approval.ask`, the
 * web's questioner): Send, or Do not send. Only the Send option sends; the other option, a
 * free-text answer, Dismiss or no answer to be had refuses, and nothing leaves. A request of no
 * known session is not the web's to ask: the host says it in one line.
 */
import type { Context } from 'cordis'
import type { ApprovalService } from '../approval/api.js'
import type { KeyFirstUse, KeyUseAnswer } from '../llm/key-use.js'
import type { SessionsService } from '../session/api.js'

export const SEND_KEY = 'Send'
export const KEEP_KEY = 'Do not send'

export function keyUseQuestion(ctx: Context): (use: KeyFirstUse, signal?: AbortSignal) => Promise<KeyUseAnswer | undefined> {
  return async (use, signal) => {
    const approval = ctx.get('approval') as ApprovalService | undefined
    const session = use.sessionId === undefined ? undefined : (ctx.get('sessions') as SessionsService | undefined)?.get(use.sessionId)
    if (approval === undefined || session === undefined) return undefined
    const outcome = await approval.ask({
      session, callId: `key-use:${use.keyName}`, signal,
      questions: [{
        id: 'send', header: 'Stored key, new endpoint',
        question: `Send your stored ${use.keyName} to ${use.endpoint}? It has not been sent there before. ${use.chosenBy} chose it.`,
        options: [{ label: SEND_KEY, description: 'and remember this endpoint' }, { label: KEEP_KEY, description: 'nothing leaves' }],
      }],
    })
    return outcome.kind === 'answered' && outcome.answers.some(answer => answer.selected?.includes(SEND_KEY) === true) ? 'send' : 'refuse'
  }
}
