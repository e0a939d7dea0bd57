#!/usr/bin/env node
// Thin launcher: the compiled CLI lives in dist/ (built by `npm ci` through the prepare script).
import { main } from '../dist/cli/main.js'

process.exit(await main(process.argv.slice(2)))
