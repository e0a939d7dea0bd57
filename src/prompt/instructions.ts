/**
 * User and project instructions (`AGENTS.md` / `CLAUDE.md`) as one system prompt section, within
 * a byte budget (product.md "Context management").
 */
import { readFile, realpath, stat } from 'node:fs/promises'
import { dirname, join, resolve } from 'node:path'
import type { Context } from 'cordis'

export const INSTRUCTION_FILE_NAMES = ['AGENTS.md', 'CLAUDE.md'] as const
export const DEFAULT_INSTRUCTIONS_BUDGET = 64 * 1024
const MIN_BUDGET = 1024

export interface InstructionsConfig {
  /** Workspace folder; it and its parents up to the git root (or the filesystem root) are searched. */
  cwd: string
  /** The dsh home folder (`$DSH_HOME`); its files are the user-wide instructions. */
  home?: string
  /** Bytes (UTF-8) the whole section may take; default 64 KB. */
  budget?: number
}

export interface InstructionsResult {
  /** The section text, or '' when no file was found. */
  readonly text: string
  /** Files included (possibly cut short), general first. */
  readonly files: readonly string[]
  readonly truncated: readonly string[]
  readonly omitted: readonly string[]
  /** Files that exist but could not be read, with the reason. */
  readonly unreadable: readonly { readonly path: string; readonly reason: string }[]
}

const INTRO = 'Instructions from AGENTS.md / CLAUDE.md files: the user-wide file first, then the project folders from the outermost to the working folder. Later, more specific files take precedence.'
const CUT_MARK = '\n[... cut to fit the instructions budget]'

async function exists(path: string): Promise<boolean> {
  return stat(path).then(() => true, () => false)
}

/** Folders to search, most specific first: cwd, its parents up to a git root, then home. */
async function searchFolders(cwd: string, home: string | undefined): Promise<string[]> {
  const folders: string[] = []
  let folder = resolve(cwd)
  while (true) {
    folders.push(folder)
    if (await exists(join(folder, '.git'))) break
    const parent = dirname(folder)
    if (parent === folder) break
    folder = parent
  }
  if (home !== undefined) folders.push(resolve(home))
  return folders
}

const byteLength = (text: string) => Buffer.byteLength(text, 'utf8')

/** Cut `text` to at most `bytes` UTF-8 bytes without splitting a character. */
function cutToBytes(text: string, bytes: number): string {
  if (bytes <= 0) return ''
  const buffer = Buffer.from(text, 'utf8')
  if (buffer.length <= bytes) return text
  let end = bytes
  // Back off continuation bytes (10xxxxxx) so the cut lands on a character boundary.
  while (end > 0 && (buffer[end] & 0xc0) === 0x80) end--
  return buffer.subarray(0, end).toString('utf8')
}

/**
 * Read the instruction files and build the section text. Budget goes to the most specific file
 * first (the working folder's), so a large user-wide file cannot crowd out the project's rules.
 */
export async function loadInstructions(config: InstructionsConfig): Promise<InstructionsResult> {
  const budget = config.budget ?? DEFAULT_INSTRUCTIONS_BUDGET
  // Below 1 KB the intro and the over-budget note alone would not fit.
  if (!Number.isInteger(budget) || budget < MIN_BUDGET) throw new TypeError(`instructions: budget must be an integer of at least ${MIN_BUDGET} bytes, got ${budget}`)
  const seenPaths = new Set<string>()
  const seenContents = new Set<string>()
  // One group per folder, most specific folder first; files keep name order inside a folder.
  const groups: { path: string; content: string }[][] = []
  const unreadable: { path: string; reason: string }[] = []
  for (const folder of await searchFolders(config.cwd, config.home)) {
    const found: { path: string; content: string }[] = []
    groups.push(found)
    for (const name of INSTRUCTION_FILE_NAMES) {
      const path = join(folder, name)
      let real: string
      try {
        real = await realpath(path)
      } catch {
        continue
      }
      // A CLAUDE.md symlinked to AGENTS.md, or home inside the workspace, is read once.
      if (seenPaths.has(real)) continue
      seenPaths.add(real)
      let content: string
      try {
        content = (await readFile(real, 'utf8')).replace(/^\uFEFF/, '').trim()
      } catch (error) {
        unreadable.push({ path, reason: (error as NodeJS.ErrnoException).code ?? String(error) })
        continue
      }
      if (content === '' || seenContents.has(content)) continue
      seenContents.add(content)
      found.push({ path, content })
    }
  }
  const found = groups.flat()
  // The prompt lists general files first, so the most specific rules come last.
  const generalFirst = groups.slice().reverse().flat()
  if (found.length === 0) return { text: '', files: [], truncated: [], omitted: [], unreadable }

  const block = (path: string, content: string) => `## ${path}\n\n${content}`
  const whole = [INTRO, ...generalFirst.map((file) => block(file.path, file.content))].join('\n\n')
  if (byteLength(whole) <= budget) {
    return { text: whole, files: generalFirst.map((f) => f.path), truncated: [], omitted: [], unreadable }
  }

  const noteFor = (cut: number, left: number) =>
    `[dsh: the instructions exceed the ${budget}-byte budget: ${cut} file(s) cut short, ${left} file(s) left out.]`
  // Reserve room for the intro, the separators and the closing note (counts are at most 3 digits here).
  let remaining = budget - byteLength(INTRO) - byteLength(noteFor(999, 999)) - 4
  const kept = new Map<string, string>()
  const truncated: string[] = []
  const omitted: string[] = []
  for (const file of found) {
    const full = block(file.path, file.content)
    const cost = byteLength(full) + 2
    if (cost <= remaining) {
      kept.set(file.path, full)
      remaining -= cost
      continue
    }
    const room = remaining - byteLength(block(file.path, '')) - byteLength(CUT_MARK) - 2
    if (room > 0) {
      const text = block(file.path, cutToBytes(file.content, room)) + CUT_MARK
      kept.set(file.path, text)
      truncated.push(file.path)
      remaining -= byteLength(text) + 2
    } else {
      omitted.push(file.path)
    }
  }
  const files = generalFirst.map((file) => file.path).filter((path) => kept.has(path))
  const text = [INTRO, ...files.map((path) => kept.get(path)!), noteFor(truncated.length, omitted.length)].join('\n\n')
  return { text, files, truncated, omitted, unreadable }
}

/** What the plugin needs of an agent (structural: the prompt seam sits below the agents). */
interface AgentLike {
  readonly scope: object
  readonly session: { readonly header: { readonly cwd?: string } }
}

/**
 * Adds the `instructions` section (order 100, after the persona). Files are read once per plugin
 * load (and once per agent whose session lives in another folder) so the prompt stays stable
 * (and cacheable) across steps; reload the plugin to re-read.
 *
 * An agent whose session folder is not `config.cwd` (a session continued from another folder,
 * or opened with its own cwd) gets its own `instructions` section, read from the session's
 * folder: the instructions follow the folder the tools run in, never the shell's.
 */
export const InstructionsPlugin = {
  name: 'instructions',
  inject: ['systemPrompt'],
  apply(ctx: Context, config: InstructionsConfig) {
    if (typeof config?.cwd !== 'string' || config.cwd === '') throw new TypeError('instructions: config.cwd must be a non-empty string')
    const logger = ctx.logger('instructions')
    const section = (cwd: string) => {
      let loaded: Promise<InstructionsResult> | undefined
      return {
        name: 'instructions',
        order: 100,
        fn: async () => {
          loaded ??= loadInstructions({ ...config, cwd }).then((result) => {
            for (const { path, reason } of result.unreadable) logger.warn('cannot read %s: %s', path, reason)
            if (result.truncated.length || result.omitted.length) {
              logger.warn('instructions over budget: cut %o, left out %o', result.truncated, result.omitted)
            }
            return result
          })
          return (await loaded).text
        },
      }
    }
    ctx.systemPrompt.section(section(config.cwd))
    const own = new Map<object, () => void>()
    const follow = (agent: AgentLike) => {
      const cwd = agent.session.header.cwd
      if (cwd === undefined || resolve(cwd) === resolve(config.cwd) || own.has(agent.scope)) return
      own.set(agent.scope, ctx.systemPrompt.section(section(cwd), agent.scope as never))
    }
    ctx.on('agent/created' as never, follow as never)
    ctx.on('agent/disposed' as never, ((agent: AgentLike) => { own.get(agent.scope)?.(); own.delete(agent.scope) }) as never)
    for (const agent of (ctx.get('agents' as never) as { list(): readonly AgentLike[] } | undefined)?.list() ?? []) follow(agent)
  },
}
