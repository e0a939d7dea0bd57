// Bash-tool child (src/tools/builtin/bash.test.ts): one call of the built-in bash tool, run over
// the built dist/ tree in a process whose standard input the test controls (a pipe it keeps
// open, holding a line), so what the command reads shows what it was given as stdin.
//   argv: <cwd> <command>
// Prints the result's text as one JSON string line, then exits.
import { Context } from 'cordis'
import { ToolsPlugin } from '../dist/tools/index.js'
import { BuiltinToolsPlugin } from '../dist/tools/builtin/index.js'

const [cwd, command] = process.argv.slice(2)
const ctx = new Context()
await ctx.plugin(ToolsPlugin)
await ctx.plugin(BuiltinToolsPlugin, {})
const record = await ctx.tools.execute(
  { callId: 'stdin-1', name: 'bash', arguments: JSON.stringify({ description: 'stdin', command, timeoutMs: 5000 }) },
  { cwd, signal: new AbortController().signal },
)
process.stdout.write(`${JSON.stringify(record.content.map((block) => block.type === 'text' ? block.text : '').join(''))}\n`)
process.exit(0)
