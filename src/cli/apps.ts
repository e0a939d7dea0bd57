/**
 * Small apps: `dsh sessions` (list stored sessions, repair, export, import).
 */
import { statSync } from 'node:fs'
import { readFile, writeFile } from 'node:fs/promises'
import { resolve } from 'node:path'
import { text as readText } from 'node:stream/consumers'
import { Service, type Context } from 'cordis'
import '../host/index.js'
import { age } from '../host/age.js'
import { terminalSafe } from '../host/terminal-text.js'
import { listedByDefault, type StoredSessionSummary } from '../persistence/api.js'
import { storedId } from '../persistence/lookup.js'
import type { SessionExchange } from '../persistence/exchange.js'
import type { ApprovalService } from '../approval/api.js'

/** The export file's reader and writer, loaded by export and import only: a listing stays small. */
const exchangeFormat = () => import('../persistence/exchange.js')

const SESSIONS_USAGE = 'usage: dsh sessions [--json] [--all] | dsh sessions repair ID | dsh sessions delete ID | dsh sessions restore ID | dsh sessions export ID [-o FILE] | dsh sessions import FILE|- [--new-id] [--cwd DIR]'

/**
 * `dsh sessions [--json] [--all]`: id, title, cwd, updated, turns, how the last turn ended; newest
 * first. Without `--all`, sessions with nothing to go back to are left out (`listedByDefault`).
 * `dsh sessions repair ID`: salvage a corrupt session into a copy (D-5); the original stays.
 * `dsh sessions delete ID` (or `rm`): move a session to the store's trash (never unlinked);
 * `dsh sessions restore ID` puts it back.
 * `dsh sessions export ID [-o FILE]`: the session as a file another home imports (stdout by
 * default): its JSONL log, or one JSON document with the images it references.
 * `dsh sessions import FILE|- [--new-id] [--cwd DIR]`: stores an exported session here, to run
 * in `--cwd` or the current folder (never the folder the file names) with this home's permission
 * defaults (the file's knobs are dropped: `session/imported`); one stderr line says so.
 */
export class SessionsListApp extends Service {
  static readonly inject = ['host', 'sessionPersistence']

  constructor(ctx: Context) {
    super(ctx, 'app')
  }

  async run(): Promise<number> {
    const { host } = this.ctx
    const args = host.args
    // The launcher reads its flags before the subcommand's own words (`dsh --patch F sessions
    // export ID`, `dsh sessions --patch F export ID`); after them one would be lost.
    const late = args.find(arg => /^--(patch|store|profile)(=|$)/.test(arg))
    if (late !== undefined) return this.usage(`${late.split('=', 1)[0]} is a launcher flag: put it before the subcommand's words (dsh ${late.split('=', 1)[0]} ... sessions ${args[0] ?? ''} ...)`)
    if (args[0] === 'repair') {
      if (args.length !== 2 || args[1].startsWith('-')) return this.usage('repair needs exactly one session id')
      return this.withId(args[1], id => this.repair(id))
    }
    if (args[0] === 'delete' || args[0] === 'rm') {
      if (args.length !== 2 || args[1].startsWith('-')) return this.usage(`${args[0]} needs exactly one session id`)
      return this.withId(args[1], id => this.delete(id))
    }
    if (args[0] === 'restore') {
      if (args.length !== 2 || args[1].startsWith('-')) return this.usage('restore needs exactly one session id')
      return this.restore(args[1])
    }
    if (args[0] === 'export') return this.export(args.slice(1))
    if (args[0] === 'import') return this.import(args.slice(1))
    const unknown = args.find(arg => arg !== '--json' && arg !== '--all')
    if (unknown !== undefined) return this.usage(`unknown argument ${JSON.stringify(unknown)}`)
    return this.list(args.includes('--json'), args.includes('--all'))
  }

  /** The stored id typed, or the one a typed start names (lookup.ts). */
  private async withId(wanted: string, run: (id: string) => Promise<number>): Promise<number> {
    let id: string
    try {
      id = await storedId(this.ctx.sessionPersistence, wanted)
    } catch (error) {
      this.ctx.host.stderr.write(`dsh: ${(error as Error).message}\n`)
      return 1
    }
    return run(id)
  }

  private usage(problem: string): number {
    this.ctx.host.stderr.write(`dsh: sessions: ${problem}\n${SESSIONS_USAGE}\n`)
    return 2
  }

  private async repair(id: string): Promise<number> {
    const { host, sessionPersistence } = this.ctx
    try {
      const copy = await sessionPersistence.salvage(id)
      for (const line of copy.skipped) host.stderr.write(`dsh: not kept: ${line}\n`)
      host.stdout.write(`salvaged ${copy.kept} events of session ${id} into session ${copy.id}` +
        `${copy.closers > 0 ? ` (its open turn closed as interrupted)` : ''}; ${id} was left unchanged\n` +
        `continue with: dsh --session ${copy.id} "..."\n`)
      return 0
    } catch (error) {
      host.stderr.write(`dsh: ${(error as Error).message}\n`)
      return 1
    }
  }

  private async delete(id: string): Promise<number> {
    const { host, sessionPersistence } = this.ctx
    try {
      if (!await sessionPersistence.delete(id)) {
        host.stderr.write(`dsh: no stored session ${JSON.stringify(id)}\n`)
        return 1
      }
      host.stdout.write(`deleted session ${id} (moved to the store's trash, not erased; dsh sessions restore ${id} puts it back)\n`)
      return 0
    } catch (error) {
      host.stderr.write(`dsh: ${(error as Error).message}\n`)
      return 1
    }
  }

  /** The session last deleted with this id, back from the store's trash (the whole id: it is not listed). */
  private async restore(id: string): Promise<number> {
    const { host, sessionPersistence: { backend } } = this.ctx
    if (backend.restore === undefined) {
      host.stderr.write(`dsh: the ${backend.kind} store cannot restore a session from its trash\n`)
      return 1
    }
    try {
      if (!await backend.restore(id)) {
        host.stderr.write(`dsh: no session ${JSON.stringify(id)} in the store's trash (restore takes the whole id that delete printed)\n`)
        return 1
      }
      host.stdout.write(`restored session ${id} from the store's trash\ncontinue with: dsh --session ${id} "..."\n`)
      return 0
    } catch (error) {
      host.stderr.write(`dsh: ${(error as Error).message}\n`)
      return 1
    }
  }

  private async export(args: readonly string[]): Promise<number> {
    const { host, sessionPersistence } = this.ctx
    let output: string | undefined
    const ids: string[] = []
    for (let i = 0; i < args.length; i++) {
      if (args[i] === '-o' || args[i] === '--output') {
        output = args[++i]
        if (output === undefined) return this.usage(`${args[i - 1]} needs a file name`)
      } else if (args[i].startsWith('-')) return this.usage(`unknown argument ${JSON.stringify(args[i])}`)
      else ids.push(args[i])
    }
    if (ids.length !== 1) return this.usage('export needs exactly one session id')
    try {
      ids[0] = await storedId(sessionPersistence, ids[0])
      const { encodeSessionExport } = await exchangeFormat()
      const exchange = await sessionPersistence.exportSession(ids[0])
      const file = encodeSessionExport(exchange)
      for (const id of exchange.missing) host.stderr.write(`dsh: image ${id} is no longer stored; the export names it without its bytes\n`)
      if (output === undefined) host.stdout.write(file.text)
      else {
        await writeFile(resolve(host.cwd, output), file.text, { mode: 0o600 })
        host.stderr.write(`exported session ${ids[0]} (${exchange.events.length} events${exchange.attachments.length > 0 ? `, ${exchange.attachments.length} images` : ''}) to ${output}\n`)
      }
      return 0
    } catch (error) {
      host.stderr.write(`dsh: ${(error as Error).message}\n`)
      return 1
    }
  }

  private async import(args: readonly string[]): Promise<number> {
    const { host, sessionPersistence } = this.ctx
    // FILE and --cwd are relative to the folder dsh was started in: the launcher makes `--cwd`
    // the host's folder, which is where the session will run, not where the file was named.
    const here = process.cwd()
    const files: string[] = []
    let newId = false
    let cwd = here
    for (let i = 0; i < args.length; i++) {
      if (args[i] === '--new-id') newId = true
      else if (args[i] === '--cwd') {
        const value = args[++i]
        if (value === undefined) return this.usage('--cwd needs a folder')
        cwd = resolve(here, value)
        if (!statSync(cwd, { throwIfNoEntry: false })?.isDirectory()) return this.usage(`--cwd ${JSON.stringify(value)} is not a folder`)
      } else if (args[i] !== '-' && args[i].startsWith('-')) return this.usage(`unknown argument ${JSON.stringify(args[i])}`)
      else files.push(args[i])
    }
    if (files.length !== 1) return this.usage('import needs exactly one file (- reads standard input)')
    try {
      const text = files[0] === '-' ? await readText(host.stdin ?? process.stdin) : await readFile(resolve(here, files[0]), 'utf8')
      const { parseSessionExport } = await exchangeFormat()
      const exchange = parseSessionExport(text)
      const result = await sessionPersistence.importSession(exchange, { newId, cwd })
      host.stderr.write(`${importNotice(this.ctx.get('approval') as ApprovalService | undefined, exchange, result.id, cwd)}\n`)
      for (const id of result.missing) host.stderr.write(`dsh: image ${id} is not in the file; the session references it without its bytes\n`)
      host.stdout.write(`imported session ${result.id} (${result.events} events${result.attachments > 0 ? `, ${result.attachments} images` : ''})` +
        `${result.closers > 0 ? '; its open turn was closed as interrupted' : ''}\n` +
        `continue with: dsh --session ${result.id} "..."\n`)
      return 0
    } catch (error) {
      host.stderr.write(`dsh: import: ${(error as Error).message}\n`)
      return 1
    }
  }

  private async list(json: boolean, all: boolean): Promise<number> {
    const { host, sessionPersistence } = this.ctx
    const stored = [...await sessionPersistence.list()].sort((a, b) => b.updatedAt - a.updatedAt)
    const sessions = all ? stored : stored.filter(listedByDefault)
    const hidden = stored.length - sessions.length
    // On stderr, so stdout stays the list (or the JSON) a script reads.
    const note = () => {
      if (hidden > 0) host.stderr.write(`dsh: ${hidden} session${hidden === 1 ? '' : 's'} with no completed turn not shown (dsh sessions --all lists ${hidden === 1 ? 'it' : 'them'})\n`)
    }
    if (json) {
      host.stdout.write(`${JSON.stringify(sessions)}\n`)
      note()
      return 0
    }
    if (sessions.length === 0) {
      host.stdout.write(hidden > 0 ? 'no sessions to show\n' : 'no stored sessions\n')
      note()
      return 0
    }
    const rows = sessions.map(s => [s.id, s.title ?? '(untitled)', s.cwd ?? '-', age(s.updatedAt), String(s.turns), lastTurnCell(s)]
      // A control character in a title or a path would break the line or move the cursor: a
      // space; a bidirectional control (which reorders the line) is named (security #42.6).
      .map(cell => terminalSafe(cell.replace(/[\u0000-\u001f\u007f-\u009f]/g, ' '))))
    const header = ['ID', 'TITLE', 'CWD', 'UPDATED', 'TURNS', 'LAST TURN']
    // Columns line up by display width: a CJK character or an emoji takes two. string-width is
    // loaded only for a listing that needs it (an ASCII one is the common case, and start-up counts).
    const wide = rows.some(row => row.some(cell => /[^\u0020-\u007e]/.test(cell)))
    const width: (text: string) => number = wide ? (await import('string-width')).default : text => text.length
    const widths = header.map((h, i) => Math.min(MAX_COLUMN, Math.max(h.length, ...rows.map(r => width(r[i])))))
    const line = (cells: string[]) => cells.map((c, i) => fit(c, widths[i], width)).join('  ').trimEnd()
    host.stdout.write(`${[header, ...rows].map(line).join('\n')}\n`)
    // A damaged session's whole message (the file, the session, the repair command) does not fit
    // its cell: one line each on stderr, as a load of it would say.
    for (const s of sessions) if (s.damaged === true) host.stderr.write(`dsh: ${terminalSafe(s.unreadable!.replace(/[\u0000-\u001f\u007f-\u009f]/g, ' '))}\n`)
    note()
    return 0
  }
}

/** The LAST TURN column: how it ended, or why the session cannot be loaded. */
function lastTurnCell(s: StoredSessionSummary): string {
  if (s.damaged === true) return 'damaged: cannot be loaded (see below)'
  if (s.unreadable !== undefined) return `unreadable: ${s.unreadable.replace(/^\S+: /, '')}`
  return s.lastTurn ?? '-'
}

/**
 * The one stderr line of an import: the permission knobs the file set (when they differ from
 * this home's defaults) were dropped, the defaults that apply, and the folder the session runs in.
 */
function importNotice(approval: ApprovalService | undefined, exchange: SessionExchange, id: string, cwd: string): string {
  const where = `working folder: ${cwd}${exchange.header.cwd !== undefined && exchange.header.cwd !== cwd ? ` (the file named ${exchange.header.cwd})` : ''}`
  if (approval === undefined) return `dsh: imported session ${id}: permission knobs from the file were dropped; ${where}`
  const defaults = approval.defaults()
  // The file's knobs as they were in force where it was exported.
  const file = { id, header: exchange.header, events: exchange.events, position: { turnOpen: false }, append: () => undefined }
  const set = [approval.mode(file), approval.policy(file)]
  const dropped = set[0] !== defaults.mode || set[1] !== defaults.policy ? `permission knobs from the file (${set.join(', ')}) were dropped; ` : ''
  return `dsh: imported session ${id}: ${dropped}this home's defaults apply (${defaults.mode}, ${defaults.policy}); ${where}`
}

/** The widest a column of `dsh sessions` gets; a longer cell is cut with an ellipsis. */
const MAX_COLUMN = 60

/** `text` padded to `columns` display columns, or cut to them with an ellipsis (whole characters). */
function fit(text: string, columns: number, width: (text: string) => number): string {
  const full = width(text)
  if (full <= columns) return text + ' '.repeat(columns - full)
  let kept = ''
  let used = 0
  for (const char of text) {
    const next = width(char)
    if (used + next > columns - 1) break
    kept += char
    used += next
  }
  return `${kept}…${' '.repeat(columns - 1 - used)}`
}
