/**
 * The input box as plain state: a multi-line buffer with a cursor and a history of sent inputs.
 * Every operation returns a new value, so the React component only stores it.
 */
export interface EditorState {
  readonly text: string
  readonly cursor: number
  /** Sent inputs, oldest first. */
  readonly history: readonly string[]
  /** Position while browsing the history (history.length = the draft). */
  readonly historyIndex: number
  /** The unsent text kept while browsing the history. */
  readonly draft: string
}

export function emptyEditor(history: readonly string[] = []): EditorState {
  return { text: '', cursor: 0, history, historyIndex: history.length, draft: '' }
}

/** Pasted and typed text: CRLF and CR become LF, tabs two spaces, other control characters go. */
export function cleanInput(input: string): string {
  return input.replace(/\r\n?/g, '\n').replace(/\t/g, '  ').replace(/[\u0000-\u0009\u000b-\u001f\u007f]/g, '')
}

export function insert(state: EditorState, input: string): EditorState {
  const clean = cleanInput(input)
  if (clean === '') return state
  const text = state.text.slice(0, state.cursor) + clean + state.text.slice(state.cursor)
  return { ...state, text, cursor: state.cursor + clean.length }
}

export function backspace(state: EditorState): EditorState {
  if (state.cursor === 0) return state
  const before = [...state.text.slice(0, state.cursor)]
  const removed = before.pop() ?? ''
  return { ...state, text: before.join('') + state.text.slice(state.cursor), cursor: state.cursor - removed.length }
}

export function deleteForward(state: EditorState): EditorState {
  if (state.cursor >= state.text.length) return state
  const after = [...state.text.slice(state.cursor)]
  after.shift()
  return { ...state, text: state.text.slice(0, state.cursor) + after.join('') }
}

export function deleteWordBefore(state: EditorState): EditorState {
  const before = state.text.slice(0, state.cursor)
  const kept = before.replace(/\S+\s*$|\s+$/, '')
  return { ...state, text: kept + state.text.slice(state.cursor), cursor: kept.length }
}

export function deleteToLineStart(state: EditorState): EditorState {
  const start = lineStart(state.text, state.cursor)
  return { ...state, text: state.text.slice(0, start) + state.text.slice(state.cursor), cursor: start }
}

export function moveLeft(state: EditorState): EditorState {
  if (state.cursor === 0) return state
  const previous = [...state.text.slice(0, state.cursor)].pop() ?? ''
  return { ...state, cursor: state.cursor - previous.length }
}

export function moveRight(state: EditorState): EditorState {
  if (state.cursor >= state.text.length) return state
  const next = [...state.text.slice(state.cursor)][0] ?? ''
  return { ...state, cursor: state.cursor + next.length }
}

function lineStart(text: string, cursor: number): number {
  return text.lastIndexOf('\n', cursor - 1) + 1
}

function lineEnd(text: string, cursor: number): number {
  const end = text.indexOf('\n', cursor)
  return end < 0 ? text.length : end
}

export function home(state: EditorState): EditorState {
  return { ...state, cursor: lineStart(state.text, state.cursor) }
}

export function end(state: EditorState): EditorState {
  return { ...state, cursor: lineEnd(state.text, state.cursor) }
}

/** Up: the line above, or on the first line the previous history entry. */
export function up(state: EditorState): EditorState {
  const start = lineStart(state.text, state.cursor)
  if (start > 0) {
    const column = state.cursor - start
    const previousStart = lineStart(state.text, start - 1)
    return { ...state, cursor: Math.min(previousStart + column, start - 1) }
  }
  if (state.historyIndex === 0) return state
  const historyIndex = state.historyIndex - 1
  const draft = state.historyIndex === state.history.length ? state.text : state.draft
  const text = state.history[historyIndex]
  return { ...state, text, cursor: text.length, historyIndex, draft }
}

/** Down: the line below, or on the last line the next history entry (then the draft). */
export function down(state: EditorState): EditorState {
  const endOfLine = lineEnd(state.text, state.cursor)
  if (endOfLine < state.text.length) {
    const column = state.cursor - lineStart(state.text, state.cursor)
    const nextStart = endOfLine + 1
    return { ...state, cursor: Math.min(nextStart + column, lineEnd(state.text, nextStart)) }
  }
  if (state.historyIndex >= state.history.length) return state
  const historyIndex = state.historyIndex + 1
  const text = historyIndex === state.history.length ? state.draft : state.history[historyIndex]
  return { ...state, text, cursor: text.length, historyIndex }
}

/** Takes the text out (for sending) and records it in the history. */
export function submit(state: EditorState): { text: string; state: EditorState } {
  const text = state.text
  const history = text.trim() === '' || state.history.at(-1) === text ? state.history : [...state.history, text]
  return { text, state: emptyEditor(history) }
}

export function setText(state: EditorState, text: string): EditorState {
  return { ...state, text, cursor: text.length }
}

/** The word under the cursor when it starts with `@` (file completion), with its start. */
export function mentionAtCursor(state: EditorState): { start: number; query: string } | undefined {
  const before = state.text.slice(0, state.cursor)
  const match = /(?:^|\s)@([^\s@]*)$/.exec(before)
  if (match === null) return undefined
  return { start: state.cursor - match[1].length - 1, query: match[1] }
}

/** The slash command being typed: the whole input is `/word` with no space yet. */
export function commandAtCursor(state: EditorState): string | undefined {
  const match = /^\/([\w:-]*)$/.exec(state.text)
  return match === null ? undefined : match[1]
}

export function replaceRange(state: EditorState, start: number, endIndex: number, replacement: string): EditorState {
  const text = state.text.slice(0, start) + replacement + state.text.slice(endIndex)
  return { ...state, text, cursor: start + replacement.length }
}

/**
 * A run of two or more Ctrl-letter keys that reached the app in one read (ink passes it on as
 * one unnamed string): the letters, one per press. Undefined for anything else, including runs
 * with Tab, Enter, line feed or Backspace (text pasted with line breaks stays text).
 */
export function controlPresses(input: string, key: { readonly ctrl: boolean }): string[] | undefined {
  if (key.ctrl || input.length < 2 || !/^[\x01-\x07\x0b\x0c\x0e-\x1a]+$/.test(input)) return undefined
  return [...input].map(char => String.fromCharCode(char.charCodeAt(0) + 96))
}
