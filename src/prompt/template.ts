/**
 * `{{variable}}` interpolation for system prompt sections (Y-1).
 */

/** Looks a variable up: a string, `undefined` (registered but without a value now) or unknown. */
export type VariableLookup = (name: string) => { readonly known: false } | { readonly known: true; readonly value: string | undefined }

/**
 * Replace every `{{name}}` (surrounding blanks ignored) by its value. An unknown or undefined
 * variable throws. A `{{` is literal only when no `}}` follows anywhere later in the text, so a
 * typo can never silently leave a placeholder in the prompt.
 */
export function interpolate(text: string, lookup: VariableLookup, where = 'template'): string {
  let out = ''
  let cursor = 0
  while (cursor < text.length) {
    const open = text.indexOf('{{', cursor)
    if (open < 0) break
    const close = text.indexOf('}}', open + 2)
    if (close < 0) break
    const name = text.slice(open + 2, close).trim()
    const found = lookup(name)
    if (!found.known) throw new Error(`${where}: unknown variable {{${name}}}`)
    if (found.value === undefined) throw new Error(`${where}: variable {{${name}}} is undefined`)
    out += text.slice(cursor, open) + found.value
    cursor = close + 2
  }
  return out + text.slice(cursor)
}
