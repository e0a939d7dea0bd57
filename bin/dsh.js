#!/usr/bin/env node
// Thin launcher: the compiled CLI lives in dist/ (built by `npm ci` through the prepare script).
// `npm run build` also bundles it (scripts/bundle.mjs) into dist/bundle/: ESM chunks, and the
// same program as one CommonJS file, main.cjs, run here through node:vm with a V8 code cache
// beside it (docs/decisions.md, "The bundle runs from a V8 code cache"). The bundle is used while it was made from the
// current dist/ (its copy of dist/.buildstamp matches); otherwise, and when there is none, dsh
// runs from dist/ as tsc wrote it.
//
// This file is CommonJS (bin/package.json): Node starts a CommonJS entry without its ES module
// loader, ~7 ms sooner, and a run from the code cache never needs that loader.
'use strict'
const { isAscii } = require('node:buffer')
const { accessSync, constants, readFileSync, renameSync, rmSync, writeFileSync } = require('node:fs')
const { pathToFileURL } = require('node:url')

const here = pathToFileURL(__filename).href
const argv = process.argv.slice(2)
// These finish before a code cache would pay for itself; they load a few small ESM chunks.
const quick = ['--version', '-V', '--help', '-h'].includes(argv[0])
/**
 * Which code cache a run uses: `dsh sessions ...` and the terminal app have one each. A cache
 * deserialises every function it holds: the agent runs' cache holds ~1 MB of code a listing never
 * runs (through that cache a listing was slower than compiling its ESM chunks; through its own,
 * faster), and the terminal app's own code would add ~0.25 MB to every headless run's.
 */
function cacheKind() {
  return argv[0] === 'sessions' ? 'sessions' : terminalApp() ? 'tui' : 'agent'
}

/**
 * Whether this run is most likely the terminal app: `dsh tui`, or a terminal on both ends and no
 * task word (options only; src/cli/main.ts decides for real). A guess that misses costs the run
 * its cache, and then it does not write one (see save below).
 */
function terminalApp() {
  if (argv[0] === 'tui') return true
  if (!argv.every(arg => arg.startsWith('-'))) return false
  const { isatty } = require('node:tty')
  return isatty(0) && isatty(1)
}

/** The cache file of a kind of run. */
const CACHE_FILES = { agent: '../dist/bundle/main.cjs.cache', sessions: '../dist/bundle/main.cjs.sessions.cache', tui: '../dist/bundle/main.cjs.tui.cache' }

/** The build stamp when the bundle was made from the current dist/, else undefined. */
function bundled() {
  try {
    const stamp = readFileSync(new URL('../dist/.buildstamp', here), 'utf8')
    return readFileSync(new URL('../dist/bundle/.buildstamp', here), 'utf8') === stamp ? stamp : undefined
  } catch {
    return undefined
  }
}

/**
 * V8 flags: an agent run starts under Node's defaults. Node's own modules (node:http, node:net,
 * node:child_process...) come with a code cache that V8 takes only under the flags it was made
 * with; a run that set any flag before loading them compiled ~65 of them from source, ~11 ms of a
 * one-answer run (docs/decisions.md, "V8 flags: Node's modules load first"). The profile runner
 * sets its flags (src/cli/run.ts, LONG_RUN_FLAGS); the flag below is set when a fetch starts.
 */
let flagsRestorable = true

/** The function main.cjs is written as (scripts/bundle.mjs): the module's names, as require() passes them, and two of dsh's. */
const WRAPPER = '(function (exports, require, module, __filename, __dirname, __dshImport, __dshModuleUrl) {'

/**
 * fetch (the web_fetch tool, MCP over HTTP, model listings; model requests use node:http) parses
 * HTTP with a WebAssembly module (llhttp), compiled at its first connection. V8's background
 * optimising compile of that module held process exit back by ~60-150 ms; its baseline compiler
 * is plenty. So the first call of fetch sets `--liftoff-only` before Node's fetch loads. That flag
 * cannot be set back (it implies others), so such a run does not write the code cache: a cache
 * is taken only under the flags it was made with.
 */
function liftoffBeforeFetch() {
  const own = Object.getOwnPropertyDescriptor(globalThis, 'fetch')
  if (own === undefined || typeof own.value !== 'function' || !own.writable) return
  const nodeFetch = own.value
  globalThis.fetch = function fetch(input, init) {
    if (globalThis.fetch === fetch) globalThis.fetch = nodeFetch
    if (flagsRestorable) {
      flagsRestorable = false
      require('node:v8').setFlagsFromString('--liftoff-only')
    }
    return nodeFetch(input, init)
  }
}

/** The profile runner's flags (src/cli/run.ts) back at Node's defaults: a cache is made under these. */
function defaultFlags(v8) {
  v8.setFlagsFromString('--semi-space-growth-factor=2')
  v8.setFlagsFromString('--flush-bytecode')
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
 * `dsh sessions`, main.cjs.tui.cache for the terminal app; see `cacheKind`). The cache's first line is
 * `dsh code cache <stamp> <sizes>`: the build stamp it was made under (V8 checks a cache against
 * the source's length only, so a cache left from another build is never handed to it) and, per
 * profile, the most bytecode a run of it ended with. A run writes the cache when it found none,
 * when V8 refused it (another Node, other flags), and when it ran code the cache did not hold, so
 * the cache comes to hold what runs use (a first run that only answered a question leaves the
 * tools' code out). `DSH_CODE_CACHE=0` runs the ESM chunks instead. Needs require() of ES modules
 * (Node 20.19+): the bundle requires Cordis.
 */
async function codeCached(stamp) {
  if (process.env.DSH_CODE_CACHE === '0' || process.features.require_module !== true) return undefined
  const file = new URL('../dist/bundle/main.cjs', here)
  let source
  try {
    const bytes = readFileSync(file)
    // ASCII (scripts/bundle.mjs escapes the rest): read as Latin-1, no UTF-8 decoding. A file
    // that starts with WRAPPER was written by scripts/bundle.mjs, so it is ASCII without the
    // ~1 ms check of every byte; any other is checked.
    const ascii = bytes.latin1Slice(0, WRAPPER.length) === WRAPPER || isAscii(bytes)
    source = ascii ? bytes.latin1Slice() : bytes.toString('utf8')
  } catch {
    return undefined
  }
  const kind = cacheKind()
  const cacheFile = new URL(CACHE_FILES[kind], here)
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
  const { Script } = require('node:vm')
  const { fileURLToPath } = require('node:url')
  const filename = fileURLToPath(file)
  // scripts/bundle.mjs writes main.cjs as this function expression, so V8 compiles the string as
  // read; wrapping it here made a second ~1 MB string to flatten. The wrapper starts line 1, so
  // stack traces and the source map line up either way.
  const wrapped = source.startsWith(WRAPPER) ? source : `${WRAPPER}${source}\n})`
  source = undefined
  const script = new Script(wrapped, { filename, cachedData })
  // Only whether there was one is needed from here on: the buffer (~0.7 MB) is let go.
  const hadCache = cachedData !== undefined
  cachedData = undefined
  // The bundle's packages resolve from the package root's node_modules, as from this file.
  const load = id => LOADED_ON_USE.has(id) ? loadedOnUse(id) : require(id)
  // Packages the bundle imported dynamically (as ink: top-level await, which require() refuses)
  // are handed to its later static imports of them.
  const imported = new Map()
  const dshImport = async specifier => {
    // Node's own modules come from require(), as a namespace would show them: import() would
    // start Node's ES module loader (~7 ms) for what require() returns at once.
    if (specifier.startsWith('node:')) return builtinNamespace(specifier)
    if (imported.has(specifier)) return imported.get(specifier)
    if (SHARED_BY_THE_APP.has(specifier)) {
      const packages = await tuiPackages()
      if (packages !== undefined) {
        for (const id of Object.keys(packages)) imported.set(id, packages[id])
        if (imported.has(specifier)) return imported.get(specifier)
      }
    }
    const namespace = await import(specifier)
    imported.set(specifier, namespace)
    return namespace
  }
  const module = { exports: {} }
  script.runInThisContext()(module.exports, id => imported.get(id) ?? load(id), module, filename, fileURLToPath(new URL('.', file)), dshImport, file.href)
  /** After the run: writes the cache if it is missing, refused, or short of what this run compiled. */
  const save = async (profile = '') => {
    // The terminal app's code goes to its own cache only, and only its code: a run the guess put
    // in the wrong kind writes nothing.
    if ((kind === 'tui') !== (profile === 'tui') && kind !== 'sessions') return
    const accepted = hadCache && !script.cachedDataRejected
    const known = accepted && Object.hasOwn(sizes, profile) ? sizes[profile] : undefined
    if (known !== undefined && Math.random() * CHECK_ONE_IN >= 1) return
    // Flags this run could not set back (liftoffBeforeFetch): a cache made now would be refused.
    if (!flagsRestorable) return
    const v8 = require('node:v8')
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
      // Back to the flags the cache is read under (the profile runner's were set during the run).
      defaultFlags(v8)
      writeFileSync(temporary, Buffer.concat([Buffer.from(`${header} ${JSON.stringify(record)}\n`), script.createCachedData()]))
      renameSync(temporary, target)
    } catch {
      // A full disk (or a folder that turned read-only) runs without a cache.
      rmSync(temporary, { force: true })
    }
  }
  return { main: module.exports.main, save }
}

/**
 * The terminal app's packages are one file, dist/bundle/tui-vendor.mjs (scripts/bundle.mjs):
 * from node_modules, ink alone was ~580 modules and ~550 ms before the first frame. The app's
 * first import of one of these loads the file, and every package it holds is then handed to the
 * bundle's imports of it. They all come from it, never some from node_modules: ink renders with
 * the React it was bundled with, and the app's components must use that one.
 */
const SHARED_BY_THE_APP = new Set(['ink', 'react', 'react/jsx-runtime'])

let vendored
/**
 * The file's `packages` by name, imported once; undefined when the build has none, or one that
 * does not load (said on stderr): the packages then come from node_modules, all of them.
 */
function tuiPackages() {
  vendored ??= import(new URL('../dist/bundle/tui-vendor.mjs', here).href).then(module => module.packages, error => {
    if (error?.code !== 'ERR_MODULE_NOT_FOUND' || !String(error.message).includes('tui-vendor.mjs')) {
      process.stderr.write(`dsh: dist/bundle/tui-vendor.mjs did not load (${String(error?.message ?? error).split('\n')[0]}); the terminal app's packages come from node_modules\n`)
    }
    return undefined
  })
  return vendored
}

/**
 * Node modules the bundle requires as it starts but a run seldom calls. `node:fs/promises` brings
 * readline's interface, fs/dir and the file watchers with it, and a one-answer run calls none of
 * its functions (they read stored sessions, images, workspace files); `node:module` (for
 * `createRequire`: hooks, out-of-tree plugins) starts parts of the ES module loader;
 * `node:stream/consumers` reads whole streams for a few tools. The bundle gets a stand-in that
 * requires the module at its first use: one answer ~11 + ~3 ms and ~2 MB less (docs/decisions.md,
 * "Node modules loaded on first use").
 */
const LOADED_ON_USE = new Set(['node:fs/promises', 'node:module', 'node:stream/consumers'])

const standIns = new Map()

/**
 * The stand-in for `id` (one per module, as require() gives one module): every look at it (a
 * property, `in`, its keys) goes to the module, required then.
 */
function loadedOnUse(id) {
  let standIn = standIns.get(id)
  if (standIn !== undefined) return standIn
  let module
  const real = () => (module ??= require(id))
  standIn = new Proxy(Object.create(null), {
    get: (_, key) => real()[key],
    has: (_, key) => key in real(),
    ownKeys: () => Reflect.ownKeys(real()),
    getOwnPropertyDescriptor: (_, key) => {
      const found = Reflect.getOwnPropertyDescriptor(real(), key)
      return found === undefined ? undefined : { ...found, configurable: true }
    },
    set: (_, key, value) => Reflect.set(real(), key, value),
  })
  standIns.set(id, standIn)
  return standIn
}

/** A Node module as `import()` gives it: its exports by name, and the module as `default`. */
function builtinNamespace(specifier) {
  const exported = require(specifier)
  return Object.freeze(Object.assign(Object.create(null), exported, { default: exported, [Symbol.toStringTag]: 'Module' }))
}

async function run() {
  const stamp = bundled()
  if (quick) return (await import(stamp !== undefined ? '../dist/bundle/main.js' : '../dist/cli/main.js')).main(argv)
  liftoffBeforeFetch()
  if (stamp === undefined) return (await import('../dist/cli/main.js')).main(argv)
  const cached = await codeCached(stamp)
  if (cached === undefined) return (await import('../dist/bundle/main.js')).main(argv)
  const report = {}
  const code = await cached.main(argv, report)
  await cached.save(report.profile)
  return code
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

async function finish(code) {
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
}

run().then(finish)
