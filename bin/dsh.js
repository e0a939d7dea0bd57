#!/usr/bin/env node
// Thin launcher: the compiled CLI lives in dist/ (built by `npm ci` through the prepare script).
// `npm run build` also bundles it into dist/bundle/ (scripts/bundle.mjs): a few chunks load much
// faster than ~130 modules. The bundle is used while it was made from the current dist/ (its
// copy of dist/.buildstamp matches); otherwise, and when there is none, dsh runs from dist/.
import { readFileSync } from 'node:fs'

function entry() {
  try {
    const stamp = readFileSync(new URL('../dist/.buildstamp', import.meta.url), 'utf8')
    if (readFileSync(new URL('../dist/bundle/.buildstamp', import.meta.url), 'utf8') === stamp) return '../dist/bundle/main.js'
  } catch {
    // No stamp or no bundle: dist/ as tsc wrote it.
  }
  return '../dist/cli/main.js'
}

const { main } = await import(entry())
const argv = process.argv.slice(2)
if (!['--version', '-V', '--help', '-h', 'sessions'].includes(argv[0])) {
  // Tuning for runs that start the agent; the commands above finish before it would matter
  // and skip loading node:v8.
  const { setFlagsFromString } = await import('node:v8')
  // fetch (the web_fetch tool; model requests use node:http) parses HTTP with a WebAssembly module
  // (llhttp). V8's background optimising compile of it holds process exit back by ~60-100 ms; the
  // baseline compiler is plenty. Set before the first fetch compiles the module (docs/benchmarks.md).
  setFlagsFromString('--liftoff-only')
  // The young generation's growth (--semi-space-growth-factor) is set by the profile runner, which
  // knows whether this run loads a stored session (src/cli/run.ts, fixYoungGeneration).
}

process.exit(await main(argv))
