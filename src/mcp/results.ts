/**
 * MC-3/MC-4: an MCP `tools/call` result as a tool output. Blocks keep their order: text as text,
 * `resource_link` as its name and URI, images/audio/embedded resources/unknown blocks as an
 * explicit note (there is no attachment store to keep them durable). `isError: true` becomes an
 * error result whose text starts with `Error: `. Only the server and raw tool name go to `meta`
 * (it is logged); the MCP blocks and `structuredContent` stay out of the log.
 */
import type { ToolOutput } from '../tools/api.js'

export const MCP_SERVER_ERROR = 'MCP_SERVER_ERROR'
export const MCP_TOOL_ERROR = 'MCP_TOOL_ERROR'
/** The server's answer was over the stdio message limit (`maxMessageBytes`) and was dropped. */
export const MCP_RESULT_TOO_LARGE = 'MCP_RESULT_TOO_LARGE'

/** A call that did not reach an answer (server gone, timeout, transport failure): an error result. */
export class McpCallError extends Error {
  override name = 'McpCallError'
  constructor(message: string, readonly code = MCP_SERVER_ERROR) {
    super(message)
  }
}

function size(base64: unknown): string {
  return typeof base64 === 'string' ? `${Math.floor(base64.length * 3 / 4)} bytes` : 'no data'
}

function blockText(block: unknown): string {
  if (typeof block !== 'object' || block === null) return `[unsupported MCP content ${JSON.stringify(block)}]`
  const value = block as Record<string, unknown>
  switch (value.type) {
    case 'text':
      return typeof value.text === 'string' ? value.text : ''
    case 'resource_link':
      return `[resource ${String(value.name ?? value.uri)}](${String(value.uri)})`
    case 'image':
      return `[image ${String(value.mimeType)} (${size(value.data)}) returned by the MCP server was not shown: images from MCP tools are not kept]`
    case 'audio':
      return `[audio ${String(value.mimeType)} (${size(value.data)}) returned by the MCP server was not shown: audio is not supported]`
    case 'resource': {
      const resource = (value.resource ?? {}) as Record<string, unknown>
      if (typeof resource.text === 'string') return `[embedded resource ${String(resource.uri)}]\n${resource.text}`
      return `[embedded binary resource ${String(resource.uri)} (${String(resource.mimeType ?? 'unknown type')}) was not shown]`
    }
    default:
      return `[unsupported MCP content block of type ${JSON.stringify(value.type)}]`
  }
}

export function mapCallResult(result: unknown, meta: { server: string; tool: string }): ToolOutput {
  const value = (typeof result === 'object' && result !== null ? result : {}) as Record<string, unknown>
  const blocks = Array.isArray(value.content) ? value.content : []
  let text = blocks.map(blockText).join('\n')
  if (text === '' && value.structuredContent !== undefined) text = JSON.stringify(value.structuredContent)
  if (value.toolResult !== undefined && blocks.length === 0 && text === '') text = JSON.stringify(value.toolResult)
  const isError = value.isError === true
  return {
    content: [{ type: 'text', text: isError ? `Error: ${text || 'the MCP tool reported an error'}` : text }],
    ...(isError ? { isError: true, error: { name: 'McpToolError', code: MCP_TOOL_ERROR } } : {}),
    meta: { mcp: { server: meta.server, tool: meta.tool } },
  } as ToolOutput
}
