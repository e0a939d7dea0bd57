/**
 * Scenario workspaces: what the recording's composition loaded from them, and the helper
 * scripts the corpus omits as code (rewritten here from their documented behaviour).
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type { HookFileSource } from '../hooks/api.js'

/** The original ACP composition loads `./hooks.json` (Claude Code) and `./codex-hooks.json` (Codex). */
export function workspaceHookFiles(workspace: string): HookFileSource[] {
  const files: HookFileSource[] = []
  if (existsSync(join(workspace, 'hooks.json'))) files.push({ dialect: 'claude-code', path: 'hooks.json' })
  if (existsSync(join(workspace, 'codex-hooks.json'))) files.push({ dialect: 'codex', path: 'codex-hooks.json' })
  return files
}

/**
 * `posttool-once.sh` (hook-cc-posttool-block): rejects the first tool output with exit 2 and a
 * fixed reason, then passes. Written only when a hook file names it and it is missing.
 */
export function recreateOmittedScripts(cwd: string): void {
  const hooks = join(cwd, 'hooks.json')
  const script = join(cwd, 'posttool-once.sh')
  if (!existsSync(hooks) || existsSync(script) || !readFileSync(hooks, 'utf8').includes('posttool-once.sh')) return
  writeFileSync(script, [
    'if [ -f .posttool-once ]; then exit 0; fi',
    'touch .posttool-once',
    "echo 'tool output rejected by policy: retry once' >&2",
    'exit 2',
    '',
  ].join('\n'))
}
