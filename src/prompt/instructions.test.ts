import { Context } from 'cordis'
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { DEFAULT_INSTRUCTIONS_BUDGET, InstructionsPlugin, loadInstructions } from './instructions.js'
import { SystemPromptPlugin } from './index.js'

let base: string
beforeEach(() => {
  base = mkdtempSync(join(tmpdir(), 'dsh-instructions-'))
})
afterEach(() => {
  rmSync(base, { recursive: true, force: true })
})

/** Lay out `<base>/repo/.git`, `<base>/repo/pkg/app` (cwd) and `<base>/home`. */
function layout() {
  const repo = join(base, 'repo')
  const cwd = join(repo, 'pkg', 'app')
  const home = join(base, 'home')
  mkdirSync(join(repo, '.git'), { recursive: true })
  mkdirSync(cwd, { recursive: true })
  mkdirSync(home, { recursive: true })
  return { repo, cwd, home }
}

describe('instructions (AGENTS.md / CLAUDE.md)', () => {
  it('reads home, then the folders from the git root down to cwd, general first', async () => {
    const { repo, cwd, home } = layout()
    writeFileSync(join(home, 'AGENTS.md'), 'USER RULES')
    writeFileSync(join(repo, 'AGENTS.md'), 'REPO RULES')
    writeFileSync(join(repo, 'pkg', 'CLAUDE.md'), 'PKG RULES')
    writeFileSync(join(cwd, 'AGENTS.md'), 'APP RULES')
    writeFileSync(join(cwd, 'CLAUDE.md'), 'APP CLAUDE RULES')
    const result = await loadInstructions({ cwd, home })
    expect(result.files).toEqual([
      join(home, 'AGENTS.md'),
      join(repo, 'AGENTS.md'),
      join(repo, 'pkg', 'CLAUDE.md'),
      join(cwd, 'AGENTS.md'),
      join(cwd, 'CLAUDE.md'),
    ])
    const positions = ['USER RULES', 'REPO RULES', 'PKG RULES', 'APP RULES', 'APP CLAUDE RULES'].map((t) => result.text.indexOf(t))
    expect(positions.every((p) => p >= 0)).toBe(true)
    expect([...positions].sort((a, b) => a - b)).toEqual(positions)
    expect(result.text).toContain(`## ${join(cwd, 'AGENTS.md')}\n\nAPP RULES`)
    expect(result.truncated).toEqual([])
  })

  it('stops at the git root: files above it are not read', async () => {
    const { cwd } = layout()
    writeFileSync(join(base, 'AGENTS.md'), 'ABOVE THE REPO')
    const result = await loadInstructions({ cwd })
    expect(result.text).toBe('')
    expect(result.files).toEqual([])
  })

  it('without a git root, walks up to the filesystem root', async () => {
    const cwd = join(base, 'plain', 'deep')
    mkdirSync(cwd, { recursive: true })
    writeFileSync(join(base, 'AGENTS.md'), 'FROM AN ANCESTOR')
    const result = await loadInstructions({ cwd })
    expect(result.files).toContain(join(base, 'AGENTS.md'))
    expect(result.text).toContain('FROM AN ANCESTOR')
  })

  it('a CLAUDE.md symlinked to AGENTS.md, or a repeated text, is included once', async () => {
    const { cwd, home } = layout()
    writeFileSync(join(cwd, 'AGENTS.md'), 'SAME RULES')
    symlinkSync(join(cwd, 'AGENTS.md'), join(cwd, 'CLAUDE.md'))
    writeFileSync(join(home, 'AGENTS.md'), 'SAME RULES\n')
    const result = await loadInstructions({ cwd, home })
    expect(result.files).toEqual([join(cwd, 'AGENTS.md')])
    expect(result.text.split('SAME RULES')).toHaveLength(2)
  })

  it('empty files are skipped and no files give an empty section', async () => {
    const { cwd, home } = layout()
    writeFileSync(join(cwd, 'AGENTS.md'), '  \n')
    expect((await loadInstructions({ cwd, home })).text).toBe('')
  })

  it('stays within the 64 KB default budget: the most specific file keeps its text, others are cut with a note', async () => {
    const { repo, cwd, home } = layout()
    writeFileSync(join(cwd, 'AGENTS.md'), 'APP RULES')
    writeFileSync(join(repo, 'AGENTS.md'), 'r'.repeat(50 * 1024))
    writeFileSync(join(home, 'AGENTS.md'), 'u'.repeat(50 * 1024))
    const result = await loadInstructions({ cwd, home })
    expect(DEFAULT_INSTRUCTIONS_BUDGET).toBe(64 * 1024)
    expect(Buffer.byteLength(result.text)).toBeLessThanOrEqual(64 * 1024)
    expect(result.text).toContain('APP RULES')
    expect(result.text).toContain('r'.repeat(50 * 1024))
    expect(result.truncated).toEqual([join(home, 'AGENTS.md')])
    expect(result.omitted).toEqual([])
    expect(result.text).toContain('[... cut to fit the instructions budget]')
    expect(result.text).toMatch(/exceed the 65536-byte budget: 1 file\(s\) cut short, 0 file\(s\) left out/)
    // Order is still general first.
    expect(result.text.indexOf('uuu')).toBeLessThan(result.text.indexOf('rrr'))
  })

  it('a file that does not fit at all is left out and named in the note', async () => {
    const { repo, cwd, home } = layout()
    writeFileSync(join(cwd, 'AGENTS.md'), 'a'.repeat(1500))
    writeFileSync(join(repo, 'AGENTS.md'), 'b'.repeat(1500))
    writeFileSync(join(home, 'AGENTS.md'), 'c'.repeat(1500))
    const result = await loadInstructions({ cwd, home, budget: 2500 })
    expect(Buffer.byteLength(result.text)).toBeLessThanOrEqual(2500)
    expect(result.text).toContain('a'.repeat(1500))
    expect(result.text).toContain('bbb')
    expect(result.truncated).toEqual([join(repo, 'AGENTS.md')])
    expect(result.omitted).toEqual([join(home, 'AGENTS.md')])
    expect(result.text).not.toContain('ccc')
    expect(result.text).toMatch(/1 file\(s\) cut short, 1 file\(s\) left out/)
  })

  it('cuts on a character boundary (no broken UTF-8)', async () => {
    const { cwd, home } = layout()
    writeFileSync(join(cwd, 'AGENTS.md'), 'x')
    writeFileSync(join(home, 'AGENTS.md'), '€'.repeat(2000))
    const result = await loadInstructions({ cwd, home, budget: 2000 })
    expect(Buffer.byteLength(result.text)).toBeLessThanOrEqual(2000)
    expect(result.text).not.toContain('\uFFFD')
    expect(result.truncated).toEqual([join(home, 'AGENTS.md')])
  })

  it('a bad budget is refused with a clear error', async () => {
    await expect(loadInstructions({ cwd: base, budget: 0 })).rejects.toThrow('instructions: budget must be an integer of at least 1024 bytes, got 0')
  })

  it('an unreadable entry is reported, not fatal', async () => {
    const { cwd } = layout()
    // A folder named AGENTS.md cannot be read as a file, even by root.
    mkdirSync(join(cwd, 'AGENTS.md'))
    writeFileSync(join(cwd, 'CLAUDE.md'), 'READABLE')
    const result = await loadInstructions({ cwd })
    expect(result.unreadable).toEqual([{ path: join(cwd, 'AGENTS.md'), reason: 'EISDIR' }])
    expect(result.text).toContain('READABLE')
  })

  it('InstructionsPlugin adds one "instructions" section after the persona, read once per load', async () => {
    const { cwd, home } = layout()
    writeFileSync(join(cwd, 'AGENTS.md'), 'FIRST')
    const root = new Context()
    await root.plugin(SystemPromptPlugin, { persona: 'PERSONA' })
    const fiber = root.plugin(InstructionsPlugin, { cwd, home })
    await fiber
    const first = (await root.systemPrompt.assemble()).system
    expect(first.indexOf('PERSONA')).toBeLessThan(first.indexOf('FIRST'))
    expect(first.endsWith('FIRST')).toBe(true)
    // Stable across steps: an edit is not picked up until the plugin reloads.
    writeFileSync(join(cwd, 'AGENTS.md'), 'SECOND')
    expect((await root.systemPrompt.assemble()).system).toBe(first)
    await fiber.dispose()
    expect((await root.systemPrompt.assemble()).system).not.toContain('FIRST')
    await root.plugin(InstructionsPlugin, { cwd, home })
    expect((await root.systemPrompt.assemble()).system).toContain('SECOND')
  })
})
