/**
 * The JSON Schema subset dsh checks arguments against without a validator library (so start-up
 * loads none): `type` (one or a list; `integer` is a whole number), `enum`, `required`,
 * `properties`, `items`, `minLength`/`maxLength`, `minimum`/`maximum`/`exclusiveMinimum`/
 * `exclusiveMaximum`, `minItems`/`maxItems`, `additionalProperties: false`, `const` (compared as
 * JSON) and `oneOf` (exactly one alternative). Other keywords are sent to the model but not
 * checked; tools needing more define `parse` (see defineTool).
 */
import { plural } from '../host/numbers.js'

export interface JsonSchema {
  readonly type?: string | readonly string[]
  readonly description?: string
  readonly enum?: readonly unknown[]
  readonly properties?: Readonly<Record<string, JsonSchema>>
  readonly required?: readonly string[]
  readonly items?: JsonSchema
  readonly minLength?: number
  readonly maxLength?: number
  readonly minimum?: number
  readonly maximum?: number
  readonly exclusiveMinimum?: number
  readonly exclusiveMaximum?: number
  readonly minItems?: number
  readonly maxItems?: number
  readonly [keyword: string]: unknown
}

function typeOf(value: unknown): string {
  if (value === null) return 'null'
  if (Array.isArray(value)) return 'array'
  if (typeof value === 'number') return Number.isInteger(value) ? 'integer' : 'number'
  return typeof value
}

const matchesType = (type: unknown, actual: string) => type === actual || (type === 'number' && actual === 'integer')


/**
 * Every problem of `value` against `schema`, each `path: message` (`(arguments)` for the root),
 * in document order; empty when it conforms.
 */
export function schemaProblems(schema: unknown, value: unknown, path = ''): string[] {
  if (typeof schema !== 'object' || schema === null) return []
  const s = schema as JsonSchema
  const where = path === '' ? '(arguments)' : path
  const actual = typeOf(value)
  if (s.type !== undefined) {
    const types = Array.isArray(s.type) ? s.type : [s.type]
    if (!types.some((t) => matchesType(t, actual))) return [`${where}: expected ${types.join(' or ')}, got ${actual}`]
  }
  if (Array.isArray(s.enum) && !s.enum.some((option) => option === value)) {
    return [`${where}: expected one of ${s.enum.map((option) => JSON.stringify(option)).join(', ')}`]
  }
  if (Object.hasOwn(s, 'const') && JSON.stringify(s.const) !== JSON.stringify(value)) return [`${where}: expected ${JSON.stringify(s.const)}`]
  if (Array.isArray(s.oneOf)) {
    const matching = s.oneOf.filter((option) => schemaProblems(option, value, path).length === 0).length
    if (matching !== 1) return [`${where}: must match exactly one of ${s.oneOf.length} alternatives (matches ${matching})`]
  }
  const problems: string[] = []
  if (typeof value === 'string') {
    // Lengths count code points, as JSON Schema does.
    const length = s.minLength !== undefined || s.maxLength !== undefined ? [...value].length : 0
    if (s.minLength !== undefined && length < s.minLength) problems.push(`${where}: must not be shorter than ${plural(s.minLength, 'character')}`)
    if (s.maxLength !== undefined && length > s.maxLength) problems.push(`${where}: must not be longer than ${plural(s.maxLength, 'character')}`)
  } else if (typeof value === 'number') {
    if (s.minimum !== undefined && value < s.minimum) problems.push(`${where}: must be >= ${s.minimum}`)
    if (s.exclusiveMinimum !== undefined && value <= s.exclusiveMinimum) problems.push(`${where}: must be > ${s.exclusiveMinimum}`)
    if (s.maximum !== undefined && value > s.maximum) problems.push(`${where}: must be <= ${s.maximum}`)
    if (s.exclusiveMaximum !== undefined && value >= s.exclusiveMaximum) problems.push(`${where}: must be < ${s.exclusiveMaximum}`)
  } else if (Array.isArray(value)) {
    if (s.minItems !== undefined && value.length < s.minItems) problems.push(`${where}: must have at least ${plural(s.minItems, 'item')}`)
    if (s.maxItems !== undefined && value.length > s.maxItems) problems.push(`${where}: must have at most ${plural(s.maxItems, 'item')}`)
    if (s.items !== undefined) value.forEach((item, index) => problems.push(...schemaProblems(s.items, item, path === '' ? String(index) : `${path}.${index}`)))
  } else if (actual === 'object') {
    const record = value as Record<string, unknown>
    for (const name of s.required ?? []) {
      if (!Object.hasOwn(record, name)) problems.push(`${path === '' ? name : `${path}.${name}`}: required`)
    }
    for (const [name, sub] of Object.entries(s.properties ?? {})) {
      if (Object.hasOwn(record, name)) problems.push(...schemaProblems(sub, record[name], path === '' ? name : `${path}.${name}`))
    }
    if (s.additionalProperties === false) {
      for (const name of Object.keys(record)) {
        if (!Object.hasOwn(s.properties ?? {}, name)) problems.push(`${path === '' ? name : `${path}.${name}`}: unknown property`)
      }
    }
  }
  return problems
}
