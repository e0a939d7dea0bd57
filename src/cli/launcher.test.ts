/**
 * bin/dsh.js picks its code: dist/bundle while the bundle was made from the current dist/ (its
 * copy of dist/.buildstamp matches), dist/ as tsc wrote it otherwise. Run against a stand-in
 * package whose two entry points say which one ran.
 */
import { execFileSync } from 'node:child_process'
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'

const launcher = join(import.meta.dirname, '..', '..', 'bin', 'dsh.js')
const folders: string[] = []

function standIn(files: Record<string, string>): string {
  const root = mkdtempSync(join(tmpdir(), 'dsh-launcher-'))
  folders.push(root)
  mkdirSync(join(root, 'bin'))
  copyFileSync(launcher, join(root, 'bin', 'dsh.js'))
  const main = (which: string) => `export async function main(argv) { process.stdout.write(${JSON.stringify(which)} + ' ' + argv.join(' ')); return 0 }\n`
  const all: Record<string, string> = { 'package.json': '{"type":"module"}', 'dist/cli/main.js': main('dist'), 'dist/bundle/main.js': main('bundle'), ...files }
  for (const [path, text] of Object.entries(all)) {
    if (text === '') continue
    mkdirSync(join(root, path, '..'), { recursive: true })
    writeFileSync(join(root, path), text)
  }
  return root
}

const run = (root: string, ...args: string[]) => execFileSync(process.execPath, [join(root, 'bin', 'dsh.js'), ...args], { encoding: 'utf8' })

afterEach(() => {
  for (const folder of folders.splice(0)) rmSync(folder, { recursive: true, force: true })
})

describe('launcher (bin/dsh.js)', () => {
  it('runs the bundle when its stamp matches dist/.buildstamp', () => {
    const root = standIn({ 'dist/.buildstamp': '2026-01-01T00:00:00.000Z', 'dist/bundle/.buildstamp': '2026-01-01T00:00:00.000Z' })
    expect(run(root, '--version')).toBe('bundle --version')
  })

  it('falls back to dist/ when dist/ was rebuilt after the bundle (stamps differ)', () => {
    const root = standIn({ 'dist/.buildstamp': '2026-01-02T00:00:00.000Z', 'dist/bundle/.buildstamp': '2026-01-01T00:00:00.000Z' })
    expect(run(root, 'sessions')).toBe('dist sessions')
  })

  it('falls back to dist/ when there is no bundle or no build stamp', () => {
    const noBundle = standIn({ 'dist/.buildstamp': '2026-01-01T00:00:00.000Z', 'dist/bundle/main.js': '' })
    expect(run(noBundle, '--help')).toBe('dist --help')
    const noStamp = standIn({ 'dist/bundle/.buildstamp': '2026-01-01T00:00:00.000Z' })
    expect(run(noStamp, 'x')).toBe('dist x')
  })
})
