/**
 * The home folder holds credentials and session logs: an existing `$DSH_HOME` that others can
 * read or enter is tightened to 0700 on start, and the user is told once.
 */
import { chmodSync, statSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { runDsh, tempHome } from '../../test-support/run-dsh.js'

describe('$DSH_HOME modes', () => {
  it('an existing home folder with loose modes (0755) is tightened to 0700 with one stderr line', async () => {
    const { home, cwd } = tempHome()
    chmodSync(home, 0o755)
    const result = await runDsh(['sessions'], { cwd, env: { DSH_HOME: home } })
    expect(result.code).toBe(0)
    expect(statSync(home).mode & 0o777).toBe(0o700)
    const lines = result.stderr.trimEnd().split('\n')
    expect(lines).toHaveLength(1)
    expect(lines[0]).toContain(home)
    expect(lines[0]).toMatch(/0755.*0700/)
    const again = await runDsh(['sessions'], { cwd, env: { DSH_HOME: home } })
    expect(again.stderr).toBe('')
  })
})
