// Bundles the launcher's code (dist/cli/main.js and every module it imports, lazily or not)
// into dist/bundle/ with esbuild: ESM, split at each dynamic import so lazily loaded plugins stay
// lazy. A start-up then reads, resolves and links a few chunks instead of ~130 modules
// (docs/benchmarks.md, "Start-up"). npm packages stay external (native ones such as
// better-sqlite3 and pg, and one copy of Cordis for out-of-tree plugins too).
//
// Run after tsc and after dist/.buildstamp is written: the bundle records that stamp, and
// bin/dsh.js uses the bundle only while the two match (a later tsc-only rebuild makes it fall
// back to dist/). Without esbuild installed it leaves dist/ alone and dsh runs from dist/.
// Usage: node scripts/bundle.mjs [package root]
import { readFileSync, rmSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = process.argv[2] ?? join(dirname(fileURLToPath(import.meta.url)), '..')
const outdir = join(root, 'dist', 'bundle')

let esbuild
try {
  esbuild = await import('esbuild')
} catch {
  process.stderr.write('scripts/bundle.mjs: esbuild is not installed; dsh runs from dist/ unbundled\n')
  process.exit(0)
}

const stamp = readFileSync(join(root, 'dist', '.buildstamp'), 'utf8')
rmSync(outdir, { recursive: true, force: true })
await esbuild.build({
  absWorkingDir: root,
  entryPoints: { main: 'dist/cli/main.js' },
  outdir,
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  packages: 'external',
  // No keepNames: it would add a defineProperty call per function at load. esbuild renames only
  // functions whose names collide across modules (never a class: plugin and error names hold);
  // a stack frame may then read `text2` for `text`.
  // Maps chunk lines back to dist/ modules under `node --enable-source-maps`; costs nothing otherwise.
  sourcemap: 'linked',
  chunkNames: 'chunk-[hash]',
  logLevel: 'warning',
})
// Last, so an interrupted bundle is never taken for a fresh one.
writeFileSync(join(outdir, '.buildstamp'), stamp)
