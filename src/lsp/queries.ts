/**
 * The `lsp` tool's work: check the call (the file inside the workspace, not hidden, a server for
 * its language, the cursor inside the text), bring the file's current text to the server, ask,
 * and say the answer in a few lines.
 */
import { readFile, realpath, stat } from 'node:fs/promises'
import { pathToFileURL, fileURLToPath } from 'node:url'
import { extname, relative, isAbsolute, sep } from 'node:path'
import type { ToolContext, ToolOutput } from '../tools/api.js'
import { displayPath, looksBinary, resolvePath } from '../tools/builtin/paths.js'
import { readGuard, refuseHidden } from '../tools/builtin/hidden.js'
import type { Sandboxing } from '../tools/builtin/sandboxing.js'
import { chooseServer, LSP_DEFAULTS, mergedServers, type ChosenServer, type LspServerConfig, type LspSettings } from './config.js'
import { asLocations, formatDiagnostics, formatDocumentSymbols, formatLocations, formatWorkspaceSymbols, hoverText, type Location } from './format.js'
import { LspError, LspErrorCode, ServerPool, type Placement, type PoolOptions } from './pool.js'

export const LSP_OPERATIONS = ['goToDefinition', 'findReferences', 'goToImplementation', 'hover', 'documentSymbol', 'workspaceSymbol', 'diagnostics'] as const
export type LspOperation = typeof LSP_OPERATIONS[number]

export interface LspArgs {
  readonly operation: LspOperation
  readonly file_path: string
  readonly line: number
  readonly character: number
}

const POSITION_REQUESTS: Partial<Record<LspOperation, string>> = {
  goToDefinition: 'textDocument/definition',
  goToImplementation: 'textDocument/implementation',
  findReferences: 'textDocument/references',
  hover: 'textDocument/hover',
}

const NOTHING: Partial<Record<LspOperation, string>> = {
  goToDefinition: 'No definition found',
  goToImplementation: 'No implementation found',
  findReferences: 'No references found',
  hover: 'No hover information',
  workspaceSymbol: 'No workspace symbols found',
}

/** Longest excerpt of a referencing line. */
const EXCERPT_CHARS = 160

interface Target {
  readonly root: string
  readonly path: string
  readonly shown: string
  readonly text: string
  readonly chosen: ChosenServer
}

export class LspQueries {
  readonly pool: ServerPool
  private readonly servers: Map<string, LspServerConfig>
  private readonly maxLocations: number
  private readonly diagnosticsWaitMs: number
  private readonly diagnosticsSettleMs: number

  constructor(settings: LspSettings & PoolOptions = {}, private readonly sandboxing?: Sandboxing) {
    this.servers = mergedServers(settings.servers)
    this.maxLocations = settings.maxLocations ?? LSP_DEFAULTS.maxLocations
    this.diagnosticsWaitMs = settings.diagnosticsWaitMs ?? LSP_DEFAULTS.diagnosticsWaitMs
    this.diagnosticsSettleMs = settings.diagnosticsSettleMs ?? LSP_DEFAULTS.diagnosticsSettleMs
    this.pool = new ServerPool(settings)
  }

  /** Whether a server is configured for `path`'s extension (no process is started). */
  handles(path: string): boolean {
    return chooseServer(this.servers, path) !== undefined
  }

  async run(args: LspArgs, context: ToolContext): Promise<ToolOutput> {
    const target = await this.target(args.file_path, context)
    const { line, character } = args
    const placement = await this.placement(target.root, context)
    const server = await this.pool.server(target.chosen, placement)
    server.sync(target.path, target.chosen.languageId, target.text)
    const uri = pathToFileURL(target.path).href
    const where = `${target.shown}:${line}:${character}`
    const ask = async <T>(method: string, params: unknown): Promise<T> => {
      try {
        const answer = await abortable(server.request<T>(method, params), context.signal)
        this.pool.succeeded(target.chosen, placement)
        return answer
      } catch (error) {
        throw new LspError(`lsp: ${error instanceof Error ? error.message : String(error)}`, LspErrorCode.serverFailed)
      }
    }
    const text = (body: string, meta: Record<string, string | number>) => ({ content: [{ type: 'text' as const, text: body }], meta: { operation: args.operation, path: target.path, ...meta } })
    const method = POSITION_REQUESTS[args.operation]
    if (method !== undefined) {
      checkPosition(target, line, character)
      const position = { line: line - 1, character: character - 1 }
      const params = { textDocument: { uri }, position, ...(args.operation === 'findReferences' ? { context: { includeDeclaration: true } } : {}) }
      const result = await ask<unknown>(method, params)
      if (args.operation === 'hover') {
        const hover = hoverText(result)
        return text(hover === '' ? `${NOTHING.hover} at ${where}.` : hover, {})
      }
      const locations = asLocations(result)
      if (locations.length === 0) return text(`${NOTHING[args.operation]} at ${where}.`, { locations: 0 })
      const excerpt = args.operation === 'findReferences' ? await this.excerpts(locations, context) : undefined
      return text(formatLocations(target.root, locations, this.maxLocations, excerpt), { locations: locations.length })
    }
    if (args.operation === 'documentSymbol') {
      const listed = formatDocumentSymbols(await ask<unknown>('textDocument/documentSymbol', { textDocument: { uri } }), this.maxLocations * 10)
      return text(listed === '' ? `No symbols in ${target.shown}.` : listed, {})
    }
    if (args.operation === 'workspaceSymbol') {
      checkPosition(target, line, character)
      const query = wordAt(target.text, line - 1, character - 1)
      if (query === '') throw new LspError(`lsp: there is no identifier at ${where} to look up across the workspace`, LspErrorCode.positionOutOfRange)
      const listed = formatWorkspaceSymbols(target.root, await ask<unknown>('workspace/symbol', { query }), this.maxLocations)
      return text(listed === '' ? `${NOTHING.workspaceSymbol} for ${query}.` : listed, { query })
    }
    return text(await this.diagnosticsText(target, server), {})
  }

  /** For write/edit: the changed file's diagnostics as a short paragraph, or undefined when it has no server or none. */
  async afterWrite(path: string, context: ToolContext): Promise<string | undefined> {
    if (!this.handles(path)) return undefined
    let target: Target
    try {
      target = await this.target(path, context)
    } catch {
      return undefined
    }
    try {
      const placement = await this.placement(target.root, context)
      const server = await this.pool.server(target.chosen, placement)
      server.sync(target.path, target.chosen.languageId, target.text)
      const found = await server.diagnostics(target.path, this.diagnosticsWaitMs, this.diagnosticsSettleMs)
      this.pool.succeeded(target.chosen, placement)
      if (found === undefined || found.length === 0) return undefined
      return `Diagnostics (lsp):\n${formatDiagnostics(target.shown, found, this.maxLocations)}`
    } catch (error) {
      return `Diagnostics (lsp) unavailable: ${error instanceof Error ? error.message.replace(/^lsp: /, '') : String(error)}`
    }
  }

  dispose(): Promise<void> {
    return this.pool.dispose()
  }

  private async diagnosticsText(target: Target, server: Awaited<ReturnType<ServerPool['server']>>): Promise<string> {
    let found
    try {
      found = await server.diagnostics(target.path, this.diagnosticsWaitMs, this.diagnosticsSettleMs)
    } catch (error) {
      throw new LspError(`lsp: ${error instanceof Error ? error.message : String(error)}`, LspErrorCode.serverFailed)
    }
    if (found === undefined) return `The ${target.chosen.name} language server published no diagnostics for ${target.shown} within ${this.diagnosticsWaitMs} ms.`
    if (found.length === 0) return `No diagnostics in ${target.shown}.`
    return formatDiagnostics(target.shown, found, this.maxLocations)
  }

  /** The call's file: resolved, inside the workspace, not hidden, with a server, read as text. */
  private async target(filePath: string, context: ToolContext): Promise<Target> {
    const cwd = context.session?.header.cwd ?? context.cwd
    const root = await realpath(cwd).catch(() => cwd)
    const path = resolvePath(context.cwd, filePath)
    const real = await realpath(path).catch((error: NodeJS.ErrnoException) => {
      if (error.code === 'ENOENT' || error.code === 'ENOTDIR') throw new LspError(`lsp: file not found: ${path}`, LspErrorCode.notFound)
      throw new LspError(`lsp: cannot open ${path}: ${error.message}`, LspErrorCode.notFound)
    })
    const inside = relative(root, real)
    if (inside === '..' || inside.startsWith(`..${sep}`) || isAbsolute(inside)) {
      throw new LspError(`lsp: ${filePath} is outside the workspace (${root}); the language servers answer for the workspace's files only`, LspErrorCode.outsideWorkspace)
    }
    refuseHidden(await readGuard(this.sandboxing, context), 'lsp', filePath, path, real)
    const chosen = chooseServer(this.servers, real)
    if (chosen === undefined) {
      const ext = extname(real)
      const what = ext === '' ? `${displayPath(root, real)} (a file without an extension)` : `${ext} files`
      throw new LspError(`lsp: no language server is configured for ${what}; add one under lsp.servers in settings.yaml (extensions, command, args; docs/lsp.md)`, LspErrorCode.noServer)
    }
    if ((await stat(real)).isDirectory()) throw new LspError(`lsp: ${path} is a folder, not a source file`, LspErrorCode.notFound)
    const bytes = await readFile(real)
    if (looksBinary(bytes)) throw new LspError(`lsp: ${path} looks like a binary file`, LspErrorCode.notFound)
    return { root, path: real, shown: displayPath(root, real), text: bytes.toString('utf8'), chosen }
  }

  /** Unconfined, or under the sandbox's read-only profile with no network when a mode confines the session. */
  private async placement(root: string, context: ToolContext): Promise<Placement> {
    const sandbox = this.sandboxing?.sandbox()
    if (sandbox === undefined) return { root }
    const knobs = this.sandboxing!.knobs()
    const mode = knobs !== undefined && context.session !== undefined ? knobs.mode(context.session) : sandbox.fallbackMode
    if (mode === 'danger-full-access') return { root }
    const probe = await sandbox.runner()
    if (probe.runner === undefined) {
      throw new LspError(`lsp: sandbox unavailable: no OS sandbox runner works here (${probe.problems.join('; ')}); the language server was not started`, LspErrorCode.unavailable)
    }
    // No network where the runner can take it away (a language server reads files, it fetches nothing).
    const network = probe.runner.confinesNetwork === true ? { mode: 'none' as const } : undefined
    const argv = sandbox.prefix?.(probe.runner, 'read-only', root, network) ?? probe.runner.argv('read-only', root, undefined, network)
    return { root, prefix: { argv, key: `${probe.runner.name}:read-only` } }
  }

  /** The referencing lines' text, read once per file (hidden and unreadable files show none). */
  private async excerpts(locations: readonly Location[], context: ToolContext): Promise<(uri: string, line: number) => string | undefined> {
    const hidden = await readGuard(this.sandboxing, context)
    const files = new Map<string, string[] | undefined>()
    for (const uri of new Set(locations.map(location => location.uri))) {
      let lines: string[] | undefined
      try {
        const path = fileURLToPath(uri)
        if (hidden?.denied(path) === undefined && (await stat(path)).size <= 4 * 1024 * 1024) lines = (await readFile(path, 'utf8')).split(/\r\n|\r|\n/)
      } catch {
        lines = undefined
      }
      files.set(uri, lines)
    }
    return (uri, line) => {
      const text = files.get(uri)?.[line]?.trim()
      return text === undefined ? undefined : text.length > EXCERPT_CHARS ? `${text.slice(0, EXCERPT_CHARS)}…` : text
    }
  }
}

/** `promise`, or a rejection as soon as the call is cancelled (the server's answer is dropped). */
function abortable<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) {
    promise.catch(() => {})
    return Promise.reject(new Error('the call was cancelled'))
  }
  return new Promise<T>((resolve, reject) => {
    const cancelled = () => reject(new Error('the call was cancelled'))
    signal.addEventListener('abort', cancelled, { once: true })
    const done = () => signal.removeEventListener('abort', cancelled)
    promise.then(value => { done(); resolve(value) }, (error: unknown) => { done(); reject(error) })
  })
}

function lineTexts(text: string): string[] {
  return text.split(/\r\n|\r|\n/)
}

/** The cursor must be on a line of the file and at most one past its last character. */
function checkPosition(target: Target, line: number, character: number): void {
  const lines = lineTexts(target.text)
  if (line > lines.length) throw new LspError(`lsp: line ${line} is past the end of ${target.shown} (${lines.length} ${lines.length === 1 ? 'line' : 'lines'})`, LspErrorCode.positionOutOfRange)
  const length = lines[line - 1]!.length
  if (character > length + 1) throw new LspError(`lsp: character ${character} is past the end of line ${line} of ${target.shown} (${length} UTF-16 code units; columns are one-based)`, LspErrorCode.positionOutOfRange)
}

/** The identifier touching zero-based `character` of zero-based `line`. */
function wordAt(text: string, line: number, character: number): string {
  const row = lineTexts(text)[line] ?? ''
  const word = /[\p{L}\p{N}_$]/u
  let start = character
  let end = character
  while (start > 0 && word.test(row[start - 1]!)) start--
  while (end < row.length && word.test(row[end]!)) end++
  return row.slice(start, end)
}
