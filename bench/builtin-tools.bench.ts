/**
 * Built-in file tools on larger inputs: read (first and last page of a big file: the whole file
 * is streamed and hashed either way), grep over a tree of files, glob over the same tree, and a
 * bash round trip: unconfined, and under the bubblewrap sandbox with a sandbox per command and
 * through the kept shell host (when bwrap works here). Also the deny-read list (docs/security.md,
 * "Secret reads"): the cost of finding what to hide, paid by every confined command and file tool
 * call, and grep/glob with the sandbox's check of every file. Prints numbers only.
 * Run: npx tsx bench/builtin-tools.bench.ts [lines] [files]
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Context } from 'cordis'
import { ToolsPlugin } from '../src/tools/registry.js'
import { BuiltinToolsPlugin } from '../src/tools/builtin/index.js'
import { bwrapRunner, probeRunner } from '../src/sandbox/runner.js'
import { SandboxPlugin } from '../src/sandbox/service.js'
import { DEFAULT_DENY_READ, hiddenPaths, ReadCheck, readPolicy } from '../src/sandbox/secrets.js'

const lines = Number(process.argv[2] ?? 500_000)
const files = Number(process.argv[3] ?? 2_000)

const ctx = new Context()
await ctx.plugin(ToolsPlugin)
await ctx.plugin(BuiltinToolsPlugin)
const cwd = await mkdtemp(join(tmpdir(), 'dsh-bench-tools-'))
const signal = new AbortController().signal
let n = 0
const call = (name: string, args: unknown) =>
  ctx.tools.execute({ callId: `b${++n}`, name, arguments: JSON.stringify(args) }, { cwd, signal })

async function time(label: string, repeat: number, fn: () => Promise<unknown>) {
  await fn()
  const start = performance.now()
  for (let i = 0; i < repeat; i++) await fn()
  const ms = (performance.now() - start) / repeat
  console.log(`${label.padEnd(44)} ${ms.toFixed(2).padStart(9)} ms/call`)
}

try {
  const big = Array.from({ length: lines }, (_, i) => `line ${i} ${'x'.repeat(40)}\n`).join('')
  await writeFile(join(cwd, 'big.txt'), big)
  console.log(`big.txt: ${lines} lines, ${(big.length / 1024 / 1024).toFixed(1)} MB`)
  await time('read first page', 5, () => call('read', { file_path: 'big.txt' }))
  await time('read last page', 5, () => call('read', { file_path: 'big.txt', offset: lines - 100 }))

  for (let i = 0; i < files; i++) {
    const dir = join(cwd, 'tree', `d${i % 50}`)
    await mkdir(dir, { recursive: true })
    await writeFile(join(dir, `f${i}.ts`), Array.from({ length: 100 }, (_, j) => `export const v${j} = ${i * j}\n`).join(''))
  }
  console.log(`tree: ${files} files x 100 lines`)
  await time('grep rare pattern over tree', 3, () => call('grep', { pattern: 'v99 = 1999\\d', path: 'tree' }))
  await time('grep frequent pattern (250 cap)', 3, () => call('grep', { pattern: 'export', path: 'tree' }))
  await time('glob **/*.ts over tree', 3, () => call('glob', { pattern: '**/*.ts', path: 'tree' }))
  await time('bash echo round trip', 20, () => call('bash', { command: 'echo hi', description: 'bench' }))

  // The deny-read list: a home with none of the defaults, and one with all of them (worst case).
  for (const present of [false, true]) {
    const home = join(cwd, present ? 'home-all' : 'home-none')
    await mkdir(join(home, '.dsh', 'tool-output'), { recursive: true })
    if (present) {
      for (const entry of DEFAULT_DENY_READ) {
        await mkdir(join(home, entry, '..'), { recursive: true })
        if (/\.(json|yml)$|^\.(netrc|npmrc|pypirc|git-credentials)$/.test(entry)) await writeFile(join(home, entry), 'x')
        else await mkdir(join(home, entry), { recursive: true })
      }
    }
    const policy = readPolicy({ home, dshHome: join(home, '.dsh') })
    const repeat = 20_000
    hiddenPaths(policy)
    let start = performance.now()
    for (let i = 0; i < repeat; i++) hiddenPaths(policy)
    const found = hiddenPaths(policy).length
    console.log(`${`deny-read masks, ${found} of ${policy.deny.length} present`.padEnd(44)} ${((performance.now() - start) * 1000 / repeat).toFixed(1).padStart(9)} µs/call`)
    const check = new ReadCheck(policy, hiddenPaths(policy), cwd)
    start = performance.now()
    for (let i = 0; i < repeat; i++) check.denied(join(cwd, 'tree', 'd1', `f${i % 2000}.ts`), join(cwd, 'tree', 'd1', 'f1.ts'))
    console.log(`${'deny-read check of one known real path'.padEnd(44)} ${((performance.now() - start) * 1000 / repeat).toFixed(2).padStart(9)} µs/call`)
  }
  {
    const boxed = new Context()
    await boxed.plugin(ToolsPlugin)
    await boxed.plugin(SandboxPlugin, { mode: 'workspace-write', workspaceRoot: cwd, shellHost: false })
    await boxed.plugin(BuiltinToolsPlugin)
    const run = (name: string, args: unknown) => boxed.tools.execute({ callId: `b${++n}`, name, arguments: JSON.stringify(args) }, { cwd, signal })
    await time('grep rare pattern, sandbox (deny-read)', 3, () => run('grep', { pattern: 'v99 = 1999\\d', path: 'tree' }))
    await time('glob **/*.ts, sandbox (deny-read)', 3, () => run('glob', { pattern: '**/*.ts', path: 'tree' }))
    await time('read first page, sandbox (deny-read)', 5, () => run('read', { file_path: 'big.txt' }))
  }

  const problem = await probeRunner(bwrapRunner(), { root: '/', timeoutMs: 10_000 })
  if (problem !== undefined) console.log(`(no confined bash figures: ${problem})`)
  else {
    for (const shellHost of [false, true]) {
      const boxed = new Context()
      await boxed.plugin(ToolsPlugin)
      await boxed.plugin(SandboxPlugin, { mode: 'workspace-write', workspaceRoot: cwd, shellHost })
      await boxed.plugin(BuiltinToolsPlugin)
      const run = () => boxed.tools.execute({ callId: `b${++n}`, name: 'bash', arguments: JSON.stringify({ command: 'echo hi', description: 'bench' }) }, { cwd, signal })
      // The first call probes the runner and starts the host; the timed ones come after it is up.
      await run()
      await (boxed.sandbox as SandboxPlugin).shellHostsSettled()
      await time(`bash echo, workspace-write, ${shellHost ? 'shell host' : 'bwrap per call'}`, 40, run)
    }
  }
} finally {
  await rm(cwd, { recursive: true, force: true })
}
