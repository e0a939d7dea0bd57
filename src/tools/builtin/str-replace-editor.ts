/**
 * `str_replace_editor`: one tool with five commands over text files (docs/shells.md).
 *
 * - `view`: a file with line numbers (optionally `view_range: [first, last]`, `-1` for the end),
 *   or a folder's entries two levels deep (hidden ones left out). Viewing a file is reading it:
 *   the read ledger records the version seen.
 * - `create`: writes `file_text`; over an existing file only when this session has seen its
 *   current version (the read-before-write rule of `write`).
 * - `str_replace`: replaces `old_str`, which must occur exactly once, by `new_str` (default empty).
 * - `insert`: inserts `new_str` after line `insert_line` (0: at the top).
 * - `undo_edit`: puts the file back as it was before this session's last change to it; the
 *   history is kept in memory, per session and file.
 *
 * Every change goes through what `write` and `edit` go through: the sandbox's write fence and
 * protected paths, its escalation and approval (`sandbox_permissions`), the hidden secrets, the
 * read ledger. Its result `meta` has `write`'s and `edit`'s shape (`path`, `created`/`bytes` or
 * `diff`), so the file-change records (checkpoints, rewind, the surfaces) count it as theirs.
 */
import { readdir, unlink } from 'node:fs/promises'
import { join } from 'node:path'
import { Context } from 'cordis'
import type { Tool, ToolContext, ToolOutput } from '../api.js'
import type { JsonSchema } from '../json-schema.js'
import type { JsonValue } from '../../session/types.js'
import { checkWritable, SandboxDenied } from '../../sandbox/fence.js'
import { deniedMarker, SandboxErrorCode } from '../../sandbox/modes.js'
import { editorFiles } from '../editor-files.js'
import { BuiltinErrorCode, EditError, FsError, fsFailure, readSessionFile } from './errors.js'
import { readGuard, refuseHidden, refuseHiddenWrite } from './hidden.js'
import { ledgerKey, versionOf, type FileObservations } from './ledger.js'
import { displayPath, looksBinary, resolvePath } from './paths.js'
import { callSandbox, escalationPolicyText, escalationProperties, fenceOf, sandboxingOf, writeFileFenced, type CallSandbox, type EscalationArgs, type Sandboxing } from './sandboxing.js'
import { withSpill } from './spill.js'
import { countOccurrences } from './edit.js'
import { countLines, unifiedDiff } from './write.js'

export const EDITOR_COMMANDS = ['view', 'create', 'str_replace', 'insert', 'undo_edit'] as const
export type EditorCommand = typeof EDITOR_COMMANDS[number]

export interface EditorArgs extends EscalationArgs {
  readonly command: EditorCommand
  readonly path: string
  readonly file_text?: string
  readonly old_str?: string
  readonly new_str?: string
  readonly insert_line?: number
  readonly view_range?: readonly number[]
}

export const editorParameters = {
  type: 'object',
  properties: {
    command: { type: 'string', enum: [...EDITOR_COMMANDS], description: 'What to do: view, create, str_replace, insert or undo_edit.' },
    path: { type: 'string', minLength: 1, description: 'Path of the file (or, for view, folder); a relative path is resolved against the session working directory.' },
    file_text: { type: 'string', description: 'create: the whole content of the file.' },
    old_str: { type: 'string', description: 'str_replace: the literal text to replace; it must occur exactly once, whitespace and indentation included.' },
    new_str: { type: 'string', description: 'str_replace: the replacement (default empty: the text is removed). insert: the text to insert.' },
    insert_line: { type: 'integer', minimum: 0, description: 'insert: the line after which new_str goes (0 puts it at the top).' },
    view_range: { type: 'array', items: { type: 'integer' }, minItems: 2, maxItems: 2, description: 'view: [first, last] line numbers, 1-based; last -1 means to the end of the file.' },
  },
  required: ['command', 'path'],
} as const satisfies JsonSchema

/** A file as `view` shows it: each line numbered, right-aligned in six columns, two spaces, the line. */
export function numberedLines(lines: readonly string[], first = 1): string {
  return lines.map((line, i) => `${String(first + i).padStart(6)}  ${line}\n`).join('')
}

/** Per session and file: the contents before each change, newest last (`null`: the file did not exist). */
export class EditHistory {
  private readonly sessions = new Map<string, Map<string, (string | null)[]>>()
  readonly limit: number

  constructor(limit = 50) {
    this.limit = limit
  }

  push(session: string, path: string, before: string | null): void {
    let files = this.sessions.get(session)
    if (files === undefined) this.sessions.set(session, files = new Map())
    const list = files.get(path) ?? []
    list.push(before)
    if (list.length > this.limit) list.shift()
    files.set(path, list)
  }

  pop(session: string, path: string): string | null | undefined {
    const list = this.sessions.get(session)?.get(path)
    if (list === undefined || list.length === 0) return undefined
    return list.pop()
  }

  /** Puts back what `pop` took when the undo could not be done. */
  restore(session: string, path: string, before: string | null): void {
    this.push(session, path, before)
  }

  forget(session: string): void {
    this.sessions.delete(session)
  }
}

const edited = (path: string) => `The file ${path} has been edited successfully.`

function need<T>(value: T | undefined, name: string, command: string): T {
  if (value === undefined) throw new EditError(`${command} needs ${name}`, BuiltinErrorCode.editNotFound)
  return value
}

/** The lines of `text` as view counts them: a final newline ends with one empty line. */
function splitLines(text: string): string[] {
  return text.split('\n')
}

export function createStrReplaceEditorTool(ledger: FileObservations, history: EditHistory, sandboxing?: Sandboxing): Tool<EditorArgs> {
  const sandboxed = () => sandboxing?.sandbox() !== undefined
  const plainDescription = 'View, create and edit text files. `view` shows a file with line numbers (view_range [first, last] for part of it; -1 for the end) or lists a folder two levels deep. `create` writes file_text to a new file (an existing one only after viewing or reading it). `str_replace` replaces old_str, which must occur exactly once in the file (whitespace included), by new_str. `insert` puts new_str after line insert_line (0 for the top). `undo_edit` takes back the last change this session made to the file.'
  const sandboxedParameters = { ...editorParameters, properties: { ...editorParameters.properties, ...escalationProperties('operation') } }

  async function current(path: string, context: ToolContext): Promise<Buffer> {
    return readSessionFile(path, editorFiles(context.scope)).catch((error: unknown) => {
      if ((error as { code?: unknown }).code === 'ENOENT') throw new FsError(`file not found: ${path} (create makes a new file)`, BuiltinErrorCode.notFound)
      return fsFailure(error, path)
    })
  }

  async function existing(path: string, context: ToolContext): Promise<Buffer | undefined> {
    try {
      return await readSessionFile(path, editorFiles(context.scope))
    } catch (error) {
      if ((error as { code?: unknown }).code === 'ENOENT') return undefined
      return fsFailure(error, path)
    }
  }

  /** Writes `after` in place of `before` and answers with `edit`'s meta. */
  async function change(box: CallSandbox | undefined, path: string, before: Buffer, after: string, context: ToolContext, text: string): Promise<ToolOutput> {
    await writeFileFenced(box, path, after, { editor: editorFiles(context.scope) })
    const key = ledgerKey(context)
    ledger.record(key, path, versionOf(Buffer.from(after)))
    history.push(key, path, before.toString('utf8'))
    const diff = unifiedDiff(displayPath(context.cwd, path), before, after) ?? ''
    return { content: [{ type: 'text', text }], meta: { path, diff }, value: { path, before: before.toString('utf8'), after } }
  }

  async function view(args: EditorArgs, path: string, context: ToolContext): Promise<ToolOutput> {
    const guard = await readGuard(sandboxing, context)
    refuseHidden(guard, 'str_replace_editor', args.path, path)
    let entries: string[] | undefined
    try {
      entries = await listFolder(path)
    } catch (error) {
      const code = (error as { code?: unknown }).code
      if (code !== 'ENOTDIR') {
        if (code === 'ENOENT') throw new FsError(`file not found: ${path}`, BuiltinErrorCode.notFound)
        return fsFailure(error, path)
      }
    }
    if (entries !== undefined) {
      if (args.view_range !== undefined) throw new EditError('view_range applies to files; the path is a folder', BuiltinErrorCode.editNotFound)
      return { content: [{ type: 'text', text: `Files and folders up to 2 levels deep in ${path}, hidden ones left out:\n${entries.map(entry => `${join(path, entry)}\n`).join('')}` }], meta: { viewed: path, entries: entries.length } }
    }
    const bytes = await current(path, context)
    if (looksBinary(bytes)) throw new FsError(`${path} looks like a binary file; view shows text`, BuiltinErrorCode.binary)
    ledger.record(ledgerKey(context), path, versionOf(bytes))
    const lines = splitLines(bytes.toString('utf8'))
    if (args.view_range === undefined) {
      return { content: [{ type: 'text', text: `Here's the content of ${path} with line numbers (which has a total of ${lines.length} lines):\n${numberedLines(lines)}` }], meta: { viewed: path, lines: lines.length } }
    }
    const [first, last] = args.view_range as [number, number]
    const end = last === -1 ? lines.length : last
    if (first < 1 || first > lines.length) throw new EditError(`view_range starts at ${first}, outside the file's lines 1 to ${lines.length}`, BuiltinErrorCode.editNotFound)
    if (end < first || end > lines.length) throw new EditError(`view_range ends at ${last}: it must be -1 or a line from ${first} to ${lines.length}`, BuiltinErrorCode.editNotFound)
    return { content: [{ type: 'text', text: `Here's the content of ${path} with line numbers (lines ${first} to ${end} of ${lines.length}):\n${numberedLines(lines.slice(first - 1, end), first)}` }], meta: { viewed: path, lines: lines.length } }
  }

  return {
    name: 'str_replace_editor',
    get description() { return sandboxed() ? `${plainDescription} ${escalationPolicyText('operation')}` : plainDescription },
    get parameters() { return sandboxed() ? sandboxedParameters : editorParameters },
    timeoutMs: 60_000,
    execute: withSpill('str_replace_editor', async (args, context): Promise<ToolOutput> => {
      const path = resolvePath(context.cwd, args.path)
      if (args.command === 'view') return view(args, path, context)
      const box = sandboxing === undefined ? undefined : await callSandbox(sandboxing, 'str_replace_editor', 'operation', args, context)
      refuseHiddenWrite(box, 'str_replace_editor', args.path, path)
      const key = ledgerKey(context)
      switch (args.command) {
        case 'create': {
          const text = need(args.file_text, 'file_text', 'create')
          const before = await existing(path, context)
          if (before !== undefined) ledger.assertObserved(key, path, before, 'create over an existing file')
          await writeFileFenced(box, path, text, { mkdirs: true, editor: editorFiles(context.scope) })
          ledger.record(key, path, versionOf(Buffer.from(text)))
          history.push(key, path, before === undefined ? null : before.toString('utf8'))
          if (before === undefined) {
            const bytes = Buffer.byteLength(text)
            return { content: [{ type: 'text', text: `New file created successfully at: ${path}` }], meta: { path, created: true, lines: countLines(text), bytes }, value: { path, operation: 'create', before: null, after: text } }
          }
          const diff = unifiedDiff(displayPath(context.cwd, path), before, text)
          const diffMeta: Record<string, JsonValue> = diff === undefined ? {} : { diff }
          return { content: [{ type: 'text', text: `The file ${path} has been overwritten.` }], meta: { path, created: false, ...diffMeta }, value: { path, operation: 'update', before: before.toString('utf8'), after: text } }
        }
        case 'str_replace': {
          const oldStr = need(args.old_str, 'old_str', 'str_replace')
          const newStr = args.new_str ?? ''
          if (oldStr === '') throw new EditError('old_str is empty; give the exact text to replace', BuiltinErrorCode.editNotFound)
          const before = await current(path, context)
          ledger.assertObserved(key, path, before, 'str_replace')
          if (looksBinary(before)) throw new FsError(`${path} looks like a binary file; str_replace only changes text`, BuiltinErrorCode.binary)
          const text = before.toString('utf8')
          const count = countOccurrences(text, oldStr)
          if (count === 0) throw new EditError(`nothing replaced: old_str does not occur in ${path} as written; view the file and copy the exact text (whitespace and indentation included)`, BuiltinErrorCode.editNotFound)
          if (count > 1) {
            const lines: number[] = []
            for (let at = text.indexOf(oldStr); at !== -1; at = text.indexOf(oldStr, at + oldStr.length)) lines.push(countLines(text.slice(0, at + 1)))
            throw new EditError(`nothing replaced: old_str occurs ${count} times in ${path} (lines ${lines.join(', ')}); include more of the surrounding text so it occurs once`, BuiltinErrorCode.editAmbiguous)
          }
          const at = text.indexOf(oldStr)
          return change(box, path, before, text.slice(0, at) + newStr + text.slice(at + oldStr.length), context, edited(path))
        }
        case 'insert': {
          const line = need(args.insert_line, 'insert_line', 'insert')
          const newStr = need(args.new_str, 'new_str', 'insert')
          const before = await current(path, context)
          ledger.assertObserved(key, path, before, 'insert')
          if (looksBinary(before)) throw new FsError(`${path} looks like a binary file; insert only changes text`, BuiltinErrorCode.binary)
          const lines = splitLines(before.toString('utf8'))
          if (line < 0 || line > lines.length) throw new EditError(`insert_line ${line} is outside the file: it must be from 0 to ${lines.length}`, BuiltinErrorCode.editNotFound)
          const after = [...lines.slice(0, line), ...splitLines(newStr), ...lines.slice(line)].join('\n')
          return change(box, path, before, after, context, edited(path))
        }
        case 'undo_edit': {
          const previous = history.pop(key, path)
          if (previous === undefined) throw new EditError(`nothing to undo for ${path}: this session has not changed it (or every change was undone)`, BuiltinErrorCode.editNoChange)
          try {
            const now = await existing(path, context)
            if (now === undefined) throw new FsError(`${path} was deleted since its last change; nothing was undone`, BuiltinErrorCode.notFound)
            ledger.assertObserved(key, path, now, 'undo_edit')
            if (previous === null) {
              await removeFenced(box, path)
              return { content: [{ type: 'text', text: `Last edit to ${path} undone: the file it created is removed.` }], meta: { path, removed: true } }
            }
            await writeFileFenced(box, path, previous, { editor: editorFiles(context.scope) })
            ledger.record(key, path, versionOf(Buffer.from(previous)))
            const diff = unifiedDiff(displayPath(context.cwd, path), now, previous) ?? ''
            return { content: [{ type: 'text', text: `Last edit to ${path} undone.` }], meta: { path, diff } }
          } catch (error) {
            history.restore(key, path, previous)
            throw error
          }
        }
        default:
          throw new EditError(`unknown command ${JSON.stringify(args.command)}: use one of ${EDITOR_COMMANDS.join(', ')}`, BuiltinErrorCode.editNotFound)
      }
    }),
  }
}

/** Removes a file the session created, through the fence when a sandbox is mounted. */
async function removeFenced(box: CallSandbox | undefined, path: string): Promise<void> {
  try {
    if (box !== undefined) await checkWritable(path, fenceOf(box))
    await unlink(path)
  } catch (error) {
    if (error instanceof SandboxDenied && box !== undefined) throw new FsError(deniedMarker(box.mode), SandboxErrorCode.fsDenied)
    return fsFailure(error, path)
  }
}

/** A folder's entries two levels deep, hidden ones (a leading dot) left out, sorted. */
async function listFolder(path: string): Promise<string[]> {
  const out: string[] = []
  const top = await readdir(path, { withFileTypes: true })
  for (const entry of top.filter(e => !e.name.startsWith('.')).sort((a, b) => a.name.localeCompare(b.name))) {
    out.push(entry.isDirectory() ? `${entry.name}/` : entry.name)
    if (!entry.isDirectory()) continue
    const inner = await readdir(join(path, entry.name), { withFileTypes: true }).catch(() => [])
    for (const child of inner.filter(e => !e.name.startsWith('.')).sort((a, b) => a.name.localeCompare(b.name))) {
      out.push(`${entry.name}/${child.name}${child.isDirectory() ? '/' : ''}`)
    }
  }
  return out
}

/** Registers `str_replace_editor` (row `tool-str-replace-editor`), sharing `ctx.readLedger` with read, write and edit. */
export class StrReplaceEditorToolPlugin {
  static readonly inject = ['tools', 'readLedger']
  readonly history = new EditHistory()
  constructor(ctx: Context) {
    const tool = createStrReplaceEditorTool(ctx.readLedger, this.history, sandboxingOf(ctx))
    ctx.effect(() => ctx.tools.register(tool))
    ctx.on('session/deleted', async (id) => { this.history.forget(id) })
  }
}
