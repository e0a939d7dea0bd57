/** Reading answers out of session events (shared by the servers and the client; no runtime deps). */
import type { AssistantMessage, ContentBlock, TextBlock } from '../llm/types.js'
import type { SessionEvent } from '../session/types.js'

/** Text blocks of a message, joined. */
export function messageText(content: readonly ContentBlock[]): string {
  return content.filter((block): block is TextBlock => block.type === 'text').map(block => block.text).join('')
}

/** The text of the last assistant message with text in the last turn of `events`. */
export function finalResponse(events: readonly SessionEvent[]): string {
  for (let i = events.length - 1; i >= 0; i -= 1) {
    const event = events[i]!
    if (event.type === 'turn/start') break
    if (event.type !== 'assistant/message') continue
    const text = messageText((event.data as { message: AssistantMessage }).message.content)
    if (text !== '') return text
  }
  return ''
}
