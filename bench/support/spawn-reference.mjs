// The tool process's own life, for subtracting it from a step: spawns the given argv COUNT times
// one after another from this small Node process (stdio piped and its own process group, as the
// bash tool does) and prints the median spawn-to-close time in ms.
//   node bench/support/spawn-reference.mjs '["bash","-c","true"]' 20
import { spawn } from 'node:child_process'

const argv = JSON.parse(process.argv[2])
const count = Number(process.argv[3] ?? 20)
const cwd = process.argv[4] ?? process.cwd()
const times = []
for (let i = 0; i < count; i++) {
  const started = performance.now()
  await new Promise((resolve, reject) => {
    const child = spawn(argv[0], argv.slice(1), { cwd, detached: true, stdio: ['ignore', 'pipe', 'pipe'] })
    child.stdout.resume()
    child.stderr.resume()
    child.on('error', reject)
    child.on('close', resolve)
  })
  times.push(performance.now() - started)
}
times.sort((a, b) => a - b)
process.stdout.write(`${times[Math.floor(times.length / 2)]}\n`)
