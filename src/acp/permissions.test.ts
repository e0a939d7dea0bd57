import { describe, expect, it } from 'vitest'
import { permissionOptions, permissionToolCall } from './permissions.js'

const command = `cd /tmp && python3 -c 'import sys; print(sys.version)' && ${'echo building the project now && '.repeat(6)}touch /outside/file`

describe('ACP permission requests show the whole command (#44.2)', () => {
  it('the tool call carries the command in full, never cut, with its folder and what it asks for, as text content', () => {
    const toolCall = permissionToolCall({
      id: 'a1', sessionId: 's1', toolName: 'bash', callId: 'c1', reason: 'escalate sandbox to danger-full-access: needs it',
      arguments: JSON.stringify({ command, sandbox_permissions: 'danger-full-access', justification: 'needs it' }), cwd: '/work/project',
      askedBy: { text: 'Bash(touch:*)', kind: 'ask', source: 'user settings' },
    }, '/work/project')
    expect(toolCall.content).toEqual([{ type: 'content', content: { type: 'text', text:
      `$ ${command}\nin /work/project\nescalate sandbox to danger-full-access: needs it\nasked by the permission rule Bash(touch:*) (user settings)` } }])
    expect(toolCall.rawInput).toMatchObject({ command })
  })

  it('options name the rule a wider grant adds; without scopes they are exactly allow once and reject', () => {
    expect(permissionOptions(undefined, 'Bash(git push:*)').map(option => option.optionId)).toEqual(['allow-once', 'reject-once'])
    expect(permissionOptions(['session', 'always'], 'Bash(git push:*)').map(option => option.name))
      .toEqual(['Allow once', 'Allow Bash(git push:*) for this session', 'Always allow Bash(git push:*) (add to settings)', 'Reject'])
  })
})
