/**
 * Opens a shell terminal with a background `sleep` in it, prints the pids of the terminal's
 * processes as one JSON line, then exits without closing anything (`process.exit`).
 */
import { Context } from 'cordis'
import { SessionsServicePlugin } from '../src/session/index.js'
import { ToolsPlugin } from '../src/tools/index.js'
import { PtyPlugin } from '../src/pty/index.js'
import { terminalProcesses } from '../src/pty/proc.js'

const ctx = new Context()
for (const fiber of [ctx.plugin(SessionsServicePlugin), ctx.plugin(ToolsPlugin), ctx.plugin(PtyPlugin, { silenceMs: 500 })]) await fiber.await()
const session = ctx.sessions.create({ cwd: process.cwd() })
const call = (name: string, args: unknown) => ctx.tools.execute({ callId: name, name, arguments: JSON.stringify(args) }, { cwd: process.cwd(), signal: new AbortController().signal, session })
await call('terminal_open', { type: 'shell' })
await call('terminal_send', { sessionId: 'pty-1', text: '(sleep 300 &) ; sleep 301 & sleep 302' })
const root = ctx.pty.list(session.id)[0]!.pid
process.stdout.write(`${JSON.stringify(terminalProcesses(root).map(p => p.pid))}\n`)
process.exit(0)
