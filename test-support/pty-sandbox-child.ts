/**
 * Opens a sandboxed shell terminal (real bubblewrap, workspace-write) and tries a write inside the
 * workspace and one outside it; prints what happened as one JSON line. Run as a child so a test
 * can run it under another uid. Arguments: <workspace> <outside folder>.
 */
import { Context } from 'cordis'
import { SessionsServicePlugin } from '../src/session/index.js'
import { ToolsPlugin } from '../src/tools/index.js'
import { SandboxPlugin } from '../src/sandbox/service.js'
import { PtyPlugin } from '../src/pty/index.js'

const [root, outside] = process.argv.slice(2) as [string, string]
const ctx = new Context()
for (const fiber of [ctx.plugin(SessionsServicePlugin), ctx.plugin(ToolsPlugin), ctx.plugin(SandboxPlugin, { workspaceRoot: root, mode: 'workspace-write' }), ctx.plugin(PtyPlugin, { silenceMs: 1000 })]) await fiber.await()
const session = ctx.sessions.create({ cwd: root })
let calls = 0
const call = async (name: string, args: unknown) => {
  const record = await ctx.tools.execute({ callId: `c${++calls}`, name, arguments: JSON.stringify(args) }, { cwd: root, signal: new AbortController().signal, session })
  return { isError: record.isError, text: record.content.map(part => part.type === 'text' ? part.text : '').join('') }
}
const open = await call('terminal_open', { type: 'shell' })
const inside = await call('terminal_send', { sessionId: 'pty-1', text: `echo in > ${root}/in.txt && echo WROTE-IN` })
const escape = await call('terminal_send', { sessionId: 'pty-1', text: `echo out > ${outside}/out.txt || echo DENIED-OUT` })
const who = await call('terminal_send', { sessionId: 'pty-1', text: 'id -u' })
const close = await call('terminal_close', { sessionId: 'pty-1' })
process.stdout.write(`${JSON.stringify({ uid: process.getuid?.(), open, inside, escape, who, close })}\n`)
process.exit(0)
