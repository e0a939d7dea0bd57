// The tool process's own life when a sandbox's shell host starts it: starts a host under the
// given runner argv prefix (from the built dist/), runs `true` through it COUNT times one after
// another and prints the median run-to-close time in ms (the host's fork, exec and wait, and the
// relay of the end back to this process).
//   node bench/support/host-reference.mjs '["bwrap","--ro-bind","/","/","--"]' 20 /work /path/to/dsh
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'

const prefix = JSON.parse(process.argv[2])
const count = Number(process.argv[3] ?? 20)
const cwd = process.argv[4] ?? process.cwd()
const dsh = process.argv[5]
const { ShellHost } = await import(pathToFileURL(join(dsh, 'dist', 'sandbox', 'shell-host.js')).href)
const host = await ShellHost.start(prefix, { shell: 'bash', cwd, env: { PATH: process.env.PATH ?? '/usr/bin:/bin' }, clearTmp: false })
// An idle host does not hold the process open (dsh keeps a timer per command); this does.
const keep = setInterval(() => {}, 1 << 30)
const times = []
for (let i = 0; i < count; i++) {
  const started = performance.now()
  await new Promise((resolve, reject) => {
    const run = host.run('true', { cwd, env: { PATH: process.env.PATH ?? '/usr/bin:/bin' } })
    run.stdout.resume()
    run.stderr.resume()
    run.once('error', reject)
    run.once('close', resolve)
  })
  times.push(performance.now() - started)
}
host.close()
clearInterval(keep)
times.sort((a, b) => a - b)
process.stdout.write(`${times[Math.floor(times.length / 2)]}\n`)
