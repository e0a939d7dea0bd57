/**
 * Tool cards as the terminal app draws them.
 */
import { createElement as h } from 'react'
import { renderToString } from 'ink'
import { describe, expect, it } from 'vitest'
import { ToolCardView } from './cards.js'
import type { ToolCallView } from './fold.js'

const plain = (text: string) => text.replace(/\x1b\[[0-9;]*m/g, '')
const draw = (call: ToolCallView) => plain(renderToString(h(ToolCardView, { call, running: false }), { columns: 80 }))

function bash(exitCode: number | null, text: string, meta: Record<string, unknown> = {}): ToolCallView {
  return { id: 'b1', name: 'bash', arguments: JSON.stringify({ command: 'make test', description: 'run' }), result: { text, isError: false, meta: { exitCode, ...meta } } }
}

describe('bash card', () => {
  it('a command that exits non-zero is marked failed (✗), not done (✓), though the tool itself worked', () => {
    expect(draw(bash(0, 'all good\n'))).toMatch(/^✓ \$ make test · exit 0/)
    const failed = draw(bash(2, 'make: *** [test] Error 2\n[exit code: 2]\n'))
    expect(failed).toMatch(/^✗ \$ make test · exit 2/)
    expect(failed).toContain('Error 2')
    // The header already says how it exited.
    expect(failed).not.toContain('[exit code: 2]')
    expect(draw(bash(null, 'partial\n', { timedOut: true }))).toMatch(/^✗ \$ make test · timed out/)
  })
})
