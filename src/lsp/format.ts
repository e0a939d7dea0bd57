/**
 * What the `lsp` tool shows the model: short text, positions one-based (lines, and UTF-16 columns
 * as the protocol counts them), paths relative to the workspace.
 */
import { fileURLToPath } from 'node:url'
import { displayPath } from '../tools/builtin/paths.js'
import type { Diagnostic } from './server.js'

export interface Position { readonly line: number; readonly character: number }
export interface Range { readonly start: Position; readonly end: Position }
export interface Location { readonly uri: string; readonly range: Range }
interface LocationLink { readonly targetUri: string; readonly targetRange: Range; readonly targetSelectionRange?: Range }

/** `Location | Location[] | LocationLink[] | null` as plain locations. */
export function asLocations(result: unknown): Location[] {
  if (result === null || result === undefined) return []
  const list = Array.isArray(result) ? result : [result]
  const out: Location[] = []
  for (const item of list as (Location | LocationLink)[]) {
    if (typeof item !== 'object' || item === null) continue
    if ('targetUri' in item) out.push({ uri: item.targetUri, range: item.targetSelectionRange ?? item.targetRange })
    else if ('uri' in item && 'range' in item) out.push({ uri: item.uri, range: item.range })
  }
  return out
}

/** A file URI as the model reads it: relative to the workspace when inside it. */
export function shownPath(root: string, uri: string): string {
  if (!uri.startsWith('file:')) return uri
  try {
    return displayPath(root, fileURLToPath(uri))
  } catch {
    return uri
  }
}

export function at(root: string, uri: string, position: Position): string {
  return `${shownPath(root, uri)}:${position.line + 1}:${position.character + 1}`
}

/** The recorded limit line: `… N more location(s) omitted (limit L).` */
export function omittedLine(more: number, limit: number): string {
  return `… ${more} more ${more === 1 ? 'location' : 'locations'} omitted (limit ${limit}).`
}

/**
 * One `path:line:col` per location, duplicates dropped, at most `limit`; with `excerpt`, the
 * line's text after it (`excerpt(uri, line)` gives it, or undefined).
 */
export function formatLocations(root: string, locations: readonly Location[], limit: number, excerpt?: (uri: string, line: number) => string | undefined): string {
  const seen = new Set<string>()
  const unique = locations.filter(location => {
    const key = `${location.uri}:${location.range.start.line}:${location.range.start.character}`
    if (seen.has(key)) return false
    seen.add(key)
    return true
  })
  const lines = unique.slice(0, limit).map(location => {
    const place = at(root, location.uri, location.range.start)
    const text = excerpt?.(location.uri, location.range.start.line)
    return text === undefined || text === '' ? place : `${place}: ${text}`
  })
  if (unique.length > limit) lines.push(omittedLine(unique.length - limit, limit))
  return lines.join('\n')
}

type MarkedString = string | { language?: string; value: string }
interface Hover { contents: MarkedString | MarkedString[] | { kind: string; value: string } }

/** Hover contents as plain text: code fences dropped, their code kept. */
export function hoverText(result: unknown): string {
  if (result === null || typeof result !== 'object' || !('contents' in result)) return ''
  const contents = (result as Hover).contents
  const parts = (Array.isArray(contents) ? contents : [contents]).map(part => typeof part === 'string' ? part : part.value)
  const markdown = !(typeof contents === 'object' && !Array.isArray(contents) && 'kind' in contents && contents.kind === 'plaintext')
  const text = parts.join('\n\n')
  if (!markdown) return text.trim()
  return text
    .replace(/^```[^\n]*\n?/gm, '')
    .replace(/\n{3,}/g, '\n\n')
    .trim()
}

const SYMBOL_KINDS = ['file', 'module', 'namespace', 'package', 'class', 'method', 'property', 'field', 'constructor', 'enum', 'interface', 'function', 'variable', 'constant', 'string', 'number', 'boolean', 'array', 'object', 'key', 'null', 'enum member', 'struct', 'event', 'operator', 'type parameter']

export function symbolKind(kind: number): string {
  return SYMBOL_KINDS[kind - 1] ?? 'symbol'
}

interface DocumentSymbol { name: string; kind: number; detail?: string; selectionRange: Range; range: Range; children?: DocumentSymbol[] }
interface SymbolInformation { name: string; kind: number; containerName?: string; location: Location }

/** Document symbols as an indented list (`kind name line:col`), at most `limit` lines. */
export function formatDocumentSymbols(result: unknown, limit: number): string {
  if (!Array.isArray(result) || result.length === 0) return ''
  const lines: string[] = []
  let total = 0
  const walk = (symbols: DocumentSymbol[], depth: number) => {
    for (const symbol of symbols) {
      total++
      if (lines.length < limit) {
        const start = symbol.selectionRange?.start ?? symbol.range.start
        lines.push(`${'  '.repeat(depth)}${symbolKind(symbol.kind)} ${symbol.name} ${start.line + 1}:${start.character + 1}`)
      }
      if (Array.isArray(symbol.children)) walk(symbol.children, depth + 1)
    }
  }
  const first = result[0] as DocumentSymbol | SymbolInformation
  if ('location' in first) {
    // The flat form: nested under their container by name, as far as names tell.
    for (const symbol of result as SymbolInformation[]) {
      total++
      if (lines.length < limit) lines.push(`${symbol.containerName ? '  ' : ''}${symbolKind(symbol.kind)} ${symbol.name} ${symbol.location.range.start.line + 1}:${symbol.location.range.start.character + 1}`)
    }
  } else {
    walk(result as DocumentSymbol[], 0)
  }
  if (total > lines.length) lines.push(`… ${total - lines.length} more ${total - lines.length === 1 ? 'symbol' : 'symbols'} omitted (limit ${limit}).`)
  return lines.join('\n')
}

/** Workspace symbols: `path:line:col kind name (in container)`. */
export function formatWorkspaceSymbols(root: string, result: unknown, limit: number): string {
  if (!Array.isArray(result)) return ''
  const symbols = (result as SymbolInformation[]).filter(symbol => symbol?.location?.uri !== undefined)
  const lines = symbols.slice(0, limit).map(symbol => {
    const range = symbol.location.range ?? { start: { line: 0, character: 0 } }
    const container = symbol.containerName ? ` (in ${symbol.containerName})` : ''
    return `${at(root, symbol.location.uri, range.start)} ${symbolKind(symbol.kind)} ${symbol.name}${container}`
  })
  if (symbols.length > limit) lines.push(`… ${symbols.length - limit} more ${symbols.length - limit === 1 ? 'symbol' : 'symbols'} omitted (limit ${limit}).`)
  return lines.join('\n')
}

const SEVERITIES = ['error', 'warning', 'info', 'hint']

/** `path:line:col severity message (code)`, most severe first, at most `limit`. */
export function formatDiagnostics(shown: string, diagnostics: readonly Diagnostic[], limit: number): string {
  const sorted = [...diagnostics].sort((a, b) => (a.severity ?? 1) - (b.severity ?? 1) || a.range.start.line - b.range.start.line || a.range.start.character - b.range.start.character)
  const lines = sorted.slice(0, limit).map(diagnostic => {
    const { line, character } = diagnostic.range.start
    const severity = SEVERITIES[(diagnostic.severity ?? 1) - 1] ?? 'error'
    const code = diagnostic.code === undefined ? '' : ` (${diagnostic.source ? `${diagnostic.source} ` : ''}${diagnostic.code})`
    return `${shown}:${line + 1}:${character + 1} ${severity} ${diagnostic.message.replace(/\s*\n\s*/g, ' ')}${code}`
  })
  if (sorted.length > limit) lines.push(`… ${sorted.length - limit} more ${sorted.length - limit === 1 ? 'diagnostic' : 'diagnostics'} omitted (limit ${limit}).`)
  return lines.join('\n')
}
