/**
 * Small apps: `dsh sessions` (list stored sessions).
 */
import { Service, type Context } from 'cordis'
import '../host/index.js'
import '../persistence/api.js'

function age(ms: number): string {
  const seconds = Math.max(0, Math.round((Date.now() - ms) / 1000))
  if (seconds < 60) return `${seconds}s ago`
  if (seconds < 3600) return `${Math.round(seconds / 60)}m ago`
  if (seconds < 86_400) return `${Math.round(seconds / 3600)}h ago`
  return `${Math.round(seconds / 86_400)}d ago`
}

const SESSIONS_USAGE = 'usage: dsh sessions [--json] | dsh sessions repair ID'

/**
 * `dsh sessions [--json]`: id, title, cwd, updated, turns, how the last turn ended; newest first.
 * `dsh sessions repair ID`: salvage a corrupt session into a copy (D-5); the original stays.
 */
export class SessionsListApp extends Service {
  static readonly inject = ['host', 'sessionPersistence']

  constructor(ctx: Context) {
    super(ctx, 'app')
  }

  async run(): Promise<number> {
    const { host } = this.ctx
    const args = host.args
    if (args[0] === 'repair') {
      if (args.length !== 2 || args[1].startsWith('-')) return this.usage('repair needs exactly one session id')
      return this.repair(args[1])
    }
    const unknown = args.find(arg => arg !== '--json')
    if (unknown !== undefined) return this.usage(`unknown argument ${JSON.stringify(unknown)}`)
    return this.list(args.includes('--json'))
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

  private async list(json: boolean): Promise<number> {
    const { host, sessionPersistence } = this.ctx
    const sessions = [...await sessionPersistence.list()].sort((a, b) => b.updatedAt - a.updatedAt)
    if (json) {
      host.stdout.write(`${JSON.stringify(sessions)}\n`)
      return 0
    }
    if (sessions.length === 0) {
      host.stdout.write('no stored sessions\n')
      return 0
    }
    const rows = sessions.map(s => [s.id, s.title ?? '(untitled)', s.cwd ?? '-', age(s.updatedAt), String(s.turns), s.unreadable !== undefined ? `unreadable: ${s.unreadable.replace(/^\S+: /, '')}` : s.lastTurn ?? '-'])
    const header = ['ID', 'TITLE', 'CWD', 'UPDATED', 'TURNS', 'LAST TURN']
    const widths = header.map((h, i) => Math.min(60, Math.max(h.length, ...rows.map(r => r[i].length))))
    const line = (cells: string[]) => cells.map((c, i) => c.slice(0, widths[i]).padEnd(widths[i])).join('  ').trimEnd()
    host.stdout.write(`${[header, ...rows].map(line).join('\n')}\n`)
    return 0
  }
}
