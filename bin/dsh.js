#!/usr/bin/env node
// Thin launcher: the compiled CLI lives in dist/ (built by `npm ci` through the prepare script).
import { setFlagsFromString } from 'node:v8'
import { main } from '../dist/cli/main.js'

// fetch (the web_fetch tool; model requests use node:http) parses HTTP with a WebAssembly module
// (llhttp). V8's background optimising compile of it holds process exit back by ~60-100 ms; the
// baseline compiler is plenty. Set before the first fetch compiles the module (docs/benchmarks.md).
setFlagsFromString('--liftoff-only')

process.exit(await main(process.argv.slice(2)))
