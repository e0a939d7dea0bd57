/**
 * The drawing warm-up (`warmDrawing`) runs the code a first turn's frames run: its sample turn
 * must draw every kind of item a turn shows, or the warm-up leaves that code cold.
 */
import { describe, expect, it } from 'vitest'
import { drawSampleTurn } from './view.js'

describe('drawing warm-up', () => {
  it('the sample turn draws a prompt, a reasoning line, a bash card with output, Markdown (heading, list, code) and the summary', () => {
    const drawn = drawSampleTurn(80).replace(/\x1b\[[0-9;]*m/g, '')
    expect(drawn).toContain('› look at the build')
    expect(drawn).toMatch(/▸ thought · 2 words/)
    expect(drawn).toMatch(/✓ \$ ls · exit 0\n\s+a\n\s+b/)
    expect(drawn).toMatch(/^Done$/m)
    expect(drawn).toMatch(/• one two/)
    expect(drawn).toMatch(/│ const x = 1/)
    expect(drawn).toMatch(/── 2 steps · 1\.2k in · 40 out · 1\.5s/)
    expect(drawSampleTurn(40).split('\n').every(line => line.replace(/\x1b\[[0-9;]*m/g, '').length <= 40)).toBe(true)
  })
})
