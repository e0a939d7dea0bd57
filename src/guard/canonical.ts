/** The canonical text of a call's arguments: keys sorted at every depth, then JSON. */

function sorted(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sorted)
  if (typeof value !== 'object' || value === null) return value
  const out: Record<string, unknown> = {}
  for (const key of Object.keys(value).sort()) out[key] = sorted((value as Record<string, unknown>)[key])
  return out
}

/**
 * `raw` (the model's argument string) as canonical JSON, so `{"a":1,"b":2}` and `{"b":2,"a":1}`
 * are the same call; blank is `{}`; text that is not JSON stays as it is.
 */
export function canonicalArguments(raw: string): string {
  if (raw.trim() === '') return '{}'
  try {
    return JSON.stringify(sorted(JSON.parse(raw)))
  } catch {
    return raw
  }
}
