/**
 * The catalogue row of permission rules. When no source holds a rule (no flag, no
 * `permissions` in the user's settings, no project settings or `.claude/settings*.json`), it
 * loads nothing at start-up: it registers a rule provider that loads the rules the first time an
 * approval is requested (to offer "for this session" and "always"), so a run that asks nothing
 * pays nothing. Otherwise the rules are read and checked at once (a bad rule stops the start).
 */
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import type { Context } from 'cordis'
import type { ApprovalRules, ApprovalService } from '../approval/api.js'
import type { PermissionsConfig } from './plugin.js'

const PROJECT_FILES = [join('.dsh', 'settings.yaml'), join('.claude', 'settings.json'), join('.claude', 'settings.local.json')]

function hasRules(config: PermissionsConfig): boolean {
  if ((config.flags?.allow?.length ?? 0) > 0 || (config.flags?.deny?.length ?? 0) > 0 || config.user !== undefined) return true
  return PROJECT_FILES.some(file => existsSync(join(config.root, file)))
}

export const PermissionsRow = {
  name: 'permissions',
  inject: ['approval'],
  async apply(ctx: Context, config: PermissionsConfig): Promise<void> {
    if (hasRules(config)) {
      const { PermissionRulesPlugin } = await import('./plugin.js')
      await ctx.plugin(PermissionRulesPlugin, config).await()
      return
    }
    let loaded: Promise<ApprovalRules> | undefined
    const rules = () => loaded ??= import('./plugin.js').then(({ PermissionRules }) => {
      const inner = new PermissionRules(ctx, config, false)
      return { ruling: request => inner.ruling(request), granted: (request, rule, scope) => inner.granted(request, rule, scope) }
    })
    ;(ctx.get('approval') as ApprovalService).rules({
      ruling: async request => (await rules()).ruling(request),
      granted: (request, rule, scope) => { void rules().then(inner => inner.granted(request, rule, scope)) },
    })
  },
}
