/**
 * S-5: event data is snapshotted as plain JSON and deep-frozen before it enters the log, so a
 * caller mutating its object afterwards cannot change history, and whatever is in memory
 * serialises to exactly what will be read back.
 */
import { at, formatPath, rootPath, type Path } from './validators.js'
import type { JsonValue } from './types.js'

/** A snapshot refusal; `path` names the offending value (e.g. `data.message.content[0].text`). */
export class SnapshotError extends Error {
  constructor(readonly path: string, readonly problem: string) {
    super(`${path} ${problem}`)
    this.name = 'SnapshotError'
  }
}

/**
 * Deep-copies `value` as plain JSON and freezes the copy. Refuses BigInt, functions, symbols
 * (as values or keys), undefined (in objects and arrays, including holes), -0, NaN/Infinity,
 * cycles and anything that is not a plain object, an array or a primitive.
 */
export function snapshotJson(value: unknown, path = 'data'): JsonValue {
  try {
    return copyFast(value, [])
  } catch (error) {
    if (error !== PROBLEM) throw error
    // Walk again with paths, only to say where (the path-free walk allocates nothing extra).
    return copy(value, rootPath(path), [])
  }
}

/**
 * The same checks as `snapshotJson`, but freezes `value` in place instead of copying it: for a
 * tree nobody else holds, such as the output of `JSON.parse` when a stored log is loaded (half
 * the allocations of a copy, and no second tree while the first is still referenced).
 */
export function adoptJson(value: unknown, path = 'data'): JsonValue {
  try {
    return freezeFast(value, [])
  } catch (error) {
    if (error !== PROBLEM) throw error
    return copy(value, rootPath(path), [])
  }
}

/**
 * `adoptJson` for a tree straight from `JSON.parse`, which can hold no symbol, cycle, hole,
 * undefined, non-finite number or class instance: only -0 (which JSON.parse does produce) is
 * looked for, and everything is frozen in place. Anything else refused reads as `adoptJson`'s
 * refusal.
 */
export function adoptParsedJson(value: unknown, path = 'data'): JsonValue {
  try {
    return freezeParsed(value)
  } catch (error) {
    if (error !== PROBLEM) throw error
    return copy(value, rootPath(path), [])
  }
}

function freezeParsed(value: unknown): JsonValue {
  if (typeof value !== 'object' || value === null) {
    if (value === 0 && 1 / value < 0) throw PROBLEM
    return value as JsonValue
  }
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const item: unknown = value[i]
      if (typeof item === 'object' ? item !== null : item === 0) freezeParsed(item)
    }
  } else {
    // Only containers and zeros need a look (as for arrays): no call per string leaf.
    for (const key in value) {
      const item: unknown = (value as Record<string, unknown>)[key]
      if (typeof item === 'object' ? item !== null : item === 0) freezeParsed(item)
    }
  }
  return Object.freeze(value) as JsonValue
}

/** Thrown by the path-free walks on any refusal; the caller re-walks with paths for the message. */
const PROBLEM = new Error('snapshot refusal')

/** Everything but strings, booleans, null, finite non-negative-zero numbers and containers. */
function primitive(value: unknown): boolean {
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return true
    case 'number':
      if (!Number.isFinite(value) || (value === 0 && 1 / value < 0)) throw PROBLEM
      return true
    case 'object':
      return value === null
    default:
      throw PROBLEM
  }
}

function container(object: object, ancestors: object[]): boolean {
  if (ancestors.includes(object) || Object.getOwnPropertySymbols(object).length > 0) throw PROBLEM
  if (Array.isArray(object)) return true
  const proto = Object.getPrototypeOf(object)
  if (proto !== Object.prototype && proto !== null) throw PROBLEM
  return false
}

function copyFast(value: unknown, ancestors: object[]): JsonValue {
  if (primitive(value)) return value as JsonValue
  const object = value as object
  const isArray = container(object, ancestors)
  ancestors.push(object)
  let result: JsonValue
  if (isArray) {
    const array = object as unknown[]
    const out: JsonValue[] = new Array(array.length)
    for (let i = 0; i < array.length; i++) {
      if (!(i in array)) throw PROBLEM
      out[i] = copyFast(array[i], ancestors)
    }
    result = out
  } else {
    const out: Record<string, JsonValue> = {}
    for (const key in object) {
      if (!Object.hasOwn(object, key)) continue
      const item = copyFast((object as Record<string, unknown>)[key], ancestors)
      if (key === '__proto__') Object.defineProperty(out, key, { value: item, enumerable: true, writable: true, configurable: true })
      else out[key] = item
    }
    result = out
  }
  ancestors.pop()
  return Object.freeze(result)
}

function freezeFast(value: unknown, ancestors: object[]): JsonValue {
  if (primitive(value)) return value as JsonValue
  const object = value as object
  const isArray = container(object, ancestors)
  ancestors.push(object)
  if (isArray) {
    const array = object as unknown[]
    for (let i = 0; i < array.length; i++) {
      if (!(i in array)) throw PROBLEM
      freezeFast(array[i], ancestors)
    }
  } else {
    for (const key in object) {
      if (Object.hasOwn(object, key)) freezeFast((object as Record<string, unknown>)[key], ancestors)
    }
  }
  ancestors.pop()
  return Object.freeze(object) as JsonValue
}

const fail = (path: Path, problem: string): never => { throw new SnapshotError(formatPath(path), problem) }

/** `ancestors` is the chain of enclosing containers (shallow, so a linear scan beats a Set). */
function copy(value: unknown, path: Path, ancestors: object[]): JsonValue {
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return value
    case 'number':
      if (!Number.isFinite(value)) fail(path, `is ${value}, which JSON cannot represent`)
      if (value === 0 && 1 / value < 0) fail(path, 'is -0, which JSON cannot represent')
      return value
    case 'undefined':
      return fail(path, 'is undefined (omit the key instead)')
    case 'bigint':
      return fail(path, 'is a BigInt')
    case 'function':
      return fail(path, 'is a function')
    case 'symbol':
      return fail(path, 'is a symbol')
  }
  if (value === null) return null
  const object = value as object
  if (ancestors.includes(object)) fail(path, 'is a cycle back to an enclosing value')
  if (Object.getOwnPropertySymbols(object).length > 0) fail(path, 'has symbol keys')
  ancestors.push(object)
  let result: JsonValue
  if (Array.isArray(object)) {
    const out: JsonValue[] = new Array(object.length)
    for (let i = 0; i < object.length; i++) {
      if (!(i in object)) fail(at(path, i), 'is a hole (undefined)')
      out[i] = copy(object[i], at(path, i), ancestors)
    }
    result = out
  } else {
    const proto = Object.getPrototypeOf(object)
    if (proto !== Object.prototype && proto !== null) {
      const name = (proto?.constructor as { name?: string } | undefined)?.name
      fail(path, `is a class instance${name ? ` (${name})` : ''}, not a plain object`)
    }
    const out: Record<string, JsonValue> = {}
    for (const key in object) {
      if (!Object.hasOwn(object, key)) continue
      const item = copy((object as Record<string, unknown>)[key], at(path, key), ancestors)
      // A JSON.parse'd own "__proto__" key must stay data, not become the prototype.
      if (key === '__proto__') Object.defineProperty(out, key, { value: item, enumerable: true, writable: true, configurable: true })
      else out[key] = item
    }
    result = out
  }
  ancestors.pop()
  return Object.freeze(result)
}

/** True when `value` and everything inside it is frozen. */
export function isDeepFrozen(value: unknown): boolean {
  if (typeof value !== 'object' || value === null) return true
  if (!Object.isFrozen(value)) return false
  return Object.values(value).every(isDeepFrozen)
}
