/** Reading a web method's parameters: a wrong or missing one is a 400 naming it. */
import { WebApiError } from './api.js'

/** A string parameter: non-empty unless `optional` (then a missing one is ''). */
export function str(params: Record<string, unknown>, key: string, optional = false): string {
  const value = params[key]
  if (value === undefined && optional) return ''
  if (typeof value !== 'string' || (value === '' && !optional)) throw new WebApiError(400, 'BAD_PARAMS', `"${key}" must be a non-empty string`)
  return value
}

/** A non-negative integer parameter (or `fallback` when missing). */
export function int(params: Record<string, unknown>, key: string, fallback?: number): number {
  const value = params[key] ?? fallback
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0) throw new WebApiError(400, 'BAD_PARAMS', `"${key}" must be a non-negative integer`)
  return value
}
