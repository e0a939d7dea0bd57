import { spawnSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, utimesSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { parse as parseYaml } from 'yaml'
import { packageRoot, shippedCache } from './shipped.js'

const script = join(packageRoot, 'scripts', 'shipped-config.mjs')

function buildCache(root: string): (path: string) => { value: unknown } | undefined {
  const result = spawnSync(process.execPath, [script, root], { encoding: 'utf8' })
  expect(result.stderr).toBe('')
  expect(result.status).toBe(0)
  return shippedCache(join(root, 'dist', 'shipped-config.json'), root)
}

describe('the build cache of shipped YAML', () => {
  it('serves each shipped bundle and profile exactly as the YAML parses', () => {
    const root = mkdtempSync(join(tmpdir(), 'dsh-shipped-'))
    for (const folder of ['bundles', 'profiles']) mkdirSync(join(root, folder))
    const lookup = buildCache(root)
    expect(lookup(join(root, 'bundles', 'none.yml'))).toBeUndefined()
    // The real package files, through a cache built from a copy of them.
    const files = readdirSync(join(packageRoot, 'bundles')).map(name => join('bundles', name))
    for (const file of files) writeFileSync(join(root, file), readFileSync(join(packageRoot, file)))
    const fresh = buildCache(root)
    for (const file of files) {
      expect(fresh(join(root, file))?.value, file).toEqual(parseYaml(readFileSync(join(packageRoot, file), 'utf8')))
    }
  })

  it('ignores an entry once its file changed, and leaves out files that do not parse', () => {
    const root = mkdtempSync(join(tmpdir(), 'dsh-shipped-'))
    mkdirSync(join(root, 'bundles'))
    const path = join(root, 'bundles', 'a.yml')
    writeFileSync(path, '- id: a\n  name: sessions\n')
    writeFileSync(join(root, 'bundles', 'bad.yml'), '- id: [unclosed\n')
    const lookup = buildCache(root)
    const first = lookup(path)
    expect(first?.value).toEqual([{ id: 'a', name: 'sessions' }])
    ;(first?.value as unknown[]).push('mutated by a caller')
    expect(lookup(path)?.value).toEqual([{ id: 'a', name: 'sessions' }])
    expect(lookup(join(root, 'bundles', 'bad.yml'))).toBeUndefined()
    writeFileSync(path, '- id: a\n  name: sessions\n- id: b\n  name: llm\n')
    expect(lookup(path)).toBeUndefined()
    // The same length, other bytes: still another file.
    writeFileSync(path, '- id: a\n  name: sessionz\n')
    expect(lookup(path)).toBeUndefined()
  })

  it('still serves a file whose times changed but whose bytes did not (npm and tar set their own mtimes)', () => {
    const root = mkdtempSync(join(tmpdir(), 'dsh-shipped-'))
    mkdirSync(join(root, 'bundles'))
    const path = join(root, 'bundles', 'a.yml')
    writeFileSync(path, '- id: a\n  name: sessions\n')
    const lookup = buildCache(root)
    // What an npm tarball's files get: 1985-10-26T08:15:00Z.
    utimesSync(path, new Date('1985-10-26T08:15:00Z'), new Date('1985-10-26T08:15:00Z'))
    expect(lookup(path)?.value).toEqual([{ id: 'a', name: 'sessions' }])
  })
})
