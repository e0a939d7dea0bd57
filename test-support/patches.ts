/** Test plugins loaded by path through a patch file, as a user's own plugin would be. */
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

/** A patch inserting a plugin that asks approval for every bash call; returns the patch's path. */
export function askBashPatch(): string {
  const folder = mkdtempSync(join(tmpdir(), 'dsh-ask-bash-plugin-'))
  const plugin = join(folder, 'ask-bash.mjs')
  writeFileSync(plugin, `export default {
  name: 'ask-bash',
  apply(ctx) {
    ctx.on('tools/pre-execute', (execution, next) => execution.name === 'bash' ? { kind: 'ask', reason: 'bash needs approval' } : next())
  },
}
`)
  const patch = join(folder, 'patch.yml')
  writeFileSync(patch, JSON.stringify([{ insert: [{ id: 'ask-bash', name: plugin }] }]))
  return patch
}
