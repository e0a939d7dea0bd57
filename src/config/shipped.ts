/**
 * The build's parsed copy of the shipped YAML (bundles and profiles), so start-up needs no YAML
 * parser. The YAML files stay the source of truth: an entry is used only while its file holds the
 * very text it was parsed from, so an edited file is always parsed afresh. (Not its size and
 * mtime: an npm tarball, tar and most copies set times of their own, and a package installed
 * that way would parse every shipped file at every start.)
 * `scripts/shipped-config.mjs` writes dist/shipped-config.json after `tsc`.
 */
import { readFileSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

/** The package root (works from src/ under tsx and from dist/ when built). */
export const packageRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..')
export const SHIPPED_CONFIG_FILE = join(packageRoot, 'dist', 'shipped-config.json')

export interface ShippedEntry {
  readonly text: string
  readonly value: unknown
}

/** A lookup over one cache file of the package at `root`. */
export function shippedCache(file: string, root: string): (path: string) => { value: unknown } | undefined {
  let entries: Readonly<Record<string, ShippedEntry>> | undefined
  return path => {
    if (entries === undefined) {
      try {
        entries = JSON.parse(readFileSync(file, 'utf8')) as Record<string, ShippedEntry>
      } catch {
        entries = {}
      }
    }
    const entry = entries[relative(root, path)]
    if (entry === undefined) return undefined
    try {
      // A few KB read and compared: far less than loading a YAML parser.
      // A copy, so a caller changing the document cannot change what the next read returns.
      return readFileSync(path, 'utf8') === entry.text ? { value: structuredClone(entry.value) } : undefined
    } catch {
      return undefined
    }
  }
}

let packageCache: ReturnType<typeof shippedCache> | undefined

/** The cached document of a shipped file, or undefined (not cached, changed or unreadable). */
export function shippedDocument(path: string): { value: unknown } | undefined {
  packageCache ??= shippedCache(SHIPPED_CONFIG_FILE, packageRoot)
  return packageCache(path)
}
