/**
 * `@` mentions: mentioned workspace files read as reference blocks the model can read, for the
 * web UI (explicit `mentions`) and the terminal app (`@path` words that name files). Every path
 * is checked to stay inside the workspace, symlinks included.
 */
import { closeSync, openSync, readSync, realpathSync, statSync } from 'node:fs'
import { isAbsolute, relative, resolve, sep } from 'node:path'

/** A mention that cannot be attached; `code` is the web API's error code for it. */
export class MentionError extends Error {
  constructor(readonly code: 'BAD_PARAMS' | 'BAD_MENTION', message: string) {
    super(message)
    this.name = 'MentionError'
  }
}

/** A mentioned file is attached up to this many bytes (cut at a line end, marked truncated). */
export const MAX_MENTION_BYTES = 64 * 1024
/** All mentions of one message together. */
export const MAX_MENTION_TOTAL_BYTES = 256 * 1024
export const MAX_MENTIONS = 10

/**
 * The real path of `given` (relative to `root`) when it is a regular file inside the workspace;
 * a MentionError otherwise (absolute paths, `..`, NUL bytes, symlinks that lead out, folders).
 */
export function insideWorkspace(root: string, given: string): { path: string; real: string } {
  const bad = (why: string) => new MentionError('BAD_MENTION', `@${given}: ${why}`)
  if (given === '' || given.length > 1024 || given.includes('\0')) throw bad('not a file path')
  if (isAbsolute(given) || /^[a-zA-Z]:[\\/]/.test(given)) throw bad('mentions are relative to the workspace folder')
  const path = resolve(root, given)
  const rootReal = realpathSync(root)
  const within = (candidate: string, base: string) => candidate !== base && !relative(base, candidate).startsWith('..') && !isAbsolute(relative(base, candidate))
  if (!within(path, resolve(root))) throw bad('outside the workspace folder')
  let real: string
  try { real = realpathSync(path) } catch { throw bad('no such file in the workspace') }
  if (!within(real, rootReal)) throw bad('leads outside the workspace folder')
  if (!statSync(real).isFile()) throw bad('not a regular file')
  return { path: relative(resolve(root), path).split(sep).join('/'), real }
}

/** The reference block of one mentioned file: `<file path=… [truncated]>` … `</file>`. */
export interface MentionBlock { readonly type: 'text'; readonly text: string }

function readPrefix(path: string, bytes: number): { data: Buffer; size: number } {
  const fd = openSync(path, 'r')
  try {
    const size = statSync(path).size
    const data = Buffer.alloc(Math.min(size, bytes))
    let read = 0
    while (read < data.length) {
      const n = readSync(fd, data, read, data.length - read, read)
      if (n === 0) break
      read += n
    }
    return { data: data.subarray(0, read), size }
  } finally {
    closeSync(fd)
  }
}

/** Escapes a path for the `path="…"` attribute of a reference block. */
function attribute(value: string): string {
  return value.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;')
}

/**
 * Reads mentioned files as reference blocks (docs/web.md): each file's text up to
 * MAX_MENTION_BYTES (cut at a line end), all of them up to MAX_MENTION_TOTAL_BYTES. A binary
 * file is referenced by name only. Duplicates are read once.
 */
export function mentionBlocks(root: string, mentions: unknown): MentionBlock[] {
  if (mentions === undefined || mentions === null) return []
  if (!Array.isArray(mentions) || mentions.some(entry => typeof entry !== 'string')) throw new MentionError('BAD_PARAMS', '"mentions" must be a list of workspace-relative file paths')
  const unique = [...new Set(mentions as string[])]
  if (unique.length > MAX_MENTIONS) throw new MentionError('BAD_MENTION', `at most ${MAX_MENTIONS} files can be mentioned in one message (got ${unique.length})`)
  return readMentions(unique.map(given => insideWorkspace(root, given)))
}

/** The reference blocks of files already checked by `insideWorkspace`, within the byte budget. */
function readMentions(checked: readonly { path: string; real: string }[]): MentionBlock[] {
  let budget = MAX_MENTION_TOTAL_BYTES
  return checked.map(({ path, real }) => {
    const { data, size } = readPrefix(real, Math.min(MAX_MENTION_BYTES, Math.max(0, budget)))
    if (data.subarray(0, 8192).includes(0)) return { type: 'text', text: `<file path="${attribute(path)}" binary="true" bytes="${size}"></file>` }
    let text = data.toString('utf8')
    const truncated = size > data.length
    if (truncated) {
      const end = text.lastIndexOf('\n')
      if (end > 0) text = text.slice(0, end + 1)
      // A multi-byte character cut at the end reads as U+FFFD: drop it.
      text = text.replace(/\uFFFD$/, '')
    }
    budget -= Buffer.byteLength(text)
    if (!text.endsWith('\n') && text !== '') text += '\n'
    const note = truncated ? ` truncated="true" bytes="${size}"` : ''
    return { type: 'text', text: `<file path="${attribute(path)}"${note}>\n${text}</file>` }
  })
}

/** Whether a user content block is a mention's reference block (the conversation shows it as a chip). */
export function isMentionBlock(text: string): boolean {
  return /^<file path="[^"]*"[^>]*>/.test(text)
}

/**
 * What the user typed in a message, as the conversations show it: its text without the blocks of
 * files it mentioned (the typed `@path` names them), and how many images it carried.
 */
export function typedText(message: { readonly content: readonly { readonly type: string; readonly text?: string }[] }, countImages = true): string {
  const images = countImages ? message.content.filter(block => block.type === 'image').length : 0
  const typed = message.content.flatMap(block => block.type === 'text' && block.text !== undefined && !isMentionBlock(block.text) ? [block.text] : [])
  return typed.join('') + (images > 0 ? ` [${images} image${images > 1 ? 's' : ''}]` : '')
}

/**
 * The `@path` words of a typed message that name regular files inside `root` (the terminal app's
 * mentions: there is no separate list of taken entries), each checked once. A word that names
 * nothing, or something outside, stays plain text; trailing punctuation (`@a.ts,`) is not part of
 * the path.
 */
function typedMentions(root: string, typed: string): { given: string; path: string; real: string }[] {
  const found: { given: string; path: string; real: string }[] = []
  for (const match of typed.matchAll(/(?:^|\s)@([^\s@]+)/g)) {
    for (const candidate of new Set([match[1]!, match[1]!.replace(/[.,;:!?)\]}'"]+$/, '')])) {
      if (candidate === '' || found.some(mention => mention.given === candidate)) continue
      try {
        found.push({ given: candidate, ...insideWorkspace(root, candidate) })
        break
      } catch {
        // Not a file of the workspace: the word stays as typed.
      }
    }
  }
  return found.slice(0, MAX_MENTIONS)
}

/** The `@path` words of `typed` that name files of the workspace, as typed. */
export function mentionedPaths(root: string, typed: string): string[] {
  return typedMentions(root, typed).map(mention => mention.given)
}

/** The reference blocks of the files `typed` mentions (`@path` words); none when it mentions none. */
export function typedMentionBlocks(root: string, typed: string): MentionBlock[] {
  return readMentions(typedMentions(root, typed))
}
