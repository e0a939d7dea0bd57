/**
 * `edit`: replace literal text in a file this session has read in its current version.
 */
import { Context } from 'cordis'
import type { Tool, ToolOutput } from '../api.js'
import type { JsonSchema } from '../json-schema.js'
import { BuiltinErrorCode, EditError, FsError, fsFailure, readSessionFile } from './errors.js'
import { editorFiles } from '../editor-files.js'
import { ledgerKey, versionOf, type FileObservations } from './ledger.js'
import { displayPath, looksBinary, resolvePath } from './paths.js'
import { callSandbox, escalationPolicyText, escalationProperties, sandboxingOf, writeFileFenced, type EscalationArgs, type Sandboxing } from './sandboxing.js'
import { withSpill } from './spill.js'
import { refuseHiddenWrite } from './hidden.js'
import { unifiedDiff } from './write.js'

export interface EditToolConfig {
  readonly timeoutMs?: number
}

export interface EditArgs {
  readonly file_path: string
  readonly old_string: string
  readonly new_string: string
  readonly replace_all?: boolean
}

export const editParameters = {
  type: 'object',
  properties: {
    file_path: { type: 'string', minLength: 1, description: 'Path of the file to edit; a relative path is resolved against the session working directory.' },
    old_string: { type: 'string', description: 'Literal text to replace; must match exactly, including whitespace and indentation.' },
    new_string: { type: 'string', description: 'Literal replacement text (an empty string deletes the match).' },
    replace_all: { type: 'boolean', description: 'Replace every occurrence. Default false: old_string must then occur exactly once.' },
  },
  required: ['file_path', 'old_string', 'new_string'],
} as const satisfies JsonSchema

/** Non-overlapping occurrences of `needle` in `haystack`. */
export function countOccurrences(haystack: string, needle: string): number {
  let count = 0
  for (let i = haystack.indexOf(needle); i !== -1; i = haystack.indexOf(needle, i + needle.length)) count++
  return count
}

export interface Replacement {
  readonly text: string
  readonly count: number
}

/**
 * Applies one edit to `text`, throwing an `EditError` the model can act on. A file with CRLF
 * line ends still matches an `old_string` written with LF (the model rarely sees the `\r`).
 */
export function applyEdit(text: string, oldString: string, newString: string, replaceAll: boolean, path: string): Replacement {
  if (oldString === '') throw new EditError('old_string is empty; to create or fill a file use write', BuiltinErrorCode.editNotFound)
  if (oldString === newString) throw new EditError('old_string and new_string are identical; nothing to change', BuiltinErrorCode.editNoChange)
  let search = oldString
  let replacement = newString
  let count = countOccurrences(text, search)
  if (count === 0 && text.includes('\r\n') && oldString.includes('\n') && !oldString.includes('\r\n')) {
    search = oldString.replace(/\n/g, '\r\n')
    replacement = newString.replace(/\r?\n/g, '\r\n')
    count = countOccurrences(text, search)
  }
  if (count === 0) {
    throw new EditError(`old_string was not found in ${path}; read the file again and copy the exact text (whitespace and indentation must match)`, BuiltinErrorCode.editNotFound)
  }
  if (count > 1 && !replaceAll) {
    throw new EditError(`old_string occurs ${count} times in ${path}; include more surrounding text to make it unique, or set replace_all to replace every occurrence`, BuiltinErrorCode.editAmbiguous)
  }
  if (replaceAll) return { text: text.split(search).join(replacement), count }
  const at = text.indexOf(search)
  return { text: text.slice(0, at) + replacement + text.slice(at + search.length), count: 1 }
}

export function createEditTool(ledger: FileObservations, config: EditToolConfig = {}, sandboxing?: Sandboxing): Tool<EditArgs & EscalationArgs> {
  const sandboxed = () => sandboxing?.sandbox() !== undefined
  const plainDescription = 'Edit an existing text file by replacing literal text: old_string must occur exactly once unless replace_all is true. Requires reading the file first in this session. Returns a unified diff of the change.'
  const sandboxedParameters = { ...editParameters, properties: { ...editParameters.properties, ...escalationProperties('operation') } }
  return {
    name: 'edit',
    get description() { return sandboxed() ? `${plainDescription} ${escalationPolicyText('operation')}` : plainDescription },
    get parameters() { return sandboxed() ? sandboxedParameters : editParameters },
    timeoutMs: config.timeoutMs ?? 60_000,
    outputType: `{
  path: string;
  before: string;
  after: string;
}`,
    execute: withSpill('edit', async (args, context): Promise<ToolOutput> => {
      const box = sandboxing === undefined ? undefined : await callSandbox(sandboxing, 'edit', 'operation', args, context)
      const path = resolvePath(context.cwd, args.file_path)
      // A secret inside the workspace is neither shown nor changed (bubblewrap hides it the same way).
      refuseHiddenWrite(box, 'edit', args.file_path, path)
      const key = ledgerKey(context)
      const files = editorFiles(context.scope)
      const before = await readSessionFile(path, files).catch((error) => {
        if ((error as { code?: unknown }).code === 'ENOENT') {
          throw new FsError(`file not found: ${path} (use write to create a new file)`, BuiltinErrorCode.notFound)
        }
        return fsFailure(error, path)
      })
      ledger.assertObserved(key, path, before, 'edit')
      if (looksBinary(before)) throw new FsError(`${path} looks like a binary file; edit only changes text`, BuiltinErrorCode.binary)
      const result = applyEdit(before.toString('utf8'), args.old_string, args.new_string, args.replace_all ?? false, path)
      await writeFileFenced(box, path, result.text, { editor: files })
      ledger.record(key, path, versionOf(Buffer.from(result.text)))
      const diff = unifiedDiff(displayPath(context.cwd, path), before, result.text) ?? ''
      const what = result.count === 1 ? '1 replacement' : `${result.count} replacements`
      return {
        content: [{ type: 'text', text: `Edited ${path} (${what})\n\n${diff}` }],
        meta: { path, replacements: result.count, diff },
        value: { path, before: before.toString('utf8'), after: result.text },
      }
    }),
  }
}

/** Registers `edit` on `ctx.tools`, sharing `ctx.readLedger` with read and write. */
export class EditToolPlugin {
  static readonly inject = ['tools', 'readLedger']
  constructor(ctx: Context, config: EditToolConfig = {}) {
    const tool = createEditTool(ctx.readLedger, config, sandboxingOf(ctx))
    ctx.effect(() => ctx.tools.register(tool))
  }
}
