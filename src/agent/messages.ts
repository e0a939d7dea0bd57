/** Turning caller input into the frozen-by-the-log user messages the inbox holds. */
import { randomUUID } from 'node:crypto'
import type { ContentBlock, UserMessage } from '../llm/types.js'
import type { AgentInput } from './api.js'

export function toUserMessage(input: AgentInput): UserMessage {
  if (typeof input === 'string') {
    return { id: randomUUID(), role: 'user', content: [{ type: 'text', text: input }], source: { kind: 'user' } }
  }
  if (Array.isArray(input)) {
    return { id: randomUUID(), role: 'user', content: input as readonly ContentBlock[], source: { kind: 'user' } }
  }
  const message = input as UserMessage
  if (message.role !== 'user' || !Array.isArray(message.content) || typeof message.id !== 'string') {
    throw new TypeError('dsh-agent: input must be text, content blocks, or a user message {id, role:"user", content, source}')
  }
  return message
}
