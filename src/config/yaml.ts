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
