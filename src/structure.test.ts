/**
 * The top-level folders of src/ (one per seam) import each other in one direction only: policy
 * plugins live above the seams they join, interfaces below their users. This test reads every
 * non-test module's imports (static, dynamic and re-exports, via the TypeScript pre-processor)
 * and fails naming each cycle between folders. No source file (src/ and web/src/, tests aside)
 * holds more than MAX_LINES lines: a file past that holds more than one idea and is split along its seams.
 */
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join, relative, resolve, sep } from 'node:path'
import { fileURLToPath } from 'node:url'
import ts from 'typescript'
import { describe, expect, it } from 'vitest'

const SRC = dirname(fileURLToPath(import.meta.url))

/** Folder graph: folder -> folder -> one example import ("file -> specifier"). */
type FolderGraph = Map<string, Map<string, string>>

function sourceFiles(dir: string): string[] {
  const out: string[] = []
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) out.push(...sourceFiles(path))
    else if (/\.tsx?$/.test(entry.name) && !/\.(test|spec|conformance)\.tsx?$/.test(entry.name) && !entry.name.endsWith('.d.ts')) out.push(path)
  }
  return out
}

/** Relative imports whose module is not in the tree (a side-effect import of a moved file type-checks). */
const missing: string[] = []

function folderGraph(root: string): FolderGraph {
  const graph: FolderGraph = new Map()
  for (const file of sourceFiles(root)) {
    const from = relative(root, file).split(sep)
    if (from.length < 2) continue // a module at the root of src/ belongs to no folder
    const info = ts.preProcessFile(readFileSync(file, 'utf8'), true, true)
    for (const { fileName: specifier } of info.importedFiles) {
      if (!specifier.startsWith('.')) continue
      const target = resolve(dirname(file), specifier)
      if (!existsSync(target.replace(/\.js$/, '.ts')) && !existsSync(target.replace(/\.js$/, '.tsx')) && !existsSync(target)) missing.push(`${relative(root, file)} -> ${specifier}`)
      const to = relative(root, resolve(dirname(file), specifier)).split(sep)
      if (to[0] === '..' || to.length < 2 || to[0] === from[0]) continue
      const edges = graph.get(from[0]!) ?? new Map<string, string>()
      if (!edges.has(to[0]!)) edges.set(to[0]!, `${relative(root, file)} -> ${specifier}`)
      graph.set(from[0]!, edges)
    }
  }
  return graph
}

/** Strongly connected components of more than one folder, each sorted, as readable lines. */
function folderCycles(graph: FolderGraph): string[] {
  const nodes = new Set<string>([...graph.keys(), ...[...graph.values()].flatMap(edges => [...edges.keys()])])
  const reach = (start: string): Set<string> => {
    const seen = new Set<string>()
    const queue = [start]
    while (queue.length > 0) {
      for (const next of graph.get(queue.pop()!)?.keys() ?? []) if (!seen.has(next)) { seen.add(next); queue.push(next) }
    }
    return seen
  }
  const reachable = new Map([...nodes].map(node => [node, reach(node)]))
  const placed = new Set<string>()
  const cycles: string[] = []
  for (const node of [...nodes].sort()) {
    if (placed.has(node) || !reachable.get(node)!.has(node)) continue
    const members = [...nodes].filter(other => reachable.get(node)!.has(other) && reachable.get(other)!.has(node)).sort()
    members.forEach(member => placed.add(member))
    const inside = members.flatMap(a => [...graph.get(a) ?? []].filter(([b]) => members.includes(b)).map(([b, example]) => `${a}->${b} (${example})`))
    cycles.push(`${members.join(' ')}: ${inside.join('; ')}`)
  }
  return cycles
}

/** The most lines a source file may hold. */
const MAX_LINES = 600

/** Source files over `limit` lines, as `path (lines)` relative to `root`. */
function oversized(root: string, dirs: readonly string[], limit = MAX_LINES): string[] {
  return dirs.filter(dir => existsSync(dir)).flatMap(dir => sourceFiles(dir))
    .map(file => ({ file, lines: readFileSync(file, 'utf8').split('\n').length - 1 }))
    .filter(({ lines }) => lines > limit)
    .map(({ file, lines }) => `${relative(root, file)} (${lines})`)
}

describe('file size', () => {
  it(`no source file of src/ or web/src/ is over ${MAX_LINES} lines`, () => {
    const root = resolve(SRC, '..')
    expect(oversized(root, [SRC, join(root, 'web', 'src')])).toEqual([])
  })

  it('the check names a file one line over and passes one at the limit', () => {
    const root = mkdtempSync(join(tmpdir(), 'dsh-sizes-'))
    try {
      writeFileSync(join(root, 'at.ts'), 'x\n'.repeat(MAX_LINES))
      writeFileSync(join(root, 'over.ts'), 'x\n'.repeat(MAX_LINES + 1))
      writeFileSync(join(root, 'over.test.ts'), 'x\n'.repeat(MAX_LINES + 1))
      expect(oversized(root, [root])).toEqual([`over.ts (${MAX_LINES + 1})`])
    } finally {
      rmSync(root, { recursive: true, force: true })
    }
  })
})

describe('folder structure', () => {
  it('the folders of src/ form no import cycle', () => {
    const graph = folderGraph(SRC)
    expect(graph.size).toBeGreaterThan(5)
    expect(folderCycles(graph)).toEqual([])
    expect(missing).toEqual([])
  })

  it('the check names a cycle made through a dynamic import or a re-export', () => {
    const root = mkdtempSync(join(tmpdir(), 'dsh-folders-'))
    try {
      const write = (path: string, text: string) => {
        mkdirSync(dirname(join(root, path)), { recursive: true })
        writeFileSync(join(root, path), text)
      }
      write('a/index.ts', "export const a = () => import('../b/deep/x.js')\n")
      write('b/deep/x.ts', "export * from '../../c/index.js'\n")
      write('c/index.ts', "import type { A } from '../a/types.js'\nexport type C = A\n")
      write('a/types.ts', 'export type A = 1\n')
      write('d/index.ts', "import '../a/index.js'\n")
      write('a/a.test.ts', "import '../d/index.js'\n")
      expect(folderCycles(folderGraph(root))).toEqual([
        "a b c: a->b (a/index.ts -> ../b/deep/x.js); b->c (b/deep/x.ts -> ../../c/index.js); c->a (c/index.ts -> ../a/types.js)",
      ])
    } finally {
      rmSync(root, { recursive: true, force: true })
    }
  })
})
