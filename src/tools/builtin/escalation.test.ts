import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { homedir, tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { loopHarness, type LoopHarness } from '../../../test-support/agent-harness.js'
import { text, toolCalls } from '../../../test-support/scripted-model.js'
import type { ApprovalAnswer } from '../../approval/api.js'
import { ApprovalPlugin, type ApprovalConfig } from '../../approval/service.js'
import { bwrapRunner, probeRunner } from '../../sandbox/runner.js'
import { SandboxPlugin } from '../../sandbox/service.js'
import { BuiltinToolsPlugin } from './index.js'

const bwrap = await probeRunner(bwrapRunner(), { root: '/', timeoutMs: 10_000 })
if (bwrap !== undefined) console.warn(`skipping the bubblewrap escalation test: ${bwrap} (install the Debian package bubblewrap)`)

let root: string
let outside: string
beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), 'dsh-escalation-root-'))
  outside = mkdtempSync(join(homedir(), '.dsh-escalation-outside-'))
})
afterAll(() => {
  rmSync(root, { recursive: true, force: true })
  rmSync(outside, { recursive: true, force: true })
})

async function harness(name: string, args: Record<string, unknown>, approval: ApprovalConfig, answer?: ApprovalAnswer): Promise<LoopHarness> {
  const h = await loopHarness({
    cwd: root,
    responses: [toolCalls([{ id: 'c1', name, arguments: args }]), text('done')],
    setup: async (ctx) => {
      await ctx.plugin(ApprovalPlugin, approval).await()
      await ctx.plugin(SandboxPlugin).await()
      await ctx.plugin(BuiltinToolsPlugin).await()
      if (answer !== undefined) ctx.approval.answerer(() => answer)
    },
  })
  h.agent.followup([{ type: 'text', text: 'go' }])
  await h.agent.whenIdle()
  return h
}

function result(h: LoopHarness): { text: string; isError: boolean; error?: unknown } {
  const event = h.of('tool/result')[0]!
  const data = event.data as unknown as { message: { content: [{ content: { text: string }[]; isError: boolean }] }; error?: unknown }
  const block = data.message.content[0]
  return { text: block.content.map(c => c.text).join(''), isError: block.isError, ...(data.error !== undefined ? { error: data.error } : {}) }
}

const asked = (h: LoopHarness) => h.of('approval/asked').map(e => (e.data as { reason: string }).reason)

describe('escalation (SB-5, SB-6)', () => {
  it('SB-6: sandbox_permissions and justification are in the bash/write/edit schemas only while a sandbox is mounted', async () => {
    const plain = await loopHarness({ setup: async ctx => { await ctx.plugin(BuiltinToolsPlugin).await() } })
    for (const name of ['bash', 'write', 'edit']) {
      expect(Object.keys((plain.ctx.tools.get(name)!.parameters as { properties: object }).properties)).not.toContain('sandbox_permissions')
    }
    await plain.ctx.plugin(SandboxPlugin).await()
    for (const name of ['bash', 'write', 'edit']) {
      const properties = (plain.ctx.tools.get(name)!.parameters as { properties: Record<string, { enum?: string[] }> }).properties
      expect(properties.sandbox_permissions!.enum).toEqual(['workspace-write', 'danger-full-access'])
      expect(properties.justification).toBeDefined()
    }
    expect(plain.ctx.tools.get('bash')!.description).toContain('escalate immediately in the same turn')
    await plain.dispose()
  })

  it('SB-5: every invalid escalation is refused with its exact text, without asking', async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ sandbox_permissions: 'danger-full-access' }, 'Error: invalid escalation: sandbox_permissions requires a justification'],
      [{ justification: 'because' }, 'Error: invalid escalation: justification is only valid together with sandbox_permissions'],
      [{ sandbox_permissions: 'danger-full-access', justification: '   ' }, 'Error: invalid justification: expected a non-empty sentence'],
      [{ sandbox_permissions: 'workspace-write', justification: 'need it' }, 'Error: sandbox escalation to "workspace-write" is not strictly wider than this call\'s current "workspace-write" mode'],
    ]
    for (const [extra, expected] of cases) {
      const h = await harness('write', { file_path: 'x.txt', content: 'x', ...extra }, {}, 'allowed-once')
      expect(result(h).text).toBe(expected)
      expect(result(h).isError).toBe(true)
      expect(asked(h)).toEqual([])
      await h.dispose()
    }
  })

  it('SB-5: a rejected, cancelled or unanswered escalation has its exact text and the call does not run', async () => {
    const cases: [ApprovalAnswer | undefined, ApprovalConfig, string][] = [
      ['rejected', {}, 'Error: the user rejected escalating this operation to "danger-full-access"'],
      ['cancelled', {}, 'Error: approval for escalating to "danger-full-access" was cancelled'],
      [undefined, {}, 'Error: sandbox escalation to "danger-full-access" requires approval, but no approval channel is available'],
      ['allowed-once', { policy: 'never' }, 'Error: the user rejected escalating this operation to "danger-full-access"'],
    ]
    for (const [answer, config, expected] of cases) {
      const target = join(outside, `refused-${answer}-${config.policy}.txt`)
      const h = await harness('write', { file_path: target, content: 'x', sandbox_permissions: 'danger-full-access', justification: 'the user asked for it' }, config, answer)
      expect(result(h).text).toBe(expected)
      expect(asked(h)).toEqual(['escalate sandbox to danger-full-access: the user asked for it'])
      expect(existsSync(target)).toBe(false)
      await h.dispose()
    }
    const bash = await harness('bash', { command: 'true', description: 'd', sandbox_permissions: 'danger-full-access', justification: 'j' }, {}, 'rejected')
    expect(result(bash).text).toBe('Error: the user rejected escalating this command to "danger-full-access"')
    await bash.dispose()
  })

  it('FS_SANDBOX_DENIED: a denied write carries the marker and the hint; the approved retry writes that one file only', async () => {
    const target = join(outside, 'escalated.md')
    const denied = await harness('write', { file_path: target, content: 'x' }, {})
    expect(result(denied)).toMatchObject({
      isError: true,
      text: 'Error: [sandbox: file access denied under workspace-write mode]\n[sandbox: escalation available — retry this exact operation once with sandbox_permissions (the narrowest wider mode that suffices) + justification; the approval prompt asks the user]',
    })
    expect((denied.of('tool/result')[0]!.data as { error?: unknown }).error).toEqual({ name: 'FsError', code: 'FS_SANDBOX_DENIED' })
    await denied.dispose()
    const never = await harness('write', { file_path: target, content: 'x' }, { policy: 'never' })
    expect(result(never).text).toBe('Error: [sandbox: file access denied under workspace-write mode]')
    await never.dispose()
    const approved = await harness('write', { file_path: target, content: 'escalated', sandbox_permissions: 'danger-full-access', justification: 'the user asked to escalate this write' }, {}, 'allowed-once')
    expect(result(approved).isError).toBe(false)
    expect(readFileSync(target, 'utf8')).toBe('escalated')
    expect(approved.of('approval/decided').map(e => (e.data as { outcome: string }).outcome)).toEqual(['allowed-once'])
    // The grant was for that one call: the mode in force did not change.
    expect(approved.ctx.approval.mode(approved.session)).toBe('workspace-write')
    await approved.dispose()
  })

  it.skipIf(bwrap !== undefined)('SB-4/SB-5: bash denied under read-only shows marker + hint; the approved escalation runs that command wider', async () => {
    const target = join(root, 'bash-escalated.txt')
    const denied = await harness('bash', { command: `echo x > ${target}`, description: 'd' }, { mode: 'read-only' })
    expect(result(denied).text).toMatch(/\[sandbox: file access denied under read-only mode\]\n\[sandbox: escalation available — retry this exact command once with sandbox_permissions \(the narrowest wider mode that suffices\) \+ justification; the approval prompt asks the user\]\n\[exit code: 1\]$/)
    expect(result(denied).isError).toBe(false)
    await denied.dispose()
    const approved = await harness('bash', { command: `printf 'escalated\\n' > ${target} && cat ${target}`, description: 'd', sandbox_permissions: 'workspace-write', justification: 'write the file the user asked for' }, { mode: 'read-only' }, 'allowed-once')
    expect(result(approved).text).toBe('escalated\n')
    expect(asked(approved)).toEqual(['escalate sandbox to workspace-write: write the file the user asked for'])
    await approved.dispose()
  })

  it('security #42.3: write and edit refuse the agent\'s own configuration and git hooks inside the workspace; an approved escalation writes it', async () => {
    const hook = join(root, '.claude', 'settings.json')
    const denied = await harness('write', { file_path: hook, content: '{"hooks":{}}' }, {})
    expect(result(denied)).toMatchObject({
      isError: true,
      text: 'Error: [sandbox: file access denied under workspace-write mode]\n[sandbox: .claude/settings.json is protected (agent configuration: it can run code outside the sandbox); changing it needs the user\'s approval]\n[sandbox: escalation available — retry this exact operation once with sandbox_permissions (the narrowest wider mode that suffices) + justification; the approval prompt asks the user]',
    })
    expect(existsSync(hook)).toBe(false)
    await denied.dispose()
    const gitHook = await harness('write', { file_path: join(root, '.git', 'hooks', 'pre-commit'), content: '#!/bin/sh\n' }, {})
    expect(result(gitHook).text).toContain('.git/hooks/pre-commit is protected (git configuration and hooks')
    await gitHook.dispose()
    const approved = await harness('write', { file_path: hook, content: '{"hooks":{}}', sandbox_permissions: 'danger-full-access', justification: 'the user asked for this hook' }, {}, 'allowed-once')
    expect(result(approved).isError).toBe(false)
    expect(readFileSync(hook, 'utf8')).toBe('{"hooks":{}}')
    await approved.dispose()
  })
})
