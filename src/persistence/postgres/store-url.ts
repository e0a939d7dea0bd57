/** Store URLs: the `schema=` parameter, the search path it becomes, and a printable form. */
import { PersistenceError } from '../api.js'

export function quoteIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`
}

/** Splits `schema=` off a store URL (pg would pass unknown parameters to the server). */
export function parseStoreUrl(url: string): { connectionString: string; schema?: string } {
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    throw new PersistenceError(`store URL ${JSON.stringify(url)} is not a URL (expected postgres://user@host/database)`)
  }
  if (parsed.protocol !== 'postgres:' && parsed.protocol !== 'postgresql:') {
    throw new PersistenceError(`store URL ${JSON.stringify(url)}: only postgres:// URLs are supported`)
  }
  const schema = parsed.searchParams.get('schema') ?? undefined
  parsed.searchParams.delete('schema')
  return { connectionString: parsed.toString(), schema }
}

/** The connection string with `-c search_path=SCHEMA` added to its start-up `options`. */
export function withSearchPath(connectionString: string, schema: string): string {
  const url = new URL(connectionString)
  const own = url.searchParams.get('options')
  // In `options`, a backslash keeps a space or a backslash inside one argument.
  url.searchParams.set('options', `${own ? `${own} ` : ''}-c search_path=${quoteIdent(schema).replace(/[\\\s]/g, (c) => `\\${c}`)}`)
  return url.toString()
}

/** A URL with its password masked, for messages. */
export function redactStoreUrl(url: string): string {
  try {
    const parsed = new URL(url)
    if (parsed.password) parsed.password = '***'
    return parsed.toString()
  } catch {
    return '(unparsable URL)'
  }
}
