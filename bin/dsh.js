#!/usr/bin/env node
// Thin launcher: the compiled CLI lives in dist/ (built by `npm ci` through the prepare script).
// `npm run build` also bundles it (scripts/bundle.mjs) into dist/bundle/: ESM chunks, and the
// same program as one CommonJS file, main.cjs, run here through node:vm with a V8 code cache
// beside it (docs/decisions.md, "The bundle runs from a V8 code cache"). The bundle is used while it was made from the
// current dist/ (its copy of dist/.buildstamp matches); otherwise, and when there is none, dsh
// runs from dist/ as tsc wrote it.
import { readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs'

const argv = process.argv.slice(2)
// These finish before a code cache would pay for itself; they load a few small ESM chunks.
const quick = ['--version', '-V', '--help', '-h', 'sessions'].includes(argv[0])

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
  const { setFlagsFromString } = await import('node:v8')
  // fetch (the web_fetch tool; model requests use node:http) parses HTTP with a WebAssembly module
  // (llhttp). V8's background optimising compile of it holds process exit back by ~60-100 ms; the
  // baseline compiler is plenty. Set before the first fetch compiles the module (docs/benchmarks.md),
  // and before the code-cached bundle compiles: V8 takes a cache only under the flags it was made with.
  setFlagsFromString('--liftoff-only')
  // The young generation's growth (--semi-space-growth-factor) is set by the profile runner, which
  // knows whether this run loads a stored session (src/cli/run.ts, fixYoungGeneration).
  return setFlagsFromString
}

/**
 * dist/bundle/main.cjs compiled with the code cache main.cjs.cache (made by the first run that had
 * none, or whose cache V8 refused: another Node, other flags). The cache starts with the build
 * stamp it was made under: V8 checks a cache against the source's length only, so a cache left
 * from another build is never handed to it. `DSH_CODE_CACHE=0` runs the ESM chunks instead.
 * Needs require() of ES modules (Node 20.19+): the bundle requires Cordis.
 */
async function codeCached(stamp, setFlagsFromString) {
  if (process.env.DSH_CODE_CACHE === '0' || process.features.require_module !== true) return undefined
  const file = new URL('../dist/bundle/main.cjs', import.meta.url)
  let source
  try {
    source = readFileSync(file, 'utf8')
  } catch {
    return undefined
  }
  const cacheFile = new URL('../dist/bundle/main.cjs.cache', import.meta.url)
  const header = Buffer.from(`dsh code cache ${stamp.trim()}\n`)
  let cachedData
  try {
    const stored = readFileSync(cacheFile)
    if (stored.subarray(0, header.length).equals(header)) cachedData = stored.subarray(header.length)
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
  const save = () => {
    if (hadCache && !script.cachedDataRejected) return
    const temporary = fileURLToPath(cacheFile) + `.${process.pid}`
    try {
      // Back to the flags the cache is read under (the profile runner may have changed this one).
      setFlagsFromString('--semi-space-growth-factor=2')
      writeFileSync(temporary, Buffer.concat([header, script.createCachedData()]))
      renameSync(temporary, cacheFile)
    } catch {
      // A read-only install (or a full disk) runs without a cache.
      rmSync(temporary, { force: true })
    }
  }
  return { main: module.exports.main, save }
}

let code
const stamp = bundled()
if (stamp !== undefined && !quick) {
  const setFlagsFromString = await tune()
  const cached = await codeCached(stamp, setFlagsFromString)
  if (cached !== undefined) {
    code = await cached.main(argv)
    cached.save()
  } else code = await (await import('../dist/bundle/main.js')).main(argv)
} else {
  const { main } = await import(stamp !== undefined ? '../dist/bundle/main.js' : '../dist/cli/main.js')
  if (!quick) await tune()
  code = await main(argv)
}
process.exit(code)
