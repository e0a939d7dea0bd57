/**
 * The terminal approval box (approval-box.tsx) and the status bar's permission part (status.ts),
 * without a terminal: what the box shows, which keys answer what, and what the status says.
 */
import { createElement as h } from 'react'
import { renderToString } from 'ink'
import { describe, expect, it } from 'vitest'
import { loopHarness } from '../../test-support/agent-harness.js'
import { ApprovalPlugin } from '../approval/service.js'
import { ApprovalBox, approvalChoices, approvalKey, approvalLayout, scrollKey } from './approval-box.js'
import { permissionLabel } from './status.js'
import type { ApprovalPrompt } from './store.js'

const plain = (text: string) => text.replace(/\x1b\[[0-9;]*m/g, '')
const draw = (approval: ApprovalPrompt, columns = 80, folder = '/work/project', rows = 24, offset = 0) =>
  plain(renderToString(h(ApprovalBox, { approval, folder, width: columns, rows, offset }), { columns }))
const none = { return: false, escape: false, ctrl: false }

const escalation: ApprovalPrompt = { id: 'a1', toolName: 'bash', reason: 'escalate sandbox to danger-full-access: needs the network', arguments: '{"command":"curl x"}', answer() {} }
const host: ApprovalPrompt = { id: 'a2', toolName: 'network', reason: 'connect to registry.example.org:443 (not in sandbox.allowedHosts)', scopes: ['session', 'always'], answer() {} }

const keyUse: ApprovalPrompt = {
  id: 'k1', toolName: 'DEEPSEEK_API_KEY', reason: 'the stored DEEPSEEK_API_KEY is sent to a new endpoint',
  keyUse: { keyName: 'DEEPSEEK_API_KEY', endpoint: 'https://gateway.example.org/a/very/long/path/that/does/not/fit/on/one/line/of/eighty/columns', chosenBy: 'DEEPSEEK_BASE_URL from /repo/.env' },
  answer() {},
}

describe('terminal approval box', () => {
  it('a stored key\'s first use: the endpoint in full and who chose it; y sends, n, Esc and Ctrl-C do not, Enter does nothing', () => {
    const box = draw(keyUse)
    expect(box).toContain('Send your stored DEEPSEEK_API_KEY to a new endpoint?')
    expect(box.replace(/[│\s]+/g, '')).toContain(keyUse.keyUse!.endpoint)
    expect(box.replace(/[│\s]+/g, ' ')).toContain('It has not been sent there before. DEEPSEEK_BASE_URL from /repo/.env chose it.')
    expect(approvalKey(keyUse, 'y', none)).toBe('allowed-once')
    for (const [input, key] of [['n', none], ['', { ...none, escape: true }], ['c', { ...none, ctrl: true }]] as const) expect(approvalKey(keyUse, input, key)).toBe('rejected')
    expect(approvalKey(keyUse, '', { ...none, return: true })).toBeUndefined()
    expect(approvalKey(keyUse, 'a', none)).toBeUndefined()
  })

  it('without scopes shows exactly today\'s choices, and only y, Enter, n, Esc and Ctrl-C answer', () => {
    const box = draw(escalation)
    expect(box).toContain('Allow bash?')
    expect(box).toContain('│ y allow once · n reject')
    expect(box).not.toMatch(/this session|always/)
    expect(approvalKey(escalation, 'y', none)).toBe('allowed-once')
    expect(approvalKey(escalation, 'Y', none)).toBe('allowed-once')
    expect(approvalKey(escalation, '', { ...none, return: true })).toBe('allowed-once')
    expect(approvalKey(escalation, 'n', none)).toBe('rejected')
    expect(approvalKey(escalation, '', { ...none, escape: true })).toBe('rejected')
    expect(approvalKey(escalation, 'c', { ...none, ctrl: true })).toBe('rejected')
    // The wider grants are not on offer: their keys do nothing (the seam would fail them closed).
    expect(approvalKey(escalation, 's', none)).toBeUndefined()
    expect(approvalKey(escalation, 'a', none)).toBeUndefined()
    expect(approvalKey(escalation, 'x', none)).toBeUndefined()
  })

  it('with scopes offers s for this session and a always (add to settings), on one line at 80 columns', () => {
    const box = draw(host)
    expect(box).toContain('Allow network?')
    expect(box).toContain('connect to registry.example.org:443 (not in sandbox.allowedHosts)')
    const keys = box.split('\n').find(line => line.includes('allow once'))
    expect(keys).toBe('│ y allow once · s for this session · a always (add to settings) · n reject    │')
    expect(approvalKey(host, 's', none)).toBe('allowed-session')
    expect(approvalKey(host, 'S', none)).toBe('allowed-session')
    expect(approvalKey(host, 'a', none)).toBe('allowed-always')
    expect(approvalKey(host, 'y', none)).toBe('allowed-once')
    expect(approvalKey(host, 'n', none)).toBe('rejected')
  })

  it('offers only the scopes the request names, session before always', () => {
    expect(approvalChoices(['always']).map(choice => choice.key)).toEqual(['y', 'a', 'n'])
    expect(approvalChoices(['always', 'session']).map(choice => choice.key)).toEqual(['y', 's', 'a', 'n'])
    expect(approvalKey({ scopes: ['session'] }, 'a', none)).toBeUndefined()
    expect(draw({ ...host, scopes: ['session'] })).toContain('y allow once · s for this session · n reject')
  })
})

describe('status bar permission part', () => {
  it('shows the network mode after the preset when it is not full, and none under danger-full-access', async () => {
    const h = await loopHarness({ setup: async (ctx) => { await ctx.plugin(ApprovalPlugin).await() } })
    const { approval } = h.ctx
    expect(permissionLabel(approval, h.session)).toBe('workspace-write')
    approval.setNetwork(h.session, 'allowlist')
    expect(permissionLabel(approval, h.session)).toBe('workspace-write · net allowlist')
    approval.setNetwork(h.session, 'none')
    approval.setPolicy(h.session, 'never')
    expect(permissionLabel(approval, h.session)).toBe('workspace-write, never · net none')
    approval.selectPreset(h.session, 'danger-full-access')
    expect(permissionLabel(approval, h.session)).toBe('danger-full-access')
    await h.dispose()
  })
})

describe('the whole command before approval (#44.2)', () => {
  it('a long escalated command shows in full, wrapped at 80 columns, its end included; other arguments one per line; the folder in the title', () => {
    const command = 'cd /work/project && python3 -c \'import sys; print(sys.version)\' && npm run build --workspaces --if-present && touch /etc/outside-the-workspace'
    const approval: ApprovalPrompt = { id: 'a3', toolName: 'bash', reason: 'escalate sandbox to danger-full-access: needs to write outside the workspace', arguments: JSON.stringify({ command, description: 'build', sandbox_permissions: 'require_escalated' }), answer() {} }
    const box = draw(approval, 80)
    expect(box.split('\n')[1]).toContain('Allow bash? in /work/project')
    // Joined back across the wrapped rows, the command is all there, the touch at its end too.
    const body = box.split('\n').map(line => line.replace(/^│ ?|\s*│$/g, '')).join(' ').replace(/\s+/g, ' ')
    expect(body).toContain(`$ ${command}`)
    expect(body).toContain('description: build')
    expect(body).toContain('sandbox_permissions: require_escalated')
    // No line is cut with an ellipsis, and no row is wider than the terminal.
    expect(box).not.toContain('…')
    expect(Math.max(...box.split('\n').map(line => line.length))).toBeLessThanOrEqual(80)
  })
})

describe('a command taller than the screen scrolls, and is allowed only once its end was shown (#44.2)', () => {
  const command = [...Array.from({ length: 30 }, (_, i) => `echo step ${i + 1}`), 'touch /outside/file'].join(' &&\n')
  const tall: ApprovalPrompt = { id: 'a9', toolName: 'bash', reason: 'escalate sandbox to danger-full-access: build', arguments: JSON.stringify({ command }), scopes: ['session'], grants: 'Bash(echo step:*)', answer() {} }

  it('shows a window of the lines, says which, and the end after scrolling to it', () => {
    const layout = approvalLayout(tall, 80, 24)
    expect(layout.lines).toHaveLength(31)
    expect(layout.window).toBe(9)
    const top = draw(tall, 80, '/work/project', 24, 0)
    expect(top).toContain('lines 1–9 of 31 · ↑↓ PgUp PgDn scroll · y works once you have seen the end')
    expect(top).toContain('$ echo step 1 &&')
    expect(top).not.toContain('touch /outside/file')
    const end = scrollKey(layout, 0, { end: true })!
    expect(end).toBe(22)
    const bottom = draw(tall, 80, '/work/project', 24, end)
    expect(bottom).toContain('touch /outside/file')
    expect(bottom).toContain('lines 23–31 of 31 · ↑↓ PgUp PgDn scroll')
    expect(bottom).not.toContain('y works once')
    expect(scrollKey(layout, 5, { downArrow: true })).toBe(6)
    expect(scrollKey(layout, 0, { upArrow: true })).toBe(0)
    expect(scrollKey(layout, 0, { pageDown: true })).toBe(8)
    expect(scrollKey(approvalLayout(escalation, 80, 24), 0, { downArrow: true })).toBeUndefined()
  })

  it('until the end was on screen only a rejection answers', () => {
    expect(approvalKey(tall, 'y', none, true)).toBeUndefined()
    expect(approvalKey(tall, '', { ...none, return: true }, true)).toBeUndefined()
    expect(approvalKey(tall, 's', none, true)).toBeUndefined()
    expect(approvalKey(tall, 'n', none, true)).toBe('rejected')
    expect(approvalKey(tall, '', { ...none, escape: true }, true)).toBe('rejected')
    expect(approvalKey(tall, 'y', none, false)).toBe('allowed-once')
    expect(approvalKey(tall, 's', none, false)).toBe('allowed-session')
  })

  it('names the rule s would add', () => {
    expect(draw(tall, 80, '/work/project', 24, 22)).toContain('s add the rule Bash(echo step:*)')
  })
})
