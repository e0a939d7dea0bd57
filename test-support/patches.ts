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

/** The proxy's reason for a host outside `sandbox.allowedHosts` (as the network proxy words it). */
export const NETWORK_REASON = (host: string) => `connect to ${host}:443 (not in sandbox.allowedHosts)`

/**
 * A plugin file with a `fetch_host {host}` tool that asks approval as the network proxy does
 * (`toolName: 'network'`, `scopes: ['session', 'always']`; none with `scoped: false`) and answers the model with the outcome
 * (`network approval: allowed-session`): a stand-in for the proxy, so surfaces can be driven with
 * wider grants before it exists. Returns the plugin's path (`askNetworkPatch` wraps it in a patch).
 */
export function askNetworkPlugin(): string {
  const folder = mkdtempSync(join(tmpdir(), 'dsh-ask-network-plugin-'))
  const plugin = join(folder, 'ask-network.mjs')
  writeFileSync(plugin, `export default {
  name: 'ask-network',
  apply(ctx) {
    ctx.inject(['tools', 'approval'], (ctx) => {
      ctx.tools.register({
        name: 'fetch_host',
        description: 'Connect to a host (asks as the network proxy does)',
        parameters: { type: 'object', properties: { host: { type: 'string' }, scoped: { type: 'boolean' } }, required: ['host'] },
        async execute(args, context) {
          const outcome = await ctx.approval.request({
            session: context.session, toolName: 'network', callId: context.callId, signal: context.signal,
            reason: ${JSON.stringify(NETWORK_REASON('HOST'))}.replace('HOST', args.host), ...(args.scoped === false ? {} : { scopes: ['session', 'always'] }),
          })
          return { content: [{ type: 'text', text: 'network approval: ' + outcome }] }
        },
      })
    })
  },
}
`)
  return plugin
}

/** A patch inserting `askNetworkPlugin()`; returns the patch's path. */
export function askNetworkPatch(): string {
  const plugin = askNetworkPlugin()
  const patch = join(plugin, '..', 'patch.yml')
  writeFileSync(patch, JSON.stringify([{ insert: [{ id: 'ask-network', name: plugin }] }]))
  return patch
}

/**
 * A patch turning model-written session titles off: titles then come from the first message,
 * and a title request cannot take the next scripted answer. Returns the patch's path.
 */
export function noTitlePatch(): string {
  const path = join(mkdtempSync(join(tmpdir(), 'dsh-tui-patch-')), 'no-title.yml')
  writeFileSync(path, '- id: session-title\n  config:\n    llm: false\n')
  return path
}
