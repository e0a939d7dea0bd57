/**
 * JSON text of logged values, computed once per value. A logged value is deep-frozen (S-5), so
 * its serialisation never changes; anything not frozen is serialised every time.
 */
const cache = new WeakMap<object, string>()

export function frozenJson(value: unknown): string {
  if (typeof value !== 'object' || value === null || !Object.isFrozen(value)) return JSON.stringify(value)
  let json = cache.get(value)
  if (json === undefined) cache.set(value, json = JSON.stringify(value))
  return json
}
