/**
 * Composition rows and patches (product.md "Composition").
 *
 * A running dsh is a plugin tree built by applying ordered layers to an empty list of rows.
 * A layer is either a bundle (a list of rows, appended) or a patch (a list of patch elements).
 * Every row remembers which layers created and touched it, for `--dump-config`.
 */

export interface Row {
  id: string
  /** A built-in plugin name (see the catalogue), an npm package name, or `group`. */
  name: string
  config?: unknown
  disabled?: boolean
  inject?: string[]
  isolate?: string[]
  /** Child rows of a `group` row. */
  rows?: Row[]
}

export interface TrackedRow extends Row {
  rows?: TrackedRow[]
  /** Layer that created the row. */
  source: string
  /** Layers that changed it afterwards, in order. */
  patchedBy: string[]
}

export type PatchElement =
  | { insert: Row[]; id?: undefined }
  | { id: string; insert: Row[]; name?: string }
  | ({ id: string; name?: string } & Partial<Omit<Row, 'id' | 'rows'>>)

export interface Layer {
  /** Human-readable origin, e.g. `bundle base` or a file path. */
  readonly source: string
  readonly kind: 'bundle' | 'patch'
  readonly items: readonly unknown[]
}

export class ConfigError extends Error {
  constructor(readonly source: string, readonly rowId: string | undefined, readonly key: string | undefined, detail: string) {
    const where = [source, rowId === undefined ? undefined : `row "${rowId}"`, key === undefined ? undefined : `key "${key}"`]
      .filter(Boolean).join(', ')
    super(`${where}: ${detail}`)
    this.name = 'ConfigError'
  }
}

const ROW_KEYS = new Set(['id', 'name', 'config', 'disabled', 'inject', 'isolate', 'rows'])
const PATCH_ASSIGN_KEYS = new Set(['name', 'config', 'disabled', 'inject', 'isolate'])

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

function checkStringList(value: unknown, source: string, rowId: string, key: string): string[] {
  if (!Array.isArray(value) || value.some(item => typeof item !== 'string')) {
    throw new ConfigError(source, rowId, key, 'must be a list of strings')
  }
  return value as string[]
}

/** Validates one row (recursively for groups) and tags it with its source layer. */
export function parseRow(value: unknown, source: string, seen: Set<string>): TrackedRow {
  if (!isRecord(value)) throw new ConfigError(source, undefined, undefined, `a row must be a mapping, got ${JSON.stringify(value)}`)
  const id = value.id
  if (typeof id !== 'string' || id.length === 0) {
    throw new ConfigError(source, undefined, 'id', `every row needs a non-empty string id (row ${JSON.stringify(value)})`)
  }
  for (const key of Object.keys(value)) {
    if (!ROW_KEYS.has(key)) throw new ConfigError(source, id, key, `unknown row key (allowed: ${[...ROW_KEYS].join(', ')})`)
  }
  if (typeof value.name !== 'string' || value.name.length === 0) throw new ConfigError(source, id, 'name', 'must be a plugin name')
  if (seen.has(id)) throw new ConfigError(source, id, 'id', 'duplicate row id')
  seen.add(id)
  const row: TrackedRow = { id, name: value.name, source, patchedBy: [] }
  if ('config' in value) row.config = value.config
  if ('disabled' in value) {
    if (typeof value.disabled !== 'boolean') throw new ConfigError(source, id, 'disabled', 'must be true or false')
    row.disabled = value.disabled
  }
  if ('inject' in value) row.inject = checkStringList(value.inject, source, id, 'inject')
  if ('isolate' in value) row.isolate = checkStringList(value.isolate, source, id, 'isolate')
  if (value.name === 'group') {
    const children = value.rows ?? []
    if (!Array.isArray(children)) throw new ConfigError(source, id, 'rows', 'a group row holds a list of rows')
    row.rows = children.map(child => parseRow(child, source, seen))
  } else if ('rows' in value) {
    throw new ConfigError(source, id, 'rows', 'only a `group` row may hold child rows')
  }
  return row
}

function collectIds(rows: readonly TrackedRow[], into = new Set<string>()): Set<string> {
  for (const row of rows) {
    into.add(row.id)
    if (row.rows) collectIds(row.rows, into)
  }
  return into
}

export function findRow(rows: readonly TrackedRow[], id: string): TrackedRow | undefined {
  for (const row of rows) {
    if (row.id === id) return row
    const found = row.rows && findRow(row.rows, id)
    if (found) return found
  }
  return undefined
}

export interface ComposeResult {
  rows: TrackedRow[]
  warnings: string[]
}

/** Applies layers in order to an empty list of rows. */
export function compose(layers: readonly Layer[]): ComposeResult {
  const rows: TrackedRow[] = []
  const warnings: string[] = []
  for (const layer of layers) {
    if (layer.kind === 'bundle') {
      const seen = collectIds(rows)
      for (const item of layer.items) rows.push(parseRow(item, layer.source, seen))
      continue
    }
    layer.items.forEach((item, index) => applyPatch(rows, item, layer.source, index, warnings))
  }
  return { rows, warnings }
}

function applyPatch(rows: TrackedRow[], element: unknown, source: string, index: number, warnings: string[]): void {
  const where = `${source} (element ${index + 1})`
  if (!isRecord(element)) throw new ConfigError(where, undefined, undefined, 'a patch element must be a mapping')
  const { id, insert } = element
  if (id === undefined) {
    if (!Array.isArray(insert)) throw new ConfigError(where, undefined, 'insert', 'an element without id must be {insert: [rows]}')
    const seen = collectIds(rows)
    for (const item of insert) rows.push(parseRow(item, source, seen))
    return
  }
  if (typeof id !== 'string') throw new ConfigError(where, undefined, 'id', 'must be a string')
  const target = findRow(rows, id)
  if (target === undefined) {
    warnings.push(`${where}: patch for row "${id}" matched no row`)
    return
  }
  // On an insert element `name` is a guard (the target group must be that plugin); on an
  // assignment element it swaps the row's plugin, which is how a patch replaces a provider.
  const guard = element.name
  if (insert !== undefined) {
    if (!Array.isArray(insert)) throw new ConfigError(where, id, 'insert', 'must be a list of rows')
    if (target.name !== 'group') throw new ConfigError(where, id, 'insert', 'rows can only be inserted into a group row')
    if (guard !== undefined && guard !== 'group') {
      warnings.push(`${where}: guard name "${String(guard)}" does not match row "${id}" (${target.name}); skipped`)
      return
    }
    const seen = collectIds(rows)
    target.rows ??= []
    for (const item of insert) target.rows.push(parseRow(item, source, seen))
    target.patchedBy.push(source)
    return
  }
  for (const key of Object.keys(element)) {
    if (key !== 'id' && !PATCH_ASSIGN_KEYS.has(key)) throw new ConfigError(where, id, key, 'unknown patch key')
  }
  const checked = parseRow({ ...stripTracking(target), ...element, id }, source, new Set())
  // Shallow assign: `config` replaces the whole config, no deep merge.
  for (const key of Object.keys(element)) {
    if (key === 'id') continue
    ;(target as unknown as Record<string, unknown>)[key] = (checked as unknown as Record<string, unknown>)[key]
  }
  target.patchedBy.push(source)
}

/** The plain row tree without tracking fields (what `--dump-config` prints and the loader reads). */
export function stripTracking(row: TrackedRow): Row {
  const plain: Row = { id: row.id, name: row.name }
  if (row.config !== undefined) plain.config = row.config
  if (row.disabled !== undefined) plain.disabled = row.disabled
  if (row.inject !== undefined) plain.inject = row.inject
  if (row.isolate !== undefined) plain.isolate = row.isolate
  if (row.rows !== undefined) plain.rows = row.rows.map(stripTracking)
  return plain
}
