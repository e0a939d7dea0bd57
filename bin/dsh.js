#!/usr/bin/env node
// Thin launcher: the compiled CLI lives in dist/ (built by `npm ci` through the prepare script).
import { setFlagsFromString } from 'node:v8'
import { main } from '../dist/cli/main.js'

// fetch (the web_fetch tool; model requests use node:http) parses HTTP with a WebAssembly module
// (llhttp). V8's background optimising compile of it holds process exit back by ~60-100 ms; the
// baseline compiler is plenty. Set before the first fetch compiles the module (docs/benchmarks.md).
setFlagsFromString('--liftoff-only')
// The young generation keeps its initial size instead of growing to 16 MB semi-spaces while
// objects survive (a resumed log is 100k surviving objects): peak RSS of a resumed 100k-event
// session ~128 -> ~95 MB, with no measurable cost per step. Read by V8 at each growth decision,
// so setting it here works (unlike --max-semi-space-size, fixed when the heap is set up).
setFlagsFromString('--semi-space-growth-factor=1')

process.exit(await main(process.argv.slice(2)))
