#!/usr/bin/env node
// Thin launcher: the compiled CLI lives in dist/ (built by `npm ci` through the prepare script).
// `npm run build` also bundles it (scripts/bundle.mjs) into dist/bundle/: ESM chunks, and the
// same program as one CommonJS file, main.cjs, run here through node:vm with a V8 code cache
// beside it (docs/decisions.md, "The bundle runs from a V8 code cache"). The bundle is used while it was made from the
// current dist/ (its copy of dist/.buildstamp matches); otherwise, and when there is none, dsh
// runs from dist/ as tsc wrote it.
import { isAscii } from 'node:buffer'
import { accessSync, constants, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs'

const argv = process.argv.slice(2)
// These finish before a code cache would pay for itself; they load a few small ESM chunks.
const quick = ['--version', '-V', '--help', '-h'].includes(argv[0])
/**
 * Which code cache a run uses: `dsh sessions ...` has one of its own. A cache deserialises every
 * function it holds, and the agent runs' cache holds ~1 MB of code a listing never runs (through
 * that cache a listing was slower than compiling its ESM chunks; through its own, faster).
 */
const kind = argv[0] === 'sessions' ? 'sessions' : 'agent'

/** The build stamp when the bundle was made from the current dist/, else undefined. */
function bundled() {
  try {
    const stamp = readFileSync(new URL('../dist/.buildstamp', import.meta.url), 'utf8')
    return readFileSync(new URL('../dist/bundle/.buildstamp', import.meta.url), 'utf8') === stamp ? stamp : undefined
  } catch {
    return undefined
  }
}

async function tune() {
  const v8 = await import('node:v8')
  // fetch (the web_fetch tool; model requests use node:http) parses HTTP with a WebAssembly module
  // (llhttp). V8's background optimising compile of it holds process exit back by ~60-100 ms; the
  // baseline compiler is plenty. Set before the first fetch compiles the module (docs/benchmarks.md),
  // and before the code-cached bundle compiles: V8 takes a cache only under the flags it was made with.
  v8.setFlagsFromString('--liftoff-only')
  // Bytecode a run did not use stays in memory (~1 MB at most) rather than being flushed after a
  // few major GCs: a cache written again at the end of a long run then still holds it.
  v8.setFlagsFromString('--no-flush-bytecode')
  // The young generation's growth (--semi-space-growth-factor) is set by the profile runner, which
  // knows whether this run loads a stored session (src/cli/run.ts, fixYoungGeneration).
  return v8
}

/**
 * A run writes the cache again when it ends with at least this much more bytecode than the
 * largest run of its profile so far: it ran code the cache did not hold (docs/decisions.md).
 */
const GROW_BYTES = 8192
/** Profiles whose bytecode size a cache records (custom profile files count; the rest start over). */
const MAX_PROFILES = 16
/**
 * A run of a profile the cache has a record of counts its bytecode one time in this many
 * (`DSH_CODE_CACHE_CHECK`, default 4): the count walks the heap, ~4 ms at the end of a one-answer
 * run. A cache still grows to what runs use, a few runs later (docs/decisions.md).
 */
const CHECK_ONE_IN = Math.max(1, Number(process.env.DSH_CODE_CACHE_CHECK) || 4)

/** The bytecode size per profile recorded after a cache's header line, or none. */
function recordedSizes(text) {
  try {
    const parsed = JSON.parse(text)
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) return {}
    return Object.fromEntries(Object.entries(parsed).filter(([, bytes]) => Number.isSafeInteger(bytes) && bytes > 0))
  } catch {
    return {}
  }
}

/**
 * dist/bundle/main.cjs compiled with the code cache main.cjs.cache (main.cjs.sessions.cache for
 * `dsh sessions`, see `kind`). The cache's first line is
 * `dsh code cache <stamp> <sizes>`: the build stamp it was made under (V8 checks a cache against
 * the source's length only, so a cache left from another build is never handed to it) and, per
 * profile, the most bytecode a run of it ended with. A run writes the cache when it found none,
 * when V8 refused it (another Node, other flags), and when it ran code the cache did not hold, so
 * the cache comes to hold what runs use (a first run that only answered a question leaves the
 * tools' code out). `DSH_CODE_CACHE=0` runs the ESM chunks instead. Needs require() of ES modules
 * (Node 20.19+): the bundle requires Cordis.
 */
async function codeCached(stamp, v8) {
  // v8 is undefined for a run that set no V8 flags (`dsh sessions`): node:v8 (~3 ms to load) is
  // then imported only if the run's end has a cache to check or write.
  if (process.env.DSH_CODE_CACHE === '0' || process.features.require_module !== true) return undefined
  const file = new URL('../dist/bundle/main.cjs', import.meta.url)
  let source
  try {
    const bytes = readFileSync(file)
    // ASCII (scripts/bundle.mjs escapes the rest): read as Latin-1, no UTF-8 decoding.
    source = isAscii(bytes) ? bytes.latin1Slice() : bytes.toString('utf8')
  } catch {
    return undefined
  }
  const cacheFile = new URL(kind === 'sessions' ? '../dist/bundle/main.cjs.sessions.cache' : '../dist/bundle/main.cjs.cache', import.meta.url)
  const header = `dsh code cache ${stamp.trim()}`
  let cachedData
  let sizes = {}
  try {
    const stored = readFileSync(cacheFile)
    const end = stored.subarray(0, 4096).indexOf(10)
    const line = end < 0 ? '' : stored.toString('utf8', 0, end)
    if (line === header || line.startsWith(`${header} `)) {
      cachedData = stored.subarray(end + 1)
      sizes = recordedSizes(line.slice(header.length + 1))
    }
  } catch {
    // None yet: this run makes it.
  }
  const [{ Script }, { createRequire }, { fileURLToPath }] = await Promise.all([import('node:vm'), import('node:module'), import('node:url')])
  const filename = fileURLToPath(file)
  // The source's first line stays line 1 (stack traces and the source map line up).
  const script = new Script(`(function (exports, require, module, __filename, __dirname, __dshImport, __dshModuleUrl) {${source}\n})`, { filename, cachedData })
  // Only whether there was one is needed from here on: the buffer (~0.7 MB) is let go.
  const hadCache = cachedData !== undefined
  cachedData = undefined
  const load = createRequire(filename)
  // Packages the bundle imported dynamically (as ink: top-level await, which require() refuses)
  // are handed to its later static imports of them.
  const imported = new Map()
  const dshImport = async specifier => {
    const namespace = await import(specifier)
    imported.set(specifier, namespace)
    return namespace
  }
  const module = { exports: {} }
  script.runInThisContext()(module.exports, id => imported.get(id) ?? load(id), module, filename, fileURLToPath(new URL('.', file)), dshImport, file.href)
  /** After the run: writes the cache if it is missing, refused, or short of what this run compiled. */
  const save = async (profile = '') => {
    const accepted = hadCache && !script.cachedDataRejected
    const known = accepted && Object.hasOwn(sizes, profile) ? sizes[profile] : undefined
    if (known !== undefined && Math.random() * CHECK_ONE_IN >= 1) return
    v8 ??= await import('node:v8')
    const bytes = v8.getHeapCodeStatistics().bytecode_and_metadata_size
    if (known !== undefined && bytes < known + GROW_BYTES) return
    // A refused cache's sizes describe code V8 did not take: the new cache starts its own record.
    const record = Object.assign(Object.create(null), accepted && Object.keys(sizes).length < MAX_PROFILES ? sizes : {})
    record[profile] = Math.max(bytes, known ?? 0)
    const target = fileURLToPath(cacheFile)
    const temporary = `${target}.${process.pid}`
    try {
      // A read-only install runs without a cache, and does not pay for making one it cannot keep.
      accessSync(fileURLToPath(new URL('.', cacheFile)), constants.W_OK)
      // Back to the flags the cache is read under (the profile runner may have changed this one).
      v8.setFlagsFromString('--semi-space-growth-factor=2')
      writeFileSync(temporary, Buffer.concat([Buffer.from(`${header} ${JSON.stringify(record)}\n`), script.createCachedData()]))
      renameSync(temporary, target)
    } catch {
      // A full disk (or a folder that turned read-only) runs without a cache.
      rmSync(temporary, { force: true })
    }
  }
  return { main: module.exports.main, save }
}

let code
const stamp = bundled()
if (stamp !== undefined && !quick) {
  // A listing sets no V8 flags: its cache is made and read under Node's defaults.
  const v8 = kind === 'sessions' ? undefined : await tune()
  const cached = await codeCached(stamp, v8)
  if (cached !== undefined) {
    const report = {}
    code = await cached.main(argv, report)
    await cached.save(report.profile)
  } else code = await (await import('../dist/bundle/main.js')).main(argv)
} else {
  const { main } = await import(stamp !== undefined ? '../dist/bundle/main.js' : '../dist/cli/main.js')
  if (!quick) await tune()
  code = await main(argv)
}

/**
 * Resolves once everything written to `stream` so far has left the process. A pipe takes 64 KB
 * at a time and Node queues the rest, which process.exit would drop (`dsh sessions | less` lost
 * the sessions past the first 64 KB). A reader that went away (EPIPE, as after `| head`) ends
 * the wait: nothing more can reach it, and what that means for the exit code is the app's to say
 * (the headless app exits 141).
 */
function flushed(stream) {
  if (stream.destroyed || stream.writableLength === 0) return undefined
  return new Promise(resolve => {
    stream.once('error', resolve)
    stream.write('', resolve)
  })
}

await Promise.all([flushed(process.stdout), flushed(process.stderr)])
if (code === 129 && [process.stdin, process.stdout, process.stderr].some(stream => stream.isTTY)) {
  // A hangup (exit 129): the terminal is most likely gone. At exit Node puts each terminal on
  // stdio back in its start-up mode, and Node 20 aborts when that fails (EIO on a hung-up
  // terminal): a native stack trace, SIGABRT, maybe a core file. Everything is stored by now, so
  // dsh ends as a hangup ends a program, by SIGHUP itself (a shell reads 129 either way), and
  // that step is skipped.
  process.removeAllListeners('SIGHUP')
  process.kill(process.pid, 'SIGHUP')
}
process.exit(code)
