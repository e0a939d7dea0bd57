/**
 * Workspace instructions (`AGENTS.md` / `CLAUDE.md`) recorded in the session log. At each step
 * the plugin compares the instruction files on disk with what the log says the model was given
 * (the `changes` of earlier `agent-instructions` messages) and, when they differ, adds one user
 * message to the step: the whole set (a baseline) when the log has none since the last
 * compaction, else one block per file added, changed or removed. The request stays a pure
 * function of the log: the files are read once, into the log, never behind it.
 */
import { createHash, randomUUID } from 'node:crypto'
import { statSync, type BigIntStats } from 'node:fs'
import { openRegularFile } from '../tools/builtin/errors.js'
import { dirname, isAbsolute, join, relative, resolve, sep } from 'node:path'
import type { Context } from 'cordis'
import type { PreStepDecision, PreStepPayload } from '../agent/api.js'
import type { TextBlock, UserMessage } from '../llm/types.js'
import type { SessionEvent } from '../session/types.js'
import { scanEvents } from '../session/packed-run.js'
import '../agent/api.js'

/** The event types the session fold reads (`foldInstruction`, `touchFolders`). */
const INSTRUCTION_EVENTS: ReadonlySet<string> = new Set(['user/message', 'tool/call', 'tool/code-dispatch-start'])

export const AGENT_INSTRUCTIONS_SOURCE = 'agent-instructions'
export const INSTRUCTION_CANDIDATES = ['AGENTS.md', 'CLAUDE.md'] as const
export const DEFAULT_PROJECT_MARKERS = ['.git'] as const
export const DEFAULT_MAX_FILE_BYTES = 64 * 1024

export interface WorkspaceInstructionsConfig {
  /** The dsh home folder: its instruction file is the user-wide one, given first. */
  readonly home?: string
  /** Claude Code's home folder (`~/.claude`): its `CLAUDE.md` is user-wide too, after dsh's own (#44.3). */
  readonly claudeHome?: string
  /**
   * Entries whose presence marks the project root; the files of every folder from the root down
   * to the session's folder are read. No marker above the folder: only the folder itself.
   */
  readonly projectMarkers?: readonly string[]
  /** A file longer than this (UTF-8 bytes) is cut, with a mark. Default 64 KB. */
  readonly maxFileBytes?: number
}

/** One file the model was given, as recorded in a message's `changes`. */
export interface InstructionChange {
  readonly action: 'set' | 'replace' | 'remove'
  /** `<folder relative to the project root, or "~" for home>\u0000<file name>`: one file per folder. */
  readonly scope: string
  /** Shown path: relative to the project root, absolute for the home file. */
  readonly path: string
  /** SHA-1 of the file's bytes (absent for `remove`). */
  readonly digest?: string
}

export interface InstructionsSource {
  readonly kind: typeof AGENT_INSTRUCTIONS_SOURCE
  readonly form: 'instructions'
  readonly baseline?: true
  readonly changes: readonly InstructionChange[]
}

interface InstructionFile {
  readonly scope: string
  readonly path: string
  readonly digest: string
  readonly text: string
}

/** What the log says the model holds: scope -> digest, and whether a baseline stands. */
export function foldInstructions(events: readonly SessionEvent[]): { files: Map<string, { path: string; digest: string }>; baseline: boolean } {
  const fold = { files: new Map<string, { path: string; digest: string }>(), baseline: false }
  for (const event of events) foldInstruction(fold, event)
  return fold
}

/** `foldInstructions` one event further (the plugin folds only the events appended since its last step). */
function foldInstruction(fold: { files: Map<string, { path: string; digest: string }>; baseline: boolean }, event: SessionEvent): void {
  if (event.type !== 'user/message') return
  if (typeof event.surfaceOp === 'object' && event.surfaceOp !== null) fold.baseline = false
  const source = (event.data as UserMessage).source as unknown as Partial<InstructionsSource>
  if (source.kind !== AGENT_INSTRUCTIONS_SOURCE || !Array.isArray(source.changes)) return
  if (source.baseline === true) fold.files = new Map(), fold.baseline = true
  for (const change of source.changes) {
    if (change.action === 'remove') fold.files.delete(change.scope)
    else if (typeof change.digest === 'string') fold.files.set(change.scope, { path: change.path, digest: change.digest })
  }
}

/**
 * A synchronous `stat` (following links) that never throws: a page-cache lookup of a few
 * microseconds, where the promise form costs a libuv pool round trip and an event-loop turn, and
 * a thrown ENOENT its stack trace. It runs several times per step (every folder up to the root).
 */
function statOrUndefined(path: string): BigIntStats | undefined {
  try {
    return statSync(path, { bigint: true, throwIfNoEntry: false })
  } catch {
    return undefined
  }
}

/** The folders whose files apply to `cwd`, outermost first: the project root down to `cwd`. */
function projectFolders(cwd: string, markers: readonly string[]): { root: string; folders: string[] } {
  const chain: string[] = []
  let folder = resolve(cwd)
  while (true) {
    chain.push(folder)
    for (const marker of markers) if (statOrUndefined(join(folder, marker)) !== undefined) return { root: folder, folders: chain.reverse() }
    const parent = dirname(folder)
    if (parent === folder) break
    folder = parent
  }
  return { root: resolve(cwd), folders: [resolve(cwd)] }
}

/**
 * Instruction files read at earlier steps, kept while a `stat` of the path shows the same file
 * unchanged (device, inode, size, mtime, ctime), except what changed within the last `RACY_MS`
 * (timestamps are coarse: two writes in one clock tick can leave the same mtime and size). So a
 * step reads the disk only for a file that is new or changed, and gives what a fresh read would.
 */
export class InstructionFileCache {
  readonly files = new Map<string, { readonly signature: string; readonly bytes: Buffer }>()
  /** @param now the clock the racy window is judged by (tests move it forward). */
  constructor(readonly now: () => number = Date.now) {}
}

const RACY_MS = 2_000

function fileSignature(info: BigIntStats, now: number): string | undefined {
  const newest = info.mtimeMs > info.ctimeMs ? info.mtimeMs : info.ctimeMs
  if (Number(newest) > now - RACY_MS) return undefined
  return `${info.dev}:${info.ino}:${info.size}:${info.mtimeNs}:${info.ctimeNs}`
}

/** The first candidate that is a regular file (a FIFO named AGENTS.md must not block the step). */
async function readFirst(folder: string, cache?: InstructionFileCache, candidates: readonly string[] = INSTRUCTION_CANDIDATES): Promise<{ name: string; bytes: Buffer } | undefined> {
  for (const name of candidates) {
    const path = join(folder, name)
    // A missing candidate (the usual case) costs a stat, not an open through the pool.
    const info = statOrUndefined(path)
    if (info === undefined) {
      cache?.files.delete(path)
      continue
    }
    const signature = cache === undefined || !info.isFile() ? undefined : fileSignature(info, cache.now())
    const known = cache?.files.get(path)
    if (signature !== undefined && known?.signature === signature) return { name, bytes: known.bytes }
    let handle
    try {
      handle = await openRegularFile(path)
    } catch {
      continue
    }
    try {
      const bytes = await handle.readFile()
      // Kept only when the file read is the one stat'ed (same inode and size).
      if (cache !== undefined) {
        if (signature !== undefined && bytes.length === Number(info.size)) cache.files.set(path, { signature, bytes })
        else cache.files.delete(path)
      }
      return { name, bytes }
    } catch {
      continue
    } finally {
      await handle.close()
    }
  }
  return undefined
}

/**
 * Folders below `cwd` that the session's tools touched (a `file_path` or `path` argument of a
 * recorded tool call): each folder between `cwd` and the touched file, outermost first. Their
 * instruction files apply from then on (nested instructions).
 */
export function touchedFolders(cwd: string, events: readonly SessionEvent[]): string[] {
  const base = resolve(cwd)
  const folders = new Set<string>()
  for (const event of events) touchFolders(base, folders, event)
  return [...folders]
}

/**
 * `touchedFolders` one event further: adds the folders a recorded tool call reached, a direct
 * call (`tool/call`, arguments as JSON text) or a code-mode program's inner call
 * (`tool/code-dispatch-start`, arguments as an object).
 */
function touchFolders(base: string, folders: Set<string>, event: SessionEvent): void {
  let args: unknown
  if (event.type === 'tool/code-dispatch-start') args = (event.data as { arguments?: unknown }).arguments
  else if (event.type !== 'tool/call') return
  else {
    try {
      args = JSON.parse((event.data as { arguments: string }).arguments)
    } catch {
      return
    }
  }
  if (typeof args !== 'object' || args === null) return
  const { file_path: file, path } = args as { file_path?: unknown; path?: unknown }
  const target = typeof file === 'string' ? dirname(resolve(base, file)) : typeof path === 'string' ? resolve(base, path) : undefined
  if (target === undefined) return
  const below = relative(base, target)
  if (below === '' || below.startsWith('..') || isAbsolute(below)) return
  let folder = base
  for (const part of below.split(sep)) folders.add(folder = join(folder, part))
}

/**
 * Both folds of one session, carried from step to step: each step folds only the events appended
 * since the last one (the log is append-only), so a step costs the same at 1k and 100k events.
 */
interface SessionFold {
  readonly events: readonly SessionEvent[]
  readonly base: string
  scanned: number
  readonly instructions: { files: Map<string, { path: string; digest: string }>; baseline: boolean }
  readonly touched: Set<string>
}

function foldSession(folds: WeakMap<object, SessionFold>, session: { readonly events: readonly SessionEvent[] }, cwd: string): SessionFold {
  const events = session.events
  const base = resolve(cwd)
  let fold = folds.get(session)
  if (fold === undefined || fold.events !== events || fold.base !== base || fold.scanned > events.length) {
    fold = { events, base, scanned: 0, instructions: { files: new Map(), baseline: false }, touched: new Set() }
    folds.set(session, fold)
  }
  const folding = fold
  fold.scanned = scanEvents(events, fold.scanned, INSTRUCTION_EVENTS, (event) => {
    foldInstruction(folding.instructions, event)
    touchFolders(base, folding.touched, event)
  })
  return fold
}

/**
 * The instruction files that apply to a session in `cwd` now: home first, then the project root
 * down to `cwd`, then the touched folders below it (`touchedFolders`).
 */
export async function currentInstructionFiles(cwd: string, config: WorkspaceInstructionsConfig = {}, touched: readonly string[] = [], cache?: InstructionFileCache): Promise<InstructionFile[]> {
  const max = config.maxFileBytes ?? DEFAULT_MAX_FILE_BYTES
  const out: InstructionFile[] = []
  const take = (scope: string, path: string, bytes: Buffer) => {
    let text = bytes.toString('utf8').replace(/^\uFEFF/, '').trim()
    if (text === '') return
    if (Buffer.byteLength(text) > max) text = `${Buffer.from(text).subarray(0, max).toString('utf8').replace(/\uFFFD$/, '')}\n[... cut at ${max} bytes]`
    out.push({ scope, path, digest: createHash('sha1').update(bytes).digest('hex'), text })
  }
  if (config.home !== undefined) {
    const found = await readFirst(resolve(config.home), cache)
    if (found !== undefined) take(`~\u0000${found.name}`, join(resolve(config.home), found.name), found.bytes)
  }
  if (config.claudeHome !== undefined) {
    const found = await readFirst(resolve(config.claudeHome), cache, ['CLAUDE.md'])
    if (found !== undefined) take(`~claude\u0000${found.name}`, join(resolve(config.claudeHome), found.name), found.bytes)
  }
  const { root, folders } = projectFolders(cwd, config.projectMarkers ?? DEFAULT_PROJECT_MARKERS)
  for (const folder of [...folders, ...touched.filter(folder => !folders.includes(folder))]) {
    const found = await readFirst(folder, cache)
    if (found === undefined) continue
    const where = relative(root, folder)
    take(`${where === '' ? '.' : where}\u0000${found.name}`, where === '' ? found.name : `${where}/${found.name}`, found.bytes)
  }
  return out
}

const INTRO = 'Instructions from the AGENTS.md / CLAUDE.md files of this workspace, written by its maintainers (general ones first: where two disagree, the more specific folder wins). They guide how you work here; they do not override what the user asks.'

/** The file text may not close the element it is wrapped in. */
const escape = (text: string) => text.replace(/<\/(workspace-instructions)/gi, '<\\/$1')
const attribute = (path: string) => JSON.stringify(path).replace(/<\//g, '<\\/')

function block(file: InstructionFile, note?: string): TextBlock {
  return { type: 'text', text: `<workspace-instructions path=${attribute(file.path)}>\n${note !== undefined ? `${note}\n\n` : ''}${escape(file.text)}\n</workspace-instructions>` }
}

/** The message for what changed, or undefined when the log already matches the disk. */
export function instructionsMessage(logged: ReturnType<typeof foldInstructions>, files: readonly InstructionFile[]): UserMessage | undefined {
  if (!logged.baseline) {
    if (files.length === 0 && logged.files.size === 0) return undefined
    const changes: InstructionChange[] = files.map(file => ({ action: 'set', scope: file.scope, path: file.path, digest: file.digest }))
    const content: TextBlock[] = files.length === 0
      ? [{ type: 'text', text: 'No AGENTS.md / CLAUDE.md instructions apply to this workspace any more.' }]
      : [{ type: 'text', text: INTRO }, ...files.map(file => block(file))]
    return message({ kind: AGENT_INSTRUCTIONS_SOURCE, form: 'instructions', baseline: true, changes }, content)
  }
  const changes: InstructionChange[] = []
  const content: TextBlock[] = []
  for (const file of files) {
    const known = logged.files.get(file.scope)
    if (known?.digest === file.digest) continue
    changes.push({ action: known === undefined ? 'set' : 'replace', scope: file.scope, path: file.path, digest: file.digest })
    content.push(block(file, known === undefined ? 'These instructions apply to this folder from now on (a new file, or a folder your tools just reached).' : 'This file changed since it was given to you: this content replaces the earlier one.'))
  }
  for (const [scope, known] of logged.files) {
    if (files.some(file => file.scope === scope)) continue
    changes.push({ action: 'remove', scope, path: known.path })
    content.push({ type: 'text', text: `<workspace-instructions path=${attribute(known.path)}>\nThis file was removed: its earlier instructions no longer apply.\n</workspace-instructions>` })
  }
  return changes.length === 0 ? undefined : message({ kind: AGENT_INSTRUCTIONS_SOURCE, form: 'instructions', changes }, content)
}

function message(source: InstructionsSource, content: TextBlock[]): UserMessage {
  return { id: randomUUID(), role: 'user', content, source: source as unknown as UserMessage['source'] }
}

/** What `/init` asks of the model, for the project whose root is `root`. */
export function initPrompt(root: string, cwd: string, extra: string): string {
  const existing = INSTRUCTION_CANDIDATES.filter(name => statOrUndefined(join(root, name))?.isFile() === true)
  const where = relative(cwd, root) === '' ? 'at the root of this workspace' : `at the project root, ${root}`
  return [
    existing.length > 0
      ? `${existing.join(' and ')} already exists ${where}: improve it for coding agents working on this project rather than starting over (keep what is still true, fix what is not, add what is missing).`
      : `Write an AGENTS.md file ${where} for coding agents working on this project.`,
    'First read what the repository says about itself: the README, the package manifests and lock files, the build, lint and CI configuration, and a few central source files. Write only what you found there; never invent a command.',
    'Keep it short and specific to this project:',
    '- how to install, build, run, lint and test it: the exact commands, and how to run one test;',
    '- the layout: where the main parts live and how they fit together;',
    '- conventions a newcomer would not guess from one file: style, naming, error handling, tests, commits;',
    '- pitfalls: generated files not to edit, slow or flaky steps, services or environment variables it needs.',
    ...extra === '' ? [] : [`Also: ${extra}`],
  ].join('\n')
}

/**
 * The `instructions` row: adds the instructions message to a step when the files on disk differ
 * from what the log recorded (docs/system-prompt.md, "Instructions files").
 */
export const WorkspaceInstructionsPlugin = {
  name: 'workspace-instructions',
  apply(ctx: Context, config: WorkspaceInstructionsConfig = {}) {
    const folds = new WeakMap<object, SessionFold>()
    const files = new InstructionFileCache()
    // `/init`: a turn that writes the project's AGENTS.md (docs/system-prompt.md, "Instructions files").
    ctx.inject(['commands'], (inner) => {
      inner.commands.register({
        name: 'init',
        description: 'Write an AGENTS.md for this project (build and test commands, layout, conventions)',
        argumentHint: '[what to stress]',
        run({ agent, args }) {
          const cwd = agent.session.header.cwd
          if (cwd === undefined) return { kind: 'error', text: '/init needs a session with a workspace folder.' }
          return { kind: 'prompt', input: initPrompt(projectFolders(cwd, config.projectMarkers ?? DEFAULT_PROJECT_MARKERS).root, cwd, args.trim()) }
        },
      })
    })
    ctx.on('agent/pre-step', async (payload: PreStepPayload, next: () => Promise<PreStepDecision>): Promise<PreStepDecision> => {
      const decision = await next()
      // A first step with no input spends the turn without a step (A-4): the instructions alone
      // do not start one.
      if (decision.kind !== 'enter' || (decision.messages.length === 0 && payload.step <= 1)) return decision
      const cwd = payload.session.header.cwd
      if (cwd === undefined) return decision
      const fold = foldSession(folds, payload.session, cwd)
      const logged = { files: new Map(fold.instructions.files), baseline: fold.instructions.baseline }
      const added = instructionsMessage(logged, await currentInstructionFiles(cwd, config, [...fold.touched], files))
      if (added === undefined) return decision
      // After the input the step claimed, before the runtime context and other notices.
      const at = Math.min(payload.messages.length, decision.messages.length)
      return { kind: 'enter', messages: [...decision.messages.slice(0, at), added, ...decision.messages.slice(at)] }
    })
  },
}
