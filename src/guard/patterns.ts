/**
 * Tool-name patterns of the guards' settings: a name, or a name with `*` standing for any run of
 * characters (`mcp__*`, `*_read`). A pattern that matches no tool loaded now is not an error:
 * patterns are read against whatever tools exist when a call is made.
 */

export interface NamePattern {
  readonly source: string
  /** Characters other than `*`: the more there are, the more specific the pattern. */
  readonly literal: number
  test(name: string): boolean
}

export function namePattern(source: string, where: string): NamePattern {
  if (typeof source !== 'string' || source === '') throw new TypeError(`${where}: a tool-name pattern must be a non-empty string, not ${JSON.stringify(source)}`)
  if (!source.includes('*')) return { source, literal: source.length, test: name => name === source }
  const body = source.split('*').map(part => part.replace(/[.+?^${}()|[\]\\]/g, '\\$&')).join('.*')
  const re = new RegExp(`^${body}$`)
  return { source, literal: source.replace(/\*/g, '').length, test: name => re.test(name) }
}

export function namePatterns(list: unknown, where: string): readonly NamePattern[] {
  if (list === undefined) return []
  if (!Array.isArray(list)) throw new TypeError(`${where} must be a list of tool-name patterns, not ${JSON.stringify(list)}`)
  return list.map(entry => namePattern(entry as string, where))
}
