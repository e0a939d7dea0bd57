/**
 * `write`: create a file, or overwrite one this session has read in its current version.
 */
import { editorFiles, type EditorFiles } from '../editor-files.js'
import { createRequire } from 'node:module'
import { Context } from 'cordis'
import type { Tool, ToolOutput } from '../api.js'
import type { JsonValue } from '../../session/types.js'
import type { JsonSchema } from '../json-schema.js'
import { fsFailure, readSessionFile } from './errors.js'
import { ledgerKey, versionOf, type FileObservations } from './ledger.js'
import { displayPath, looksBinary, resolvePath } from './paths.js'
import { callSandbox, escalationPolicyText, escalationProperties, sandboxingOf, writeFileFenced, type EscalationArgs, type Sandboxing } from './sandboxing.js'
import { withSpill } from './spill.js'
import { refuseHiddenWrite } from './hidden.js'
import { plural } from '../../host/numbers.js'

export interface WriteToolConfig {
  /** Diffs larger than this (characters) are left out of `meta` (the log keeps meta forever). */
  readonly maxMetaDiffChars?: number
  readonly timeoutMs?: number
}

export const WRITE_DEFAULTS = { maxMetaDiffChars: 100_000, timeoutMs: 60_000 } as const

export interface WriteArgs {
  readonly file_path: string
  readonly content: string
}

export const writeParameters = {
  type: 'object',
  properties: {
    file_path: { type: 'string', minLength: 1, description: 'Path of the file to write; a relative path is resolved against the session working directory. Parent folders are created.' },
    content: { type: 'string', description: 'The complete new content of the file.' },
  },
  required: ['file_path', 'content'],
} as const satisfies JsonSchema

export function countLines(text: string): number {
  if (text.length === 0) return 0
  let n = 0
  for (let i = text.indexOf('\n'); i !== -1; i = text.indexOf('\n', i + 1)) n++
  return text.endsWith('\n') ? n : n + 1
}

// `diff` is loaded on the first diff, not at start-up (most runs never write a file).
let diffModule: typeof import('diff') | undefined

/** `before` or `after` as text for a diff, or undefined when either is binary. */
export function unifiedDiff(label: string, before: Uint8Array, after: string): string | undefined {
  if (looksBinary(before)) return undefined
  diffModule ??= createRequire(import.meta.url)('diff') as typeof import('diff')
  return diffModule.createTwoFilesPatch(label, label, Buffer.from(before).toString('utf8'), after, '', '', { context: 3 })
}

async function readExisting(path: string, files: EditorFiles | undefined): Promise<Buffer | undefined> {
  try {
    return await readSessionFile(path, files)
  } catch (error) {
    if ((error as { code?: unknown }).code === 'ENOENT') return undefined
    return fsFailure(error, path)
  }
}

export function createWriteTool(ledger: FileObservations, config: WriteToolConfig = {}, sandboxing?: Sandboxing): Tool<WriteArgs & EscalationArgs> {
  const maxMetaDiff = config.maxMetaDiffChars ?? WRITE_DEFAULTS.maxMetaDiffChars
  const sandboxed = () => sandboxing?.sandbox() !== undefined
  const plainDescription = 'Write a file with the given content, replacing it entirely. Creates the file (and missing parent folders) if it does not exist. Overwriting an existing file requires reading its current version with read first in this session; prefer edit for changing part of a file.'
  const sandboxedParameters = { ...writeParameters, properties: { ...writeParameters.properties, ...escalationProperties('operation') } }
  return {
    name: 'write',
    get description() { return sandboxed() ? `${plainDescription} ${escalationPolicyText('operation')}` : plainDescription },
    get parameters() { return sandboxed() ? sandboxedParameters : writeParameters },
    timeoutMs: config.timeoutMs ?? WRITE_DEFAULTS.timeoutMs,
    outputType: `{
  path: string;
  operation: "create" | "update";
  before: string | null;
  after: string;
}`,
    execute: withSpill('write', async (args, context): Promise<ToolOutput> => {
      const box = sandboxing === undefined ? undefined : await callSandbox(sandboxing, 'write', 'operation', args, context)
      const path = resolvePath(context.cwd, args.file_path)
      // A secret inside the workspace is neither shown nor changed (bubblewrap hides it the same way).
      refuseHiddenWrite(box, 'write', args.file_path, path)
      const key = ledgerKey(context)
      const files = editorFiles(context.scope)
      const before = await readExisting(path, files)
      if (before !== undefined) ledger.assertObserved(key, path, before, 'write')
      await writeFileFenced(box, path, args.content, { mkdirs: true, editor: files })
      ledger.record(key, path, versionOf(Buffer.from(args.content)))
      const lines = countLines(args.content)
      const size = Buffer.byteLength(args.content)
      if (before === undefined) {
        return {
          content: [{ type: 'text', text: `Created ${path} (${plural(lines, 'line')}, ${plural(size, 'byte')})` }],
          meta: { path, created: true, lines, bytes: size },
          value: { path, operation: 'create', before: null, after: args.content },
        }
      }
      const diff = unifiedDiff(displayPath(context.cwd, path), before, args.content)
      const diffMeta: Record<string, JsonValue> = diff === undefined ? {} : diff.length <= maxMetaDiff ? { diff } : { diffOmitted: true }
      return {
        content: [{ type: 'text', text: `Overwrote ${path} (${plural(lines, 'line')}, ${plural(size, 'byte')})` }],
        meta: { path, created: false, lines, bytes: size, ...diffMeta },
        value: { path, operation: 'update', before: before.toString('utf8'), after: args.content },
      }
    }),
  }
}

/** Registers `write` on `ctx.tools`, sharing `ctx.readLedger` with read and edit. */
export class WriteToolPlugin {
  static readonly inject = ['tools', 'readLedger']
  constructor(ctx: Context, config: WriteToolConfig = {}) {
    const tool = createWriteTool(ctx.readLedger, config, sandboxingOf(ctx))
    ctx.effect(() => ctx.tools.register(tool))
  }
}
