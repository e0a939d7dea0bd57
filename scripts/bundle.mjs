// Bundles the launcher's code (dist/cli/main.js and every module it imports, lazily or not)
// into dist/bundle/ with esbuild: ESM, split at each dynamic import so lazily loaded plugins stay
// lazy. A start-up then reads, resolves and links a few chunks instead of ~130 modules
// (docs/benchmarks.md, "Start-up"). npm packages stay external (native ones such as
// better-sqlite3 and pg, and in these chunks one copy of Cordis for out-of-tree plugins too).
//
// Run after tsc and after dist/.buildstamp is written: the bundle records that stamp, and
// bin/dsh.js uses the bundle only while the two match (a later tsc-only rebuild makes it fall
// back to dist/). Without esbuild installed it leaves dist/ alone and dsh runs from dist/.
//
// It also writes dist/bundle/main.cjs: the same program as one CommonJS file, which bin/dsh.js
// compiles through node:vm with a V8 code cache (docs/decisions.md, "The bundle runs from a V8
// code cache"): no module graph to resolve and link, and no parse. Dynamic imports of packages,
// node: builtins and computed paths cannot run inside a vm script whose code came from a cache,
// so they are rewritten to `__dshImport(...)`, a function bin/dsh.js passes in (its `import()`).
// Relative dynamic imports are bundled and stay lazy (esbuild's module initialisers).
// Usage: node scripts/bundle.mjs [package root]
import { readFile } from 'node:fs/promises'
import { readFileSync, rmSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

/** The function expression bin/dsh.js compiles main.cjs as (it checks for this exact start). */
const WRAPPER = '(function (exports, require, module, __filename, __dirname, __dshImport, __dshModuleUrl) {'

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

let lexer
try {
  lexer = await import('es-module-lexer')
  await lexer.init
} catch {
  process.stderr.write('scripts/bundle.mjs: es-module-lexer is not installed; no code-cached bundle (dsh runs from the ESM bundle)\n')
}
if (lexer !== undefined) {
  /** `import(x)` -> `__dshImport(x)` where x is not a relative path (those are bundled). */
  const packageImports = {
    name: 'dsh-package-imports',
    setup(build) {
      build.onLoad({ filter: /\.js$/ }, async args => {
        const source = await readFile(args.path, 'utf8')
        const [imports] = lexer.parse(source, args.path)
        let out = ''
        let at = 0
        for (const entry of imports) {
          if (entry.d < 0 || entry.n?.startsWith('.') === true) continue
          out += source.slice(at, entry.ss) + '__dshImport'
          at = entry.ss + 'import'.length
        }
        return at === 0 ? undefined : { contents: out + source.slice(at), loader: 'js' }
      })
    },
  }
  /**
   * Every package stays external but Cordis and its one runtime dependency: as part of main.cjs
   * they come out of the code cache (a require() of the ES module Cordis cost ~10 ms per run,
   * compiled from source each time). An out-of-tree plugin's own `import 'cordis'` gets the
   * package's instance; Cordis keys what it shares on global symbols (docs/decisions.md).
   */
  const BUNDLED_PACKAGES = new Set(['cordis', 'cosmokit', 'eventsource-parser'])
  /**
   * Cordis is published built with esbuild's keepNames: every closure it makes at run time (proxy
   * handlers, waterfall hops, effect collectors) goes through a `__name` that redefines its `name`
   * with defineProperty. In main.cjs that helper hands the function through (one answer -16 ms;
   * docs/decisions.md, "Cordis' name helper is the identity in the bundle"). A Cordis whose helper
   * reads otherwise gets no main.cjs (the build says why; a launcher test fails), to be looked at.
   */
  const CORDIS_NAME = 'var __name = (target, value) => __defProp(target, "name", { value, configurable: true });'
  const cordisNames = {
    name: 'dsh-cordis-names',
    setup(build) {
      build.onLoad({ filter: /[\\/]cordis[\\/]lib[\\/]index\.js$/ }, async args => {
        const source = await readFile(args.path, 'utf8')
        if (!source.includes(CORDIS_NAME)) throw new Error(`${args.path}: Cordis' __name helper is not as expected`)
        return { contents: source.replace(CORDIS_NAME, 'var __name = (target) => target;'), loader: 'js' }
      })
    },
  }
  const inBundle = {
    name: 'dsh-in-bundle',
    setup(build) {
      build.onResolve({ filter: /^[^./]/ }, args => {
        const name = args.path.startsWith('@') ? args.path.split('/').slice(0, 2).join('/') : args.path.split('/')[0]
        return BUNDLED_PACKAGES.has(name) ? undefined : { path: args.path, external: true }
      })
    },
  }
  // Any other use of import.meta would be empty in CommonJS, and top-level await cannot be
  // written as CommonJS at all: refuse rather than ship a broken file (dsh runs the ESM chunks).
  let problem
  try {
    const result = await esbuild.build({
      absWorkingDir: root,
      entryPoints: { main: 'dist/cli/main.js' },
      outfile: join(outdir, 'main.cjs'),
      bundle: true,
      format: 'cjs',
      platform: 'node',
      target: 'node20',
      // bin/dsh.js passes the file's URL in; paths relative to it resolve as from dist/cli/.
      define: { 'import.meta.url': '__dshModuleUrl' },
      plugins: [inBundle, cordisNames, packageImports],
      // Whitespace and comments only (names stay, for stack traces): a quarter fewer bytes to read,
      // check and copy into a string at every start (one answer -2 ms; docs/benchmarks.md).
      minifyWhitespace: true,
      sourcemap: 'linked',
      logLevel: 'warning',
    })
    if (result.warnings.length > 0) problem = 'warnings'
    else problem = finishCommonJs(join(outdir, 'main.cjs'))
  } catch (error) {
    problem = error.message.split('\n')[0]
  }
  if (problem !== undefined) {
    rmSync(join(outdir, 'main.cjs'), { force: true })
    rmSync(join(outdir, 'main.cjs.map'), { force: true })
    process.stderr.write(`scripts/bundle.mjs: no CommonJS bundle (${problem}); dsh runs from the ESM chunks\n`)
  }
}
/**
 * Fixes to the CommonJS bundle. Returns a problem when esbuild's output is not as expected.
 *
 * In the CommonJS bundle a package import is `__toESM(require(x), 1)`, and for an ES-only package
 * require() gives its module namespace. esbuild's helper then wraps that namespace in one more
 * object whose `default` is the namespace itself, so a default import (`import stringWidth from
 * 'string-width'`) gets an object instead of the function, while the ESM chunks get the
 * function. A namespace already is what the helper builds (`default` and the named exports), so
 * the helper hands it through. The file is then written as the function expression bin/dsh.js
 * calls (WRAPPER).
 */
function finishCommonJs(file) {
  // esbuild writes code in ASCII (its default charset) but keeps some comments as they were: their
  // other characters are escaped too, so bin/dsh.js can read the file as Latin-1 (~10 ms less
  // than decoding 1 MB of UTF-8, and V8 then holds and scans a one-byte string).
  const source = readFileSync(file, 'utf8').replace(/[^\x00-\x7f]/g, c => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`)
  const helper = /var __toESM ?= ?\(mod, ?isNodeMode, ?(\w+)\) ?=> ?\(/
  const found = source.match(helper)
  if (found === null && source.includes('__toESM(')) return 'esbuild\'s __toESM helper changed shape'
  const fixed = found === null ? source : source.replace(helper, `var __toESM=(mod,isNodeMode,$1)=>mod!=null&&mod[Symbol.toStringTag]==="Module"?mod:(`)
  // Written as the function bin/dsh.js calls (its WRAPPER, on line 1 so lines stay as mapped), so
  // the launcher compiles the string it read instead of a ~1 MB concatenation V8 copies flat.
  writeFileSync(file, `${WRAPPER}${fixed}\n})`)
  return undefined
}

/**
 * dist/bundle/tui-vendor.mjs: the terminal app's packages as one ES module (ES, for the top-level
 * awaits of ink's reconciler and Yoga's loader). From node_modules, `import('ink')` alone read and compiled ~580 modules (~420
 * of them es-toolkit's, for one `throttle`) and highlight.js' 190 grammars came with emphasize:
 * ~550 ms before the first frame. bin/dsh.js imports this file at the app's first import of ink
 * or React and hands its `packages` to the bundle's imports of them (docs/decisions.md, "The
 * terminal app's packages are one file"). React and ink must come from one copy, so they are
 * only ever taken from here together. Kept out: ink's devtools (only with DEV=true; they need
 * react-devtools-core, which is not installed). Yoga's WebAssembly is written beside the file and
 * handed to its loader, which otherwise fetch()es the base64 copy it embeds (undici, ~40 ms).
 */
async function tuiVendor() {
  const yogaRoot = join(root, 'node_modules', 'yoga-layout', 'dist')
  const embedded = readFileSync(join(yogaRoot, 'binaries', 'yoga-wasm-base64-esm.js'), 'utf8').match(/data:application\/octet-stream;base64,([A-Za-z0-9+/=]+)/)
  if (embedded === null) return 'yoga-layout no longer embeds its WebAssembly as a base64 data URL'
  writeFileSync(join(outdir, 'yoga.wasm'), Buffer.from(embedded[1], 'base64'))
  const entry = [
    "import * as ink from 'ink'",
    "import * as react from 'react'",
    "import * as jsxRuntime from 'react/jsx-runtime'",
    // Named, not `* as`: a namespace would keep highlight.js' `all` grammars alive.
    "import { common, createEmphasize } from 'emphasize'",
    "import * as marked from 'marked'",
    "import * as ansiEscapes from 'ansi-escapes'",
    // As import() shows a module (tagged Module: the CommonJS bundle's __toESM passes it through).
    "const namespace = exports => Object.freeze(Object.assign(Object.create(null), exports, { [Symbol.toStringTag]: 'Module' }))",
    'export const packages = {',
    "  ink: namespace(ink), react: namespace(react), 'react/jsx-runtime': namespace(jsxRuntime),",
    "  emphasize: namespace({ common, createEmphasize }), marked: namespace(marked),",
    "  'ansi-escapes': namespace(ansiEscapes),",
    '}',
  ].join('\n')
  const vendorParts = {
    name: 'dsh-tui-vendor',
    setup(build) {
      build.onResolve({ filter: /^\.\/devtools\.js$/ }, args => /[\\/]ink[\\/]/.test(args.importer) ? { path: 'ink-devtools', namespace: 'dsh-vendor' } : undefined)
      build.onResolve({ filter: /^yoga-layout$/ }, () => ({ path: 'yoga-layout', namespace: 'dsh-vendor' }))
      // Ink and the packages it measures text with (widest-line, wrap-ansi, cli-truncate) take
      // dsh's displayWidth (src/tui/width.ts), which asks string-width only for text that needs
      // it; that module's own import of string-width stays external, the copy the app uses.
      build.onResolve({ filter: /^string-width$/ }, args => /[\\/]dist[\\/]tui[\\/]width\.js$/.test(args.importer)
        ? { path: 'string-width', external: true }
        : { path: 'string-width', namespace: 'dsh-vendor' })
      build.onLoad({ filter: /.*/, namespace: 'dsh-vendor' }, args => args.path === 'ink-devtools'
        ? { contents: 'export {}', loader: 'js' }
        : args.path === 'string-width'
        ? { contents: "export { displayWidth as default } from './tui/width.js'", resolveDir: join(root, 'dist'), loader: 'js' }
        : {
            resolveDir: join(yogaRoot, 'src'),
            loader: 'js',
            contents: [
              "import { readFileSync } from 'node:fs'",
              "import loadYoga from '../binaries/yoga-wasm-base64-esm.js'",
              "import wrapAssembly from './wrapAssembly.js'",
              "export default wrapAssembly(await loadYoga({ wasmBinary: readFileSync(new URL('./yoga.wasm', import.meta.url)) }))",
              "export * from './generated/YGEnums.js'",
            ].join('\n'),
          })
    },
  }
  const result = await esbuild.build({
    absWorkingDir: root,
    stdin: { contents: entry, resolveDir: root, sourcefile: 'tui-vendor.mjs', loader: 'js' },
    outfile: join(outdir, 'tui-vendor.mjs'),
    bundle: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    // The production builds of React and its reconciler, as an app ships them.
    define: { 'process.env.NODE_ENV': '"production"' },
    // CommonJS packages in an ES module bundle require Node's modules through this.
    banner: { js: "import { createRequire as __dshCreateRequire } from 'node:module'; const require = __dshCreateRequire(import.meta.url);" },
    plugins: [vendorParts],
    minifyWhitespace: true,
    logLevel: 'warning',
  })
  return result.warnings.length > 0 ? 'warnings' : undefined
}

try {
  const problem = await tuiVendor()
  if (problem !== undefined) throw new Error(problem)
} catch (error) {
  rmSync(join(outdir, 'tui-vendor.mjs'), { force: true })
  rmSync(join(outdir, 'yoga.wasm'), { force: true })
  process.stderr.write(`scripts/bundle.mjs: no terminal app bundle (${error.message.split('\n')[0]}); it imports its packages from node_modules\n`)
}

// Last, so an interrupted bundle is never taken for a fresh one.
writeFileSync(join(outdir, '.buildstamp'), stamp)
