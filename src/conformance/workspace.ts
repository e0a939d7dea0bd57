/**
 * Scenario workspaces: what the recording's composition loaded from them, and the helper
 * scripts the corpus omits as code (rewritten here from their documented behaviour).
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type { HookFileSource } from '../hooks/api.js'
import type { SessionEvent } from '../session/types.js'

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

/**
 * Skills the recording copied in from the product tree (skill-load): rebuilt at run time, never
 * stored, from the log itself: name and description from the catalog entry, the body from the
 * `skill` result between `<skill_instructions>` and `</skill_instructions>`.
 */
export function recreateOmittedSkills(cwd: string, events: readonly SessionEvent[]): void {
  const bodies = new Map<string, string>()
  for (const event of events) {
    if (event.type !== 'tool/result') continue
    const block = (event.data as { message: { content: [{ content: { type: string; text?: string }[] }] } }).message.content[0].content[0]
    const match = block?.text === undefined ? null : /^<skill_content name="([^"]+)">[\s\S]*?<skill_instructions>\n([\s\S]*)\n<\/skill_instructions>/.exec(block.text)
    if (match !== null) bodies.set(match[1]!, match[2]!)
  }
  for (const event of events) {
    const source = (event.data as { source?: { kind?: string; entries?: { name: string; description: string }[] } }).source
    if (event.type !== 'user/message' || source?.kind !== 'skill-catalog') continue
    for (const entry of source.entries ?? []) {
      const dir = join(cwd, '.dsh', 'skills', entry.name)
      const body = bodies.get(entry.name)
      if (existsSync(dir) || body === undefined) continue
      mkdirSync(dir, { recursive: true })
      writeFileSync(join(dir, 'SKILL.md'), `---\nname: ${entry.name}\ndescription: ${JSON.stringify(entry.description)}\n---\n\n${body}\n`)
    }
  }
}
