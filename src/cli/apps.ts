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

/** `dsh sessions [--json]`: id, title, cwd, updated, turns; newest first. */
export class SessionsListApp extends Service {
  static readonly inject = ['host', 'sessionPersistence']

  constructor(ctx: Context) {
    super(ctx, 'app')
  }

  async run(): Promise<number> {
    const { host, sessionPersistence } = this.ctx
    const sessions = [...await sessionPersistence.list()].sort((a, b) => b.updatedAt - a.updatedAt)
    if (host.args.includes('--json')) {
      host.stdout.write(`${JSON.stringify(sessions)}\n`)
      return 0
    }
    if (sessions.length === 0) {
      host.stdout.write('no stored sessions\n')
      return 0
    }
    const rows = sessions.map(s => [s.id, s.title ?? '(untitled)', s.cwd ?? '-', age(s.updatedAt), String(s.turns)])
    const header = ['ID', 'TITLE', 'CWD', 'UPDATED', 'TURNS']
    const widths = header.map((h, i) => Math.min(60, Math.max(h.length, ...rows.map(r => r[i].length))))
    const line = (cells: string[]) => cells.map((c, i) => c.slice(0, widths[i]).padEnd(widths[i])).join('  ').trimEnd()
    host.stdout.write(`${[header, ...rows].map(line).join('\n')}\n`)
    return 0
  }
}
