// Writes dist/shipped-config.json: every shipped bundle and profile YAML file, parsed, with the
// text it was parsed from, so dsh starts without a YAML parser (src/config/shipped.ts compares the
// file's text before trusting an entry). Run after tsc; files that do not parse are left out, so dsh still
// reports their errors when it reads them. Usage: node scripts/shipped-config.mjs [package root]
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { dirname, join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parse } from 'yaml'

const root = process.argv[2] ?? join(dirname(fileURLToPath(import.meta.url)), '..')
const files = []
const walk = dir => {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) walk(path)
    else if (entry.name.endsWith('.yml') || entry.name.endsWith('.yaml')) files.push(path)
  }
}
for (const folder of ['bundles', 'profiles']) {
  try {
    walk(join(root, folder))
  } catch (error) {
    if (error.code !== 'ENOENT') throw error
  }
}

const out = {}
for (const path of files) {
  const text = readFileSync(path, 'utf8')
  if (text.trim() === '') continue
  let value
  try {
    value = parse(text)
  } catch {
    continue
  }
  out[relative(root, path)] = { text, value }
}
mkdirSync(join(root, 'dist'), { recursive: true })
writeFileSync(join(root, 'dist', 'shipped-config.json'), `${JSON.stringify(out)}\n`)
