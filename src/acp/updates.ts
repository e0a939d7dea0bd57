/**
 * What an editor sees of a session: session events mapped to ACP `session/update` payloads.
 *
 * Two modes. `full` (the default) streams what the agent does: `agent_message_chunk` and
 * `agent_thought_chunk` per delta, `tool_call` when the model's call is logged (kind, a human
 * title, file `locations`, `rawInput`), `tool_call_update` when its body starts (`in_progress`)
 * and when it ends (`completed` / `failed`, with the result text and, for file edits, a `diff`
 * block), and `plan` from the todo list. `recorded` emits exactly what the original system
 * sends: one `agent_message_chunk` per committed assistant message with text (the protocol
 * conformance suite uses it).
 *
 * `replayUpdates` turns a stored log into the updates a client needs to rebuild the conversation
 * on `session/load`: committed messages rather than deltas, and every tool call with its outcome.
 */
import { readFile, stat } from 'node:fs/promises'
import { createRequire } from 'node:module'
import { isAbsolute, resolve } from 'node:path'
import type { AssistantMessage, ContentBlock, ImageBlock, StreamChunk, ToolResultMessage, UserMessage } from '../llm/types.js'
import type { SessionEvent } from '../session/types.js'
import type { EditorFiles } from '../tools/editor-files.js'

export type UpdateMode = 'full' | 'recorded'

/** One `session/update` payload (the `update` member of the notification). */
export type SessionUpdate = { readonly sessionUpdate: string } & Record<string, unknown>

export type ToolKind = 'read' | 'edit' | 'delete' | 'move' | 'search' | 'execute' | 'think' | 'fetch' | 'other'

/** A file's text (or the changed part of it) before and after an edit. */
export interface FileChange {
  readonly path: string
  readonly oldText: string | null
  readonly newText: string
}

const KINDS: Readonly<Record<string, ToolKind>> = {
  read: 'read',
  write: 'edit',
  edit: 'edit',
  bash: 'execute',
  glob: 'search',
  grep: 'search',
  web_fetch: 'fetch',
  web_search: 'fetch',
  todo_write: 'think',
}

export function toolKind(name: string): ToolKind {
  return KINDS[name] ?? 'other'
}

/** The tools whose `file_path` argument names one file they read or change. */
const FILE_TOOLS = new Set(['read', 'write', 'edit'])

export function parseArguments(text: string): unknown {
  if (text.trim() === '') return {}
  try {
    return JSON.parse(text) as unknown
  } catch {
    return text
  }
}

function stringField(input: unknown, key: string): string | undefined {
  if (typeof input !== 'object' || input === null) return undefined
  const value = (input as Record<string, unknown>)[key]
  return typeof value === 'string' && value !== '' ? value : undefined
}

/** The absolute path a file tool acts on, resolved against the session's folder. */
export function toolPath(name: string, input: unknown, cwd: string | undefined): string | undefined {
  if (!FILE_TOOLS.has(name)) return undefined
  const path = stringField(input, 'file_path')
  if (path === undefined) return undefined
  return isAbsolute(path) || cwd === undefined ? path : resolve(cwd, path)
}

/** A title a person reads in a tool list: the command, the path, the pattern, the URL. */
export function toolTitle(name: string, input: unknown, cwd: string | undefined): string {
  const oneLine = (text: string) => {
    const line = text.split('\n')[0] ?? ''
    return line.length > 120 ? `${line.slice(0, 119)}…` : line
  }
  switch (name) {
    case 'bash': {
      const command = stringField(input, 'command')
      return command === undefined ? 'bash' : oneLine(command)
    }
    case 'read':
    case 'write':
    case 'edit': {
      const path = toolPath(name, input, cwd)
      const verb = name === 'read' ? 'Read' : name === 'write' ? 'Write' : 'Edit'
      return path === undefined ? name : `${verb} ${path}`
    }
    case 'glob':
    case 'grep': {
      const pattern = stringField(input, 'pattern')
      return pattern === undefined ? name : `${name} ${oneLine(pattern)}`
    }
    case 'web_fetch': {
      const url = stringField(input, 'url')
      return url === undefined ? name : `Fetch ${url}`
    }
    case 'web_search': {
      const list = typeof input === 'object' && input !== null ? (input as Record<string, unknown>).queries : undefined
      const queries = Array.isArray(list) ? list.filter((query): query is string => typeof query === 'string') : []
      return queries.length === 0 ? name : `Search ${oneLine(queries.map(query => query.replace(/\s+/g, ' ').trim()).join(', '))}`
    }
    case 'todo_write':
      return 'Update plan'
    default:
      return name
  }
}

function text(blocks: readonly ContentBlock[], type: 'text' | 'reasoning'): string {
  let out = ''
  for (const block of blocks) if (block.type === type) out += block.text
  return out
}

/** The bytes of stored images a replay sends, by attachment id (base64 and media type). */
export type ReplayImages = ReadonlyMap<string, { readonly data: string; readonly mimeType: string }>

/**
 * An image block as ACP content: inline data as it is, a stored attachment with the bytes the
 * caller read for it, else (bytes gone, or a live update) named instead.
 */
function imageContent(block: ImageBlock, images?: ReplayImages): Record<string, unknown> {
  if ('data' in block) return { type: 'image', data: block.data, mimeType: block.mimeType }
  const stored = images?.get(block.attachment.attachmentId)
  if (stored !== undefined) return { type: 'image', data: stored.data, mimeType: stored.mimeType }
  return { type: 'text', text: `[image ${block.attachment.name ?? block.attachment.attachmentId}]` }
}

/** The attachment ids of the stored images a replay of `events` shows (user messages and tool results). */
export function replayedAttachments(events: readonly SessionEvent[]): string[] {
  const ids = new Set<string>()
  const add = (blocks: readonly ContentBlock[]) => {
    for (const block of blocks) if (block.type === 'image' && 'attachment' in block) ids.add(block.attachment.attachmentId)
  }
  for (const event of events) {
    if (event.type === 'user/message' && (event.data as UserMessage).source.kind === 'user') add((event.data as UserMessage).content)
    else if (event.type === 'tool/result') add((event.data as { message: ToolResultMessage }).message.content[0].content)
  }
  return [...ids]
}

function toolCallUpdate(data: { callId: string; name: string; arguments: string }, cwd: string | undefined, status: 'pending' | 'completed' | 'failed'): SessionUpdate {
  const rawInput = parseArguments(data.arguments)
  const path = toolPath(data.name, rawInput, cwd)
  return {
    sessionUpdate: 'tool_call',
    toolCallId: data.callId,
    title: toolTitle(data.name, rawInput, cwd),
    kind: toolKind(data.name),
    status,
    ...(path === undefined ? {} : { locations: [{ path }] }),
    rawInput,
  }
}

/**
 * The finishing `tool_call_update` of a call: its status and result content. A call that ran in
 * the editor's terminal keeps that terminal as its content (the editor shows the output and exit
 * status itself); the text the model got is its `rawOutput`.
 */
export function toolResultUpdate(message: ToolResultMessage, failed: boolean, change?: FileChange | readonly FileChange[], terminalId?: string, images?: ReplayImages): SessionUpdate {
  const result = message.content[0]
  if (terminalId !== undefined) {
    const rawOutput = result.content.filter(block => block.type === 'text').map(block => block.text).join('')
    return { sessionUpdate: 'tool_call_update', toolCallId: result.toolCallId, status: failed ? 'failed' : 'completed', content: [{ type: 'terminal', terminalId }], rawOutput }
  }
  const content: unknown[] = []
  if (change !== undefined && !failed) {
    for (const one of Array.isArray(change) ? change as readonly FileChange[] : [change as FileChange]) content.push({ type: 'diff', path: one.path, oldText: one.oldText, newText: one.newText })
  }
  for (const block of result.content) {
    if (block.type === 'text' && block.text !== '') content.push({ type: 'content', content: { type: 'text', text: block.text } })
    else if (block.type === 'image') content.push({ type: 'content', content: imageContent(block, images) })
  }
  return { sessionUpdate: 'tool_call_update', toolCallId: result.toolCallId, status: failed ? 'failed' : 'completed', content }
}

interface DispatchData { readonly parentCallId: string; readonly subCallId: string; readonly name: string; readonly arguments: unknown; readonly content?: readonly ContentBlock[]; readonly isError?: boolean }

/**
 * A program's inner call (code mode) as a tool call of its own, nested under the `run_code`
 * call through `_meta.parentToolCallId` (ACP has no nesting field): `tool_call` in progress when
 * it starts, the finishing `tool_call_update` when it ends.
 */
export function dispatchUpdate(type: string, data: DispatchData, cwd: string | undefined, images?: ReplayImages): SessionUpdate | undefined {
  const _meta = { parentToolCallId: data.parentCallId }
  if (type === 'tool/code-dispatch-start') {
    const call = toolCallUpdate({ callId: data.subCallId, name: data.name, arguments: JSON.stringify(data.arguments ?? {}) }, cwd, 'pending')
    return { ...call, status: 'in_progress', _meta }
  }
  if (type !== 'tool/code-dispatch') return undefined
  const content: unknown[] = []
  for (const block of data.content ?? []) {
    if (block.type === 'text' && block.text !== '') content.push({ type: 'content', content: { type: 'text', text: block.text } })
    else if (block.type === 'image') content.push({ type: 'content', content: imageContent(block, images) })
  }
  return { sessionUpdate: 'tool_call_update', toolCallId: data.subCallId, status: data.isError === true ? 'failed' : 'completed', content, _meta }
}

function planUpdate(todos: readonly { content: string; status: string }[]): SessionUpdate {
  return { sessionUpdate: 'plan', entries: todos.map(todo => ({ content: todo.content, priority: 'medium', status: todo.status })) }
}

function resultFailed(data: { message: ToolResultMessage; error?: unknown }): boolean {
  return data.error !== undefined || data.message.content[0].isError
}

/**
 * The live updates of one event, in `mode`. `changes` holds file changes captured around tool
 * bodies (by call id), `terminals` the editor terminals embedded in calls; `cwd` is the session's folder.
 */
export function liveUpdates(event: SessionEvent, mode: UpdateMode, cwd: string | undefined, changes?: ReadonlyMap<string, FileChange>, terminals?: ReadonlyMap<string, string>): SessionUpdate[] {
  if (mode === 'recorded') {
    if (event.type !== 'assistant/message') return []
    const body = text((event.data as { message: AssistantMessage }).message.content, 'text')
    return body === '' ? [] : [{ sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: body } }]
  }
  switch (event.type) {
    case 'assistant/chunk': {
      const chunk = (event.data as { chunk: StreamChunk }).chunk
      if (chunk.type === 'text-delta' && chunk.text !== '') return [{ sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: chunk.text } }]
      if (chunk.type === 'reasoning-delta' && chunk.text !== '') return [{ sessionUpdate: 'agent_thought_chunk', content: { type: 'text', text: chunk.text } }]
      return []
    }
    case 'tool/call':
      return [toolCallUpdate(event.data as { callId: string; name: string; arguments: string }, cwd, 'pending')]
    case 'tool/result': {
      const data = event.data as { message: ToolResultMessage; error?: unknown }
      const callId = data.message.content[0].toolCallId
      return [toolResultUpdate(data.message, resultFailed(data), changes?.get(callId), terminals?.get(callId))]
    }
    case 'todo/write':
      return [planUpdate((event.data as { todos: { content: string; status: string }[] }).todos)]
    case 'tool/code-dispatch-start':
    case 'tool/code-dispatch': {
      const update = dispatchUpdate(event.type, event.data as DispatchData, cwd)
      return update === undefined ? [] : [update]
    }
    default:
      return []
  }
}

// `diff` is loaded on the first replayed edit, not at start-up.
let diffModule: typeof import('diff') | undefined

/**
 * The diffs of a stored write or edit, from what the log keeps: a new file's whole content (from
 * the call's arguments), else one block per hunk of the unified diff in the result's `meta`
 * (the changed lines with their context; a file's whole text is not stored).
 */
export function storedChanges(call: { name: string; arguments: string }, meta: unknown, cwd: string | undefined): FileChange[] {
  if (call.name !== 'write' && call.name !== 'edit') return []
  const input = parseArguments(call.arguments)
  const path = stringField(meta, 'path') ?? toolPath(call.name, input, cwd)
  if (path === undefined || typeof meta !== 'object' || meta === null) return []
  const info = meta as { created?: unknown; diff?: unknown }
  if (call.name === 'write' && info.created === true) {
    const content = typeof input === 'object' && input !== null ? (input as { content?: unknown }).content : undefined
    return typeof content === 'string' ? [{ path, oldText: null, newText: content }] : []
  }
  if (typeof info.diff !== 'string' || info.diff === '') return []
  diffModule ??= createRequire(import.meta.url)('diff') as typeof import('diff')
  let patches: ReturnType<typeof diffModule.parsePatch>
  try {
    patches = diffModule.parsePatch(info.diff)
  } catch {
    return []
  }
  const changes: FileChange[] = []
  for (const hunk of patches[0]?.hunks ?? []) {
    let oldText = ''
    let newText = ''
    hunk.lines.forEach((line, index) => {
      // `\ No newline at end of file` belongs to the line before it.
      const end = hunk.lines[index + 1]?.startsWith('\\') === true ? '' : '\n'
      const body = line.slice(1) + end
      if (line.startsWith(' ')) { oldText += body; newText += body }
      else if (line.startsWith('-')) oldText += body
      else if (line.startsWith('+')) newText += body
    })
    changes.push({ path, oldText, newText })
  }
  return changes
}

/**
 * The updates that rebuild a stored conversation (`session/load`): user and assistant messages
 * whole, reasoning as thoughts, each tool call with its final status (file edits with their
 * diffs, see `storedChanges`), and the last plan.
 */
export function replayUpdates(events: readonly SessionEvent[], cwd: string | undefined, images?: ReplayImages): SessionUpdate[] {
  const out: SessionUpdate[] = []
  const calls = new Map<string, { callId: string; name: string; arguments: string }>()
  for (const event of events) {
    switch (event.type) {
      case 'user/message': {
        const message = event.data as UserMessage
        // Only what the person typed: runtime contexts, notices and other plugin input stay out.
        if (message.source.kind !== 'user') break
        for (const block of message.content) {
          if (block.type === 'text' && block.text !== '') out.push({ sessionUpdate: 'user_message_chunk', content: { type: 'text', text: block.text } })
          else if (block.type === 'image') out.push({ sessionUpdate: 'user_message_chunk', content: imageContent(block, images) })
        }
        break
      }
      case 'assistant/message': {
        const message = (event.data as { message: AssistantMessage }).message
        const thought = text(message.content, 'reasoning')
        if (thought !== '') out.push({ sessionUpdate: 'agent_thought_chunk', content: { type: 'text', text: thought } })
        const body = text(message.content, 'text')
        if (body !== '') out.push({ sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: body } })
        break
      }
      case 'tool/call': {
        const data = event.data as { callId: string; name: string; arguments: string }
        calls.set(data.callId, data)
        out.push(toolCallUpdate(data, cwd, 'pending'))
        break
      }
      case 'tool/result': {
        const data = event.data as { message: ToolResultMessage; error?: unknown; meta?: unknown }
        const call = calls.get(data.message.content[0].toolCallId)
        if (call !== undefined) out.push(toolResultUpdate(data.message, resultFailed(data), storedChanges(call, data.meta, cwd), undefined, images))
        break
      }
      case 'todo/write':
        out.push(planUpdate((event.data as { todos: { content: string; status: string }[] }).todos))
        break
      case 'tool/code-dispatch-start':
      case 'tool/code-dispatch': {
        const update = dispatchUpdate(event.type, event.data as DispatchData, cwd, images)
        if (update !== undefined) out.push(update)
        break
      }
      default:
        break
    }
  }
  return out
}

/** The largest file whose text a write/edit diff carries. */
const MAX_DIFF_BYTES = 1 << 20

/**
 * A regular file's text when it is at most MAX_DIFF_BYTES; null when missing, large or not a
 * file. Read through the editor when it holds the session's files.
 */
export async function readSmallText(path: string, files?: EditorFiles): Promise<string | null> {
  try {
    if (files?.readText !== undefined) {
      const text = await files.readText(path)
      return Buffer.byteLength(text) > MAX_DIFF_BYTES ? null : text
    }
    const info = await stat(path)
    if (!info.isFile() || info.size > MAX_DIFF_BYTES) return null
    return await readFile(path, 'utf8')
  } catch {
    return null
  }
}
