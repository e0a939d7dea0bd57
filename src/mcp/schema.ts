/**
 * Input schemas as providers accept them. DeepSeek and OpenAI function parameters must be an
 * object schema; `$ref`, root `oneOf`/`anyOf` and some keywords are rejected. A schema is
 * normalised, never dropped: local `$ref`s are inlined (a recursive one becomes an open
 * schema), a root union of object branches is merged, `format` moves into the description and
 * anything else that is not an object schema becomes an open object. Every change is reported
 * in `notes` so the server's status can show it.
 */

type Json = Record<string, unknown>

export interface NormalisedSchema {
  readonly schema: Json
  readonly notes: readonly string[]
}

const DROPPED_ROOT_KEYS = ['$schema', '$id', '$defs', 'definitions', '$comment']
const MAX_DEPTH = 32

function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

function pointer(root: Json, ref: string): unknown {
  if (ref === '#') return root
  if (!ref.startsWith('#/')) return undefined
  let node: unknown = root
  for (const raw of ref.slice(2).split('/')) {
    const key = decodeURIComponent(raw).replace(/~1/g, '/').replace(/~0/g, '~')
    if (!isObject(node) && !Array.isArray(node)) return undefined
    node = (node as Record<string, unknown>)[key]
  }
  return node
}

export function normaliseSchema(input: unknown): NormalisedSchema {
  const notes = new Set<string>()
  if (!isObject(input)) {
    notes.add('the server sent no input schema object; any arguments are accepted')
    return { schema: { type: 'object', properties: {} }, notes: [...notes] }
  }
  const root = input
  const walk = (node: unknown, stack: readonly string[], depth: number): unknown => {
    if (Array.isArray(node)) return node.map(item => walk(item, stack, depth + 1))
    if (!isObject(node)) return node
    if (depth > MAX_DEPTH) {
      notes.add('schema nesting beyond 32 levels was left open')
      return {}
    }
    if (typeof node.$ref === 'string') {
      const ref = node.$ref
      const { $ref: _ref, ...siblings } = node
      if (stack.includes(ref)) {
        notes.add(`recursive $ref ${ref} was replaced by an open schema`)
        return walk(siblings, stack, depth + 1)
      }
      const target = pointer(root, ref)
      if (!isObject(target)) {
        notes.add(`unresolvable $ref ${ref} was replaced by an open schema`)
        return walk(siblings, stack, depth + 1)
      }
      notes.add('$ref was inlined')
      return walk({ ...target, ...siblings }, [...stack, ref], depth + 1)
    }
    const out: Json = {}
    for (const [key, value] of Object.entries(node)) {
      if (key === 'format' && typeof value === 'string') continue
      if (key === 'properties' && isObject(value)) {
        out.properties = Object.fromEntries(Object.entries(value).map(([name, schema]) => [name, walk(schema, stack, depth + 1)]))
      } else if (key === '$defs' || key === 'definitions' || key === '$schema' || key === '$id') {
        continue
      } else {
        out[key] = walk(value, stack, depth + 1)
      }
    }
    if (typeof node.format === 'string') {
      notes.add('format keywords were moved into descriptions')
      out.description = typeof out.description === 'string' && out.description !== '' ? `${out.description} (format: ${node.format})` : `format: ${node.format}`
    }
    return out
  }
  let schema = walk(Object.fromEntries(Object.entries(root).filter(([key]) => !DROPPED_ROOT_KEYS.includes(key))), [], 0) as Json
  if (schema.type !== 'object') schema = rootObject(schema, notes)
  if (schema.properties === undefined) schema = { ...schema, properties: {} }
  return { schema, notes: [...notes] }
}

/** A root that is not `type: object`: merge a union of object branches, else accept any object. */
function rootObject(schema: Json, notes: Set<string>): Json {
  const union = (['oneOf', 'anyOf', 'allOf'] as const).find(key => Array.isArray(schema[key]))
  const branches = union === undefined ? [] : (schema[union] as unknown[])
  const objects = branches.every(branch => isObject(branch) && (branch.type === 'object' || isObject(branch.properties)))
  if (union !== undefined && branches.length > 0 && objects) {
    const properties: Json = {}
    let required: string[] | undefined
    for (const branch of branches as Json[]) {
      Object.assign(properties, isObject(branch.properties) ? branch.properties : {})
      const own = Array.isArray(branch.required) ? branch.required.filter((name): name is string => typeof name === 'string') : []
      required = required === undefined ? own : union === 'allOf' ? [...new Set([...required, ...own])] : required.filter(name => own.includes(name))
    }
    notes.add(`a root ${union} was merged into one object schema`)
    const { [union]: _union, ...rest } = schema
    return { ...rest, type: 'object', properties, ...(required !== undefined && required.length > 0 ? { required } : {}) }
  }
  if (schema.type === undefined && isObject(schema.properties)) {
    return { ...schema, type: 'object' }
  }
  notes.add('the root schema is not an object schema; any object is accepted and the server validates')
  return { type: 'object', properties: {}, additionalProperties: true, ...(typeof schema.description === 'string' ? { description: schema.description } : {}) }
}
