/**
 * The `yaml` package, loaded on first use. Importing it costs tens of milliseconds, and a plain
 * run needs it only when a user file exists (settings, credentials, patches) or a shipped file
 * changed since the build cached it (see shipped.ts).
 */
import { createRequire } from 'node:module'

type Yaml = typeof import('yaml')

let yaml: Yaml | undefined

export function loadYaml(): Yaml {
  yaml ??= createRequire(import.meta.url)('yaml') as Yaml
  return yaml
}

/**
 * One line for a YAML parse error: `at line L, column C: reason`. The library's message ends its
 * first line with the position and a colon, followed by a code excerpt; the excerpt is dropped and
 * the position moved to the front, so nothing dangles.
 */
export function describeYamlError(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error)
  const first = message.split('\n')[0]!.trim()
  const match = /^(.*?)\s+at line (\d+), column (\d+):?$/.exec(first)
  if (match !== null) return `at line ${match[2]}, column ${match[3]}: ${match[1]}`
  return first.replace(/:\s*$/, '')
}
