/** Small builders for session tests and benchmarks (not fixtures copied from anywhere). */
import type { AssistantMessage, ToolResultMessage, UserMessage } from '../../llm/types.js'

export function userMessage(text: string, id = `u-${text}`): UserMessage {
  return { id, role: 'user', content: [{ type: 'text', text }], source: { kind: 'user' } }
}

export function assistantMessage(id: string, text: string, calls: readonly { id: string; name?: string; arguments?: string }[] = []): AssistantMessage {
  return {
    id,
    role: 'assistant',
    content: [
      ...text ? [{ type: 'text' as const, text }] : [],
      ...calls.map((c) => ({ type: 'tool-call' as const, id: c.id, name: c.name ?? 'bash', arguments: c.arguments ?? '{}' })),
    ],
    source: { kind: 'model', provider: 'test', model: 'm' },
  }
}

export function toolResultMessage(callId: string, text: string, isError = false, id = `r-${callId}`): ToolResultMessage {
  return {
    id,
    role: 'user',
    content: [{ type: 'tool-result', toolCallId: callId, content: [{ type: 'text', text }], isError }],
    source: { kind: 'tool', callId },
  }
}
