/**
 * bin/dsh.js picks its code: dist/bundle while the bundle was made from the current dist/ (its
 * copy of dist/.buildstamp matches), dist/ as tsc wrote it otherwise; within the bundle, the
 * CommonJS main.cjs through a V8 code cache where it can. Run against a stand-in package whose
 * entry points say which one ran.
 */
import { isAscii } from 'node:buffer'
import { execFile, execFileSync, spawn, spawnSync } from 'node:child_process'
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { init as lexerReady, parse as lexModule } from 'es-module-lexer'
import { LONG_RUN_FLAGS } from './run.js'

const launcher = join(import.meta.dirname, '..', '..', 'bin', 'dsh.js')
const folders: string[] = []

function standIn(files: Record<string, string>): string {
  const root = mkdtempSync(join(tmpdir(), 'dsh-launcher-'))
  folders.push(root)
  mkdirSync(join(root, 'bin'))
  copyFileSync(launcher, join(root, 'bin', 'dsh.js'))
  copyFileSync(join(launcher, '..', 'package.json'), join(root, 'bin', 'package.json'))
  const main = (which: string) => `export async function main(argv) { process.stdout.write(${JSON.stringify(which)} + ' ' + argv.join(' ')); return 0 }\n`
  const all: Record<string, string> = { 'package.json': '{"type":"module"}', 'dist/cli/main.js': main('dist'), 'dist/bundle/main.js': main('bundle'), ...files }
  for (const [path, text] of Object.entries(all)) {
    if (text === '') continue
    mkdirSync(join(root, path, '..'), { recursive: true })
    writeFileSync(join(root, path), text)
  }
  return root
}

const run = (root: string, ...args: string[]) => execFileSync(process.execPath, [join(root, 'bin', 'dsh.js'), ...args], { encoding: 'utf8' })
const runWith = (env: Record<string, string>, root: string, ...args: string[]) =>
  execFileSync(process.execPath, [join(root, 'bin', 'dsh.js'), ...args], { encoding: 'utf8', env: { ...process.env, ...env } })

/** As run, without blocking this process (the test's own HTTP server must answer). */
const runAsync = (root: string, ...args: string[]) => new Promise<string>((resolve, reject) => {
  execFile(process.execPath, [join(root, 'bin', 'dsh.js'), ...args], { encoding: 'utf8' }, (error, stdout) => error === null ? resolve(stdout) : reject(error))
})

const STAMPS = { 'dist/.buildstamp': '2026-01-01T00:00:00.000Z', 'dist/bundle/.buildstamp': '2026-01-01T00:00:00.000Z' }
/**
 * A stand-in main.cjs as scripts/bundle.mjs writes it: a package imported dynamically (through
 * `__dshImport`) and then required statically, as the TUI does with ink, whose top-level await
 * require() refuses; a node: builtin required; the module URL it is given.
 */
const MAIN_CJS = `const { join } = require('node:path')
exports.main = async argv => {
  const first = await __dshImport('awaits')
  const again = require('awaits')
  process.stdout.write(['cjs', ...argv, first.value, again === first, __dshModuleUrl.endsWith('/dist/bundle/main.cjs'), join('a', 'b')].join(' '))
  return 0
}
`
const AWAITS = { 'node_modules/awaits/package.json': '{"type":"module","exports":"./index.js"}', 'node_modules/awaits/index.js': 'await Promise.resolve()\nexport const value = 42\n' }
const cacheOf = (root: string) => join(root, 'dist', 'bundle', 'main.cjs.cache')

afterEach(() => {
  for (const folder of folders.splice(0)) rmSync(folder, { recursive: true, force: true })
})

describe('launcher (bin/dsh.js)', () => {
  it('runs the bundle when its stamp matches dist/.buildstamp', () => {
    const root = standIn({ 'dist/.buildstamp': '2026-01-01T00:00:00.000Z', 'dist/bundle/.buildstamp': '2026-01-01T00:00:00.000Z' })
    expect(run(root, '--version')).toBe('bundle --version')
  })

  it('falls back to dist/ when dist/ was rebuilt after the bundle (stamps differ)', () => {
    const root = standIn({ 'dist/.buildstamp': '2026-01-02T00:00:00.000Z', 'dist/bundle/.buildstamp': '2026-01-01T00:00:00.000Z' })
    expect(run(root, 'sessions')).toBe('dist sessions')
  })

  it('falls back to dist/ when there is no bundle or no build stamp', () => {
    const noBundle = standIn({ 'dist/.buildstamp': '2026-01-01T00:00:00.000Z', 'dist/bundle/main.js': '' })
    expect(run(noBundle, '--help')).toBe('dist --help')
    const noStamp = standIn({ 'dist/bundle/.buildstamp': '2026-01-01T00:00:00.000Z' })
    expect(run(noStamp, 'x')).toBe('dist x')
  })

  it('runs main.cjs with a code cache: the first run writes main.cjs.cache, later runs take it as it is', () => {
    const root = standIn({ ...STAMPS, 'dist/bundle/main.cjs': MAIN_CJS, ...AWAITS })
    expect(run(root, 'ask', 'x')).toBe('cjs ask x 42 true true a/b')
    const written = statSync(cacheOf(root))
    expect(written.size).toBeGreaterThan(0)
    expect(run(root, 'ask', 'y')).toBe('cjs ask y 42 true true a/b')
    // Accepted by V8, so not written again (a new cache is a new file, renamed into place).
    expect(statSync(cacheOf(root)).ino).toBe(written.ino)
    // The quick commands stay on the ESM chunks.
    expect(run(root, '--version')).toBe('bundle --version')
  })

  it('`dsh sessions` runs main.cjs with a code cache of its own, leaving the agent runs\' cache alone', () => {
    const root = standIn({ ...STAMPS, 'dist/bundle/main.cjs': MAIN_CJS, ...AWAITS })
    const listing = join(root, 'dist', 'bundle', 'main.cjs.sessions.cache')
    expect(run(root, 'go')).toBe('cjs go 42 true true a/b')
    const agent = statSync(cacheOf(root))
    expect(run(root, 'sessions')).toBe('cjs sessions 42 true true a/b')
    const written = statSync(listing)
    expect(readFileSync(listing).toString('latin1')).toMatch(/^dsh code cache 2026-01-01T00:00:00.000Z \{"":\d+\}\n/)
    expect(run(root, 'sessions', 'delete', 'x')).toBe('cjs sessions delete x 42 true true a/b')
    // Accepted by V8 (the listing sets no V8 flags, before or after), so not written again.
    expect(statSync(listing).ino).toBe(written.ino)
    expect(statSync(cacheOf(root)).ino).toBe(agent.ino)
    expect(run(root, 'go')).toBe('cjs go 42 true true a/b')
    expect(statSync(cacheOf(root)).ino).toBe(agent.ino)
  })

  it('a cache V8 refuses (corrupt, or from another Node or other flags) is replaced, and the run goes on', () => {
    const root = standIn({ ...STAMPS, 'dist/bundle/main.cjs': MAIN_CJS, ...AWAITS })
    writeFileSync(cacheOf(root), Buffer.from('not a code cache at all'))
    const before = statSync(cacheOf(root))
    expect(run(root, 'go')).toBe('cjs go 42 true true a/b')
    expect(statSync(cacheOf(root)).ino).not.toBe(before.ino)
    expect(readFileSync(cacheOf(root)).toString()).not.toBe('not a code cache at all')
  })

  it('DSH_CODE_CACHE=0 runs the ESM bundle and writes no cache', () => {
    const root = standIn({ ...STAMPS, 'dist/bundle/main.cjs': MAIN_CJS, ...AWAITS })
    expect(runWith({ DSH_CODE_CACHE: '0' }, root, 'go')).toBe('bundle go')
    expect(() => statSync(cacheOf(root))).toThrow()
  })

  it('a cache made under another build stamp is not used: it is replaced', () => {
    const root = standIn({ ...STAMPS, 'dist/bundle/main.cjs': MAIN_CJS, ...AWAITS })
    expect(run(root, 'go')).toBe('cjs go 42 true true a/b')
    const first = readFileSync(cacheOf(root))
    expect(first.toString('latin1')).toMatch(/^dsh code cache 2026-01-01T00:00:00.000Z \{"":\d+\}\n/)
    // The same bundle under a new stamp (a rebuild that left the cache behind).
    for (const path of ['dist/.buildstamp', 'dist/bundle/.buildstamp']) writeFileSync(join(root, path), '2026-02-02T00:00:00.000Z')
    const before = statSync(cacheOf(root))
    expect(run(root, 'go')).toBe('cjs go 42 true true a/b')
    expect(statSync(cacheOf(root)).ino).not.toBe(before.ino)
    expect(readFileSync(cacheOf(root)).toString('latin1')).toMatch(/^dsh code cache 2026-02-02T00:00:00.000Z \{"":\d+\}\n/)
  })

  it('the cache grows: a run that compiled code the cache lacked writes it again, once; a new profile is recorded', () => {
    // `big` calls a function no earlier run compiled (~30 KB of bytecode); the first run never did.
    const statements = Array.from({ length: 3000 }, (_, i) => `total += input * ${i} + ${i % 7};`).join('\n')
    const main = `function heavy(input) { let total = 0\n${statements}\nreturn total }
exports.main = async (argv, report) => {
  report.profile = argv[1]
  process.stdout.write(argv[0] === 'big' ? String(heavy(1) > 0) : 'small')
  return 0
}
`
    const root = standIn({ ...STAMPS, 'dist/bundle/main.cjs': main })
    const header = () => {
      const text = readFileSync(cacheOf(root)).toString('latin1')
      return JSON.parse(text.slice(text.indexOf(' {') + 1, text.indexOf('\n'))) as Record<string, number>
    }
    const inode = () => statSync(cacheOf(root)).ino
    expect(run(root, 'small', 'headless')).toBe('small')
    const first = { ino: inode(), sizes: header() }
    expect(Object.keys(first.sizes)).toEqual(['headless'])
    expect(run(root, 'small', 'headless')).toBe('small')
    expect(inode()).toBe(first.ino)
    // A run that skips the check (it walks the heap; one run in DSH_CODE_CACHE_CHECK makes it,
    // 4 by default) leaves the cache as it is, even after running new code.
    expect(runWith({ DSH_CODE_CACHE_CHECK: '1000000000' }, root, 'big', 'headless')).toBe('true')
    expect(inode()).toBe(first.ino)
    // More code ran than the cache holds, and the run checked: written again, with the larger size recorded.
    expect(runWith({ DSH_CODE_CACHE_CHECK: '1' }, root, 'big', 'headless')).toBe('true')
    const grown = { ino: inode(), sizes: header() }
    expect(grown.ino).not.toBe(first.ino)
    expect(grown.sizes.headless).toBeGreaterThan(first.sizes.headless + 8192)
    expect(statSync(cacheOf(root)).size).toBeGreaterThan(8192)
    // The cache now holds it: neither that run nor the small one writes again.
    expect(runWith({ DSH_CODE_CACHE_CHECK: '1' }, root, 'big', 'headless')).toBe('true')
    expect(runWith({ DSH_CODE_CACHE_CHECK: '1' }, root, 'small', 'headless')).toBe('small')
    expect(inode()).toBe(grown.ino)
    // A profile the cache has no record of is recorded beside the first.
    expect(run(root, 'small', 'web')).toBe('small')
    expect(Object.keys(header()).sort()).toEqual(['headless', 'web'])
    const both = inode()
    expect(run(root, 'small', 'web')).toBe('small')
    expect(inode()).toBe(both)
  })

  it('the terminal app has a cache of its own (main.cjs.tui.cache), and a run guessed as the wrong kind writes none', () => {
    // argv[0] is what the launcher guesses from (`dsh tui`, or a terminal and no task word); the
    // profile reported is what ran.
    const main = `exports.main = async (argv, report) => { report.profile = argv[1]; process.stdout.write('ran'); return 0 }
`
    const root = standIn({ ...STAMPS, 'dist/bundle/main.cjs': main })
    const tuiCache = join(root, 'dist', 'bundle', 'main.cjs.tui.cache')
    const exists = (file: string) => { try { statSync(file); return true } catch { return false } }
    expect(run(root, 'tui', 'headless')).toBe('ran')
    expect(run(root, 'task', 'tui')).toBe('ran')
    expect([exists(tuiCache), exists(cacheOf(root))]).toEqual([false, false])
    expect(run(root, 'tui', 'tui')).toBe('ran')
    expect([exists(tuiCache), exists(cacheOf(root))]).toEqual([true, false])
    expect(readFileSync(tuiCache).toString('latin1')).toMatch(/^dsh code cache \S+ \{"tui":\d+\}\n/)
    expect(run(root, 'task', 'headless')).toBe('ran')
    expect([exists(tuiCache), exists(cacheOf(root))]).toEqual([true, true])
  })

  it('a profile named like an object property (__proto__, constructor) is recorded as any other', () => {
    const main = `exports.main = async (argv, report) => { report.profile = argv[0]; process.stdout.write('ran'); return 0 }\n`
    const root = standIn({ ...STAMPS, 'dist/bundle/main.cjs': main })
    for (const profile of ['__proto__', 'constructor', '__proto__']) expect(run(root, profile)).toBe('ran')
    const text = readFileSync(cacheOf(root)).toString('latin1')
    const sizes = JSON.parse(text.slice(text.indexOf(' {') + 1, text.indexOf('\n'))) as Record<string, unknown>
    expect(Object.keys(sizes).sort()).toEqual(['__proto__', 'constructor'])
    for (const bytes of Object.values(sizes)) expect(bytes).toEqual(expect.any(Number))
  })

  it('a cache header with sizes that are not a record (hand-edited, truncated) is read as no record: the run writes a fresh one', () => {
    const root = standIn({ ...STAMPS, 'dist/bundle/main.cjs': MAIN_CJS, ...AWAITS })
    expect(run(root, 'go')).toBe('cjs go 42 true true a/b')
    const stored = readFileSync(cacheOf(root))
    const end = stored.indexOf(10)
    writeFileSync(cacheOf(root), Buffer.concat([Buffer.from('dsh code cache 2026-01-01T00:00:00.000Z {"":"many"'), stored.subarray(end)]))
    const before = statSync(cacheOf(root)).ino
    expect(run(root, 'go')).toBe('cjs go 42 true true a/b')
    expect(statSync(cacheOf(root)).ino).not.toBe(before)
    expect(readFileSync(cacheOf(root)).toString('latin1')).toMatch(/^dsh code cache 2026-01-01T00:00:00.000Z \{"":\d+\}\n/)
  })

  it('output larger than a pipe holds reaches a reader in full before dsh exits (process.exit dropped what the pipe had not taken)', async () => {
    // 300 KB to a pipe: the kernel takes 64 KB at a time, Node queues the rest, and exiting at once
    // lost it (`dsh sessions | less` showed ~960 of 1,000 sessions).
    const big = `export async function main(argv) { process.stdout.write('x'.repeat(300000) + '\\n'); process.stderr.write('e'.repeat(200000) + '\\n'); return 3 }\n`
    const root = standIn({ 'dist/cli/main.js': big })
    const child = spawn(process.execPath, [join(root, 'bin', 'dsh.js'), 'sessions'], { stdio: ['ignore', 'pipe', 'pipe'] })
    const sizes = { out: 0, err: 0 }
    child.stdout.on('data', (chunk: Buffer) => { sizes.out += chunk.length })
    child.stderr.on('data', (chunk: Buffer) => { sizes.err += chunk.length })
    const code = await new Promise(resolve => child.on('close', resolve))
    expect({ code, ...sizes }).toEqual({ code: 3, out: 300001, err: 200001 })
  })

  it('a reader that goes away before the output is all out ends dsh quietly with the code it had, not with an EPIPE stack', async () => {
    const big = `export async function main(argv) { process.stdout.write('x'.repeat(300000) + '\\n'); return 0 }\n`
    const root = standIn({ 'dist/cli/main.js': big })
    const child = spawn(process.execPath, [join(root, 'bin', 'dsh.js'), 'sessions'], { stdio: ['ignore', 'pipe', 'pipe'] })
    let err = ''
    child.stderr.on('data', (chunk: Buffer) => { err += chunk.toString() })
    // Like `| head -c 10`: read a little, then close the pipe.
    child.stdout.once('data', () => child.stdout.destroy())
    const code = await new Promise(resolve => child.on('close', resolve))
    expect({ code, err }).toEqual({ code: 0, err: '' })
  })

  it('the real build wrote main.cjs, with every dynamic import routed through __dshImport', async () => {
    // The test set-up builds dist/ and the bundle; a CommonJS build that failed (a new use of
    // import.meta, top-level await) would leave every run on the slower ESM chunks unnoticed.
    const bundle = join(import.meta.dirname, '..', '..', 'dist', 'bundle', 'main.cjs')
    const source = readFileSync(bundle, 'utf8')
    await lexerReady
    const [imports] = lexModule(source)
    expect(imports.filter(entry => entry.d > -1).map(entry => source.slice(entry.ss, entry.se))).toEqual([])
    expect(source).toContain('__dshImport(')
    // Written as the function the launcher calls, so it compiles the string as read (no copy).
    expect(source.startsWith('(function (exports, require, module, __filename, __dirname, __dshImport, __dshModuleUrl) {')).toBe(true)
    expect(source.endsWith('\n})')).toBe(true)
    // ASCII only, so bin/dsh.js reads it as Latin-1 (esbuild keeps some comments as written).
    expect(isAscii(readFileSync(bundle))).toBe(true)
  })

  it('the real build hands Cordis\' functions through its name helper: no defineProperty per closure it makes', () => {
    // Cordis ships built with keepNames: each proxy handler, waterfall hop and effect collector it
    // makes at run time went through a `__name` that redefined the closure's `name`. The bundle
    // makes that helper the identity (scripts/bundle.mjs, docs/decisions.md).
    const source = readFileSync(join(import.meta.dirname, '..', '..', 'dist', 'bundle', 'main.cjs'), 'utf8')
    const helper = /\b__name=(\w+)=>\1;/.exec(source)
    expect(helper?.[0]).toBeDefined()
    expect(source).not.toMatch(/\b__name=\(\w+,value\)=>__defProp\w*\(/)
    // The helper does no more than hand its argument back.
    const identity = new Function(`var ${helper![0]} return __name`)() as (f: unknown, name: string) => unknown
    const closure = () => 1
    expect(identity(closure, 'renamed')).toBe(closure)
    expect(Object.getOwnPropertyDescriptor(closure, 'name')?.value).toBe('closure')
  })

  it('a main.cjs with other characters than ASCII is read as UTF-8, not as Latin-1', () => {
    const root = standIn({ ...STAMPS, 'dist/bundle/main.cjs': MAIN_CJS.replace("join('a', 'b')", "'\u00b5s \u2713'"), ...AWAITS })
    expect(run(root, 'ask')).toBe('cjs ask 42 true true \u00b5s \u2713')
  })

  it('a main.cjs written as the launcher\'s function runs as it is, with the same names', () => {
    const wrapped = `(function (exports, require, module, __filename, __dirname, __dshImport, __dshModuleUrl) {${MAIN_CJS}\n})`
    const root = standIn({ ...STAMPS, 'dist/bundle/main.cjs': wrapped, ...AWAITS })
    expect(run(root, 'go')).toBe('cjs go 42 true true a/b')
    expect(run(root, 'go')).toBe('cjs go 42 true true a/b')
  })

  it('the launcher is CommonJS, and a run from the code cache gets Node\'s own modules from require(), without the ES module loader', () => {
    // An ES module entry, or an import() of node:v8, starts Node's ES module loader (~7 ms).
    const main = `exports.main = async argv => {
  const v8 = await __dshImport('node:v8')
  const path = await __dshImport('node:path')
  const shape = [v8.default === require('node:v8'), typeof v8.setFlagsFromString, path.join === require('node:path').join, path.default.sep, Object.prototype.toString.call(path)]
  const loader = process.moduleLoadList.some(name => name.includes('internal/modules/esm/module_job'))
  process.stdout.write([...shape, loader].join(' '))
  return 0
}
`
    const root = standIn({ ...STAMPS, 'dist/bundle/main.cjs': main })
    expect(run(root, 'go')).toBe('true function true / [object Module] false')
    expect(readFileSync(join(root, 'bin', 'package.json'), 'utf8')).toContain('"commonjs"')
  })

  it('V8 flags: a cache written after a run set the long-run flags is taken by the next run, which sets none', () => {
    // The profile runner's LONG_RUN_FLAGS, as they are: the launcher sets them back before it writes
    // the cache, or the cache would be refused by every run under Node's defaults (a flag added
    // there without its reset in bin/dsh.js fails here).
    const main = `exports.main = async argv => {
  if (argv[0] === 'long') for (const flag of ${JSON.stringify(LONG_RUN_FLAGS)}) require('node:v8').setFlagsFromString(flag)
  process.stdout.write(argv[0])
  return 0
}
`
    const root = standIn({ ...STAMPS, 'dist/bundle/main.cjs': main })
    expect(run(root, 'long')).toBe('long')
    const written = statSync(cacheOf(root)).ino
    expect(runWith({ DSH_CODE_CACHE_CHECK: '1' }, root, 'short')).toBe('short')
    // Refused, it would have been written again (a new file).
    expect(statSync(cacheOf(root)).ino).toBe(written)
  })

  it('V8 flags: the first fetch sets --liftoff-only, and such a run writes no code cache (that flag cannot be set back)', async () => {
    const server = createServer((request, response) => response.end('fetched'))
    await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`
      const main = `exports.main = async argv => {
  const v8 = require('node:v8')
  const set = v8.setFlagsFromString
  const flags = []
  v8.setFlagsFromString = flag => { flags.push(flag); return set(flag) }
  const before = fetch
  const text = argv[0] === 'fetch' ? await (await fetch(${JSON.stringify(url)})).text() : 'none'
  process.stdout.write([text, before !== fetch, ...flags].join(' '))
  return 0
}
`
      const root = standIn({ ...STAMPS, 'dist/bundle/main.cjs': main })
      // A run that fetched: its answer, the flag set before, and the launcher's hook gone after.
      expect(await runAsync(root, 'fetch')).toBe('fetched true --liftoff-only')
      expect(() => statSync(cacheOf(root))).toThrow()
      expect(await runAsync(root, 'plain')).toBe('none false')
      const written = statSync(cacheOf(root)).ino
      expect(await runAsync(root, 'fetch')).toBe('fetched true --liftoff-only')
      expect(statSync(cacheOf(root)).ino).toBe(written)
    } finally {
      server.close()
    }
  })

  it('the terminal app\'s packages come from dist/bundle/tui-vendor.mjs when there is one, all of them once the first is asked for; from node_modules when not', () => {
    // ink first, as the app imports it; then React by import() and by the static require() of its
    // components: all three the file's, so the app renders with the React ink was bundled with.
    const main = `exports.main = async argv => {
  const ink = await __dshImport('ink')
  const react = await __dshImport('react')
  const seen = [ink.from, react.from, require('react') === react, require('react/jsx-runtime').from, require('ink') === ink]
  process.stdout.write(seen.join(' '))
  return 0
}
`
    const vendor = `const pkg = from => Object.freeze({ from, [Symbol.toStringTag]: 'Module' })
export const packages = { ink: pkg('vendor'), react: pkg('vendor'), 'react/jsx-runtime': pkg('vendor') }
`
    const modules = (from: string) => ({
      'node_modules/ink/package.json': '{"type":"module","exports":"./index.js"}', 'node_modules/ink/index.js': `export const from = '${from}'\n`,
      'node_modules/react/package.json': '{"type":"module","exports":{".":"./index.js","./jsx-runtime":"./jsx.js"}}',
      'node_modules/react/index.js': `export const from = '${from}'\n`, 'node_modules/react/jsx.js': `export const from = '${from}'\n`,
    })
    const withVendor = standIn({ ...STAMPS, 'dist/bundle/main.cjs': main, 'dist/bundle/tui-vendor.mjs': vendor, ...modules('node_modules') })
    expect(run(withVendor, 'tui')).toBe('vendor vendor true vendor true')
    const without = standIn({ ...STAMPS, 'dist/bundle/main.cjs': main, ...modules('node_modules') })
    expect(run(without, 'tui')).toBe('node_modules node_modules true node_modules true')
    // A file that does not load (Yoga's WebAssembly missing beside it): said, and node_modules serve.
    const broken = standIn({ ...STAMPS, 'dist/bundle/main.cjs': main, 'dist/bundle/tui-vendor.mjs': `throw new Error('yoga.wasm is missing')\n`, ...modules('node_modules') })
    const result = spawnSync(process.execPath, [join(broken, 'bin', 'dsh.js'), 'tui'], { encoding: 'utf8' })
    expect(result.stdout).toBe('node_modules node_modules true node_modules true')
    expect(result.stderr).toContain('dist/bundle/tui-vendor.mjs did not load (yoga.wasm is missing)')
  })

  it('the real build wrote tui-vendor.mjs: ink renders with its React and Yoga, without fetch (Yoga\'s WebAssembly read from yoga.wasm)', async () => {
    const script = `delete globalThis.fetch
const { packages } = await import(${JSON.stringify(join(import.meta.dirname, '..', '..', 'dist', 'bundle', 'tui-vendor.mjs'))})
const { PassThrough } = await import('node:stream')
const { render, Box, Text } = packages.ink
const { createElement: h } = packages.react
const out = new PassThrough(); out.columns = 30; out.rows = 5; out.isTTY = false
let text = ''; out.on('data', chunk => { text += chunk })
const app = render(h(Box, { borderStyle: 'round', width: 12 }, h(Text, null, 'hi · there')), { stdout: out, debug: true, patchConsole: false })
app.unmount()
const names = Object.keys(packages).sort().join(',')
const tools = [typeof packages['react/jsx-runtime'].jsx, typeof packages.emphasize.createEmphasize, typeof packages.emphasize.common, typeof packages.marked.marked, typeof packages['ansi-escapes'].default]
process.stdout.write(JSON.stringify({ names, tools, box: text.includes('\u256d') && text.includes('hi \u00b7 there') }))
`
    const output = execFileSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' })
    expect(JSON.parse(output)).toEqual({
      names: 'ansi-escapes,emphasize,ink,marked,react,react/jsx-runtime',
      tools: ['function', 'function', 'object', 'function', 'object'],
      box: true,
    })
  })

  it('node:fs/promises is loaded at its first use: required at start, the module is not loaded until then, and then it works as itself', () => {
    const main = `const fsp = require('node:fs/promises')
const again = require('node:fs/promises')
const loaded = () => process.moduleLoadList.includes('NativeModule fs/promises')
exports.main = async argv => {
  const before = loaded()
  const text = await fsp.readFile(__filename, 'utf8')
  const shape = [fsp === again, 'readFile' in fsp, Object.keys(fsp).includes('writeFile'), typeof fsp.constants.R_OK, text.includes('moduleLoadList')]
  process.stdout.write([before, loaded(), ...shape].join(' '))
  return 0
}
`
    const root = standIn({ ...STAMPS, 'dist/bundle/main.cjs': main })
    expect(run(root, 'go')).toBe('false true true true true number true')
  })
})
