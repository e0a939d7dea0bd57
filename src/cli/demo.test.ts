import { spawnSync } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { repoRoot, withoutSessionHint } from '../../test-support/run-dsh.js'
import { parseSessionFile } from '../session/codec.js'
import type { ToolResultMessage } from '../llm/types.js'

describe('npm run demo', () => {
  it('runs the real CLI offline: replayed model, real tools in a temp workspace, a persisted log', () => {
    const home = mkdtempSync(join(tmpdir(), 'dsh-demo-test-'))
    const run = spawnSync(process.execPath, [join(repoRoot, 'scripts', 'demo.mjs')], {
      env: { ...process.env, DSH_DEMO_HOME: home, DEEPSEEK_API_KEY: '' }, encoding: 'utf8',
    })
    expect(withoutSessionHint(run.stderr)).toBe('')
    expect(run.status).toBe(0)
    expect(run.stdout).toContain('7 lines in total.')
    const path = /session log: (.*)/.exec(run.stdout)![1]
    expect(existsSync(path)).toBe(true)
    const { events } = parseSessionFile(readFileSync(path, 'utf8'))
    expect(events.at(-1)).toMatchObject({ type: 'turn/end', data: { reason: { kind: 'completed' } } })
    // The tool output comes from really running bash in the workspace, not from the recording.
    const results = events.filter(e => e.type === 'tool/result').map(e => (e.data as { message: ToolResultMessage }).message.content[0])
    expect(results[0].content[0]).toMatchObject({ type: 'text', text: expect.stringMatching(/4 \.\/notes\.txt\n\s+3 \.\/src\/greet\.js\n\s+7 total/) })
    expect(results[1].isError).toBe(false)
  })
})
