/**
 * Workspace instructions are recorded in the session log (the request is a pure function of the
 * log): a baseline message at the first step, then one message per step in which a file on disk
 * differs from what the log recorded; a session continued from elsewhere reads its own folder.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs'
import { execFileSync } from 'node:child_process'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createHash } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { loopHarness, type LoopHarness, type LoopHarnessOptions } from '../../test-support/agent-harness.js'
import { CodeModePlugin } from '../code-mode/index.js'
import { CommandsPlugin } from '../commands/index.js'
import { text, toolCalls } from '../../test-support/scripted-model.js'
import type { UserMessage } from '../llm/types.js'
import { currentInstructionFiles, foldInstructions, InstructionFileCache, WorkspaceInstructionsPlugin, type InstructionsSource } from './index.js'

const sha1 = (text: string) => createHash('sha1').update(text).digest('hex')

function workspace(): string {
  const root = mkdtempSync(join(tmpdir(), 'dsh-instructions-'))
  mkdirSync(join(root, '.git'))
  return root
}

const instructionMessages = (events: readonly { type: string; data: unknown }[]) => events
  .filter(e => e.type === 'user/message' && (e.data as UserMessage).source.kind === ('agent-instructions' as never))
  .map(e => e.data as unknown as { content: UserMessage['content']; source: InstructionsSource })

describe('workspace instructions in the log', () => {
  it('Y-1: the first step records a baseline message of every file from the project root down to the folder, general first, after the prompt', async () => {
    const root = workspace()
    const cwd = join(root, 'pkg')
    mkdirSync(cwd)
    writeFileSync(join(root, 'AGENTS.md'), 'ROOT_RULE\n')
    writeFileSync(join(cwd, 'CLAUDE.md'), 'PKG_RULE\n')
    const h = await loopHarness({ cwd, responses: [text('one'), text('two')], setup: async (ctx) => { await ctx.plugin(WorkspaceInstructionsPlugin, {}).await() } })
    try {
      h.agent.followup('hello')
      await h.agent.whenIdle()
      const [baseline, ...rest] = instructionMessages(h.session.events)
      expect(rest).toEqual([])
      expect(baseline!.source).toMatchObject({ baseline: true, changes: [
        { action: 'set', scope: '.\u0000AGENTS.md', path: 'AGENTS.md', digest: sha1('ROOT_RULE\n') },
        { action: 'set', scope: 'pkg\u0000CLAUDE.md', path: 'pkg/CLAUDE.md', digest: sha1('PKG_RULE\n') },
      ] })
      const shown = baseline!.content.map(block => block.type === 'text' ? block.text : '').join('\n')
      expect(shown.indexOf('ROOT_RULE')).toBeLessThan(shown.indexOf('PKG_RULE'))
      const messages = h.session.events.filter(e => e.type === 'user/message').map(e => (e.data as UserMessage).source.kind)
      expect(messages.slice(0, 2)).toEqual(['user', 'agent-instructions'])
      // The model saw it.
      expect(JSON.stringify(h.model.requests[0])).toContain('PKG_RULE')

      // Nothing changed: the next turn adds nothing.
      h.agent.followup('again')
      await h.agent.whenIdle()
      expect(instructionMessages(h.session.events)).toHaveLength(1)
    } finally {
      await h.dispose()
      rmSync(root, { recursive: true, force: true })
    }
  })

  it('Y-1: a file edited, added or removed between turns is recorded as one message naming each change; nothing is repeated', async () => {
    const root = workspace()
    writeFileSync(join(root, 'AGENTS.md'), 'OLD_RULE')
    const h = await loopHarness({ cwd: root, responses: [text('one'), text('two'), text('three')], setup: async (ctx) => { await ctx.plugin(WorkspaceInstructionsPlugin, {}).await() } })
    try {
      h.agent.followup('first')
      await h.agent.whenIdle()
      writeFileSync(join(root, 'AGENTS.md'), 'NEW_RULE')
      h.agent.followup('second')
      await h.agent.whenIdle()
      const [, update] = instructionMessages(h.session.events)
      expect(update!.source).toEqual({ kind: 'agent-instructions', form: 'instructions', changes: [{ action: 'replace', scope: '.\u0000AGENTS.md', path: 'AGENTS.md', digest: sha1('NEW_RULE') }] })
      expect(JSON.stringify(update!.content)).toContain('NEW_RULE')
      expect(JSON.stringify(update!.content)).not.toContain('OLD_RULE')
      rmSync(join(root, 'AGENTS.md'))
      h.agent.followup('third')
      await h.agent.whenIdle()
      const last = instructionMessages(h.session.events).at(-1)!
      expect(last.source.changes).toEqual([{ action: 'remove', scope: '.\u0000AGENTS.md', path: 'AGENTS.md' }])
      expect(foldInstructions(h.session.events).files.size).toBe(0)
    } finally {
      await h.dispose()
      rmSync(root, { recursive: true, force: true })
    }
  })

  it('the text of a file cannot close the element it is wrapped in', async () => {
    const root = workspace()
    writeFileSync(join(root, 'AGENTS.md'), 'before </workspace-instructions> after')
    const h = await loopHarness({ cwd: root, responses: [text('one')], setup: async (ctx) => { await ctx.plugin(WorkspaceInstructionsPlugin, {}).await() } })
    try {
      h.agent.followup('hello')
      await h.agent.whenIdle()
      const shown = instructionMessages(h.session.events)[0]!.content.map(block => block.type === 'text' ? block.text : '').join('\n')
      expect(shown.match(/<\/workspace-instructions>/g)).toHaveLength(1)
      expect(shown).toContain('before <\\/workspace-instructions> after')
    } finally {
      await h.dispose()
      rmSync(root, { recursive: true, force: true })
    }
  })

  it('Y-1: a folder below the working folder that a tool reads from adds its AGENTS.md at the next step, once', async () => {
    const root = workspace()
    mkdirSync(join(root, 'nested', 'deeper'), { recursive: true })
    writeFileSync(join(root, 'AGENTS.md'), 'ROOT_RULE')
    writeFileSync(join(root, 'nested', 'AGENTS.md'), 'NESTED_RULE')
    writeFileSync(join(root, 'nested', 'deeper', 'task.txt'), 'task')
    const read = { type: 'object', properties: { file_path: { type: 'string' } } }
    const h = await loopHarness({
      cwd: root,
      tools: [{ name: 'read', description: 'read', parameters: read, execute: () => ({ content: [{ type: 'text', text: 'task' }] }) }],
      responses: [toolCalls([{ id: 'c1', name: 'read', arguments: '{"file_path":"nested/deeper/task.txt"}' }]), toolCalls([{ id: 'c2', name: 'read', arguments: '{"file_path":"nested/deeper/task.txt"}' }]), text('done')],
      setup: async (ctx) => { await ctx.plugin(WorkspaceInstructionsPlugin, {}).await() },
    })
    try {
      h.agent.followup('go')
      await h.agent.whenIdle()
      const messages = instructionMessages(h.session.events)
      expect(messages.map(m => m.source.changes.map(c => c.path))).toEqual([['AGENTS.md'], ['nested/AGENTS.md']])
      expect(messages[1]!.source).toMatchObject({ changes: [{ action: 'set', scope: 'nested\u0000AGENTS.md', digest: sha1('NESTED_RULE') }] })
      expect(messages[1]!.source.baseline).toBeUndefined()
      // It reached the model at step 2, not step 1.
      expect(JSON.stringify(h.model.requests[0])).not.toContain('NESTED_RULE')
      expect(JSON.stringify(h.model.requests[1])).toContain('NESTED_RULE')
    } finally {
      await h.dispose()
      rmSync(root, { recursive: true, force: true })
    }
  })

  it('Y-1: a code-mode program\'s inner read below the working folder adds that folder\'s AGENTS.md at the next step', async () => {
    const root = workspace()
    mkdirSync(join(root, 'nested'), { recursive: true })
    writeFileSync(join(root, 'AGENTS.md'), 'ROOT_RULE')
    writeFileSync(join(root, 'nested', 'AGENTS.md'), 'NESTED_RULE')
    writeFileSync(join(root, 'nested', 'task.txt'), 'task')
    const read = { type: 'object', properties: { file_path: { type: 'string' } }, required: ['file_path'] }
    const program = JSON.stringify({ code: "return await tools.read({ file_path: 'nested/task.txt' })", description: 'read' })
    const h = await loopHarness({
      cwd: root,
      tools: [{ name: 'read', description: 'read', parameters: read, execute: () => ({ content: [{ type: 'text', text: 'task' }] }) }],
      responses: [toolCalls([{ id: 'c1', name: 'run_code', arguments: program }]), text('done')],
      setup: async (ctx) => {
        await ctx.plugin(WorkspaceInstructionsPlugin, {}).await()
        await ctx.plugin(CodeModePlugin, { mode: 'code', runtime: 'worker' }).await()
      },
    })
    try {
      h.agent.followup('go')
      await h.agent.whenIdle()
      expect(h.session.events.filter(e => e.type === 'tool/code-dispatch').map(e => (e.data as { isError: boolean }).isError)).toEqual([false])
      expect(instructionMessages(h.session.events).map(m => m.source.changes.map(c => c.path))).toEqual([['AGENTS.md'], ['nested/AGENTS.md']])
      expect(JSON.stringify(h.model.requests[0])).not.toContain('NESTED_RULE')
      expect(JSON.stringify(h.model.requests[1])).toContain('NESTED_RULE')
    } finally {
      await h.dispose()
      rmSync(root, { recursive: true, force: true })
    }
  })

  it('an AGENTS.md that is not a regular file (a FIFO) is skipped without blocking the step', async () => {
    const root = workspace()
    execFileSync('mkfifo', [join(root, 'AGENTS.md')])
    writeFileSync(join(root, 'CLAUDE.md'), 'CLAUDE_RULE')
    const h = await loopHarness({ cwd: root, responses: [text('one')], setup: async (ctx) => { await ctx.plugin(WorkspaceInstructionsPlugin, {}).await() } })
    try {
      h.agent.followup('hello')
      await h.agent.whenIdle()
      expect(instructionMessages(h.session.events).map(m => m.source.changes.map(c => c.path))).toEqual([['CLAUDE.md']])
    } finally {
      await h.dispose()
      rmSync(root, { recursive: true, force: true })
    }
  })
})

describe('Claude Code\'s user CLAUDE.md (#44.3)', () => {
  it('Y-1: ~/.claude/CLAUDE.md is a user-wide file after dsh\'s own home file, before the project\'s; its AGENTS.md is not read', async () => {
    const root = workspace()
    const home = mkdtempSync(join(tmpdir(), 'dsh-home-'))
    const claudeHome = mkdtempSync(join(tmpdir(), 'dsh-claude-'))
    writeFileSync(join(home, 'AGENTS.md'), 'DSH_HOME_RULE')
    writeFileSync(join(claudeHome, 'CLAUDE.md'), 'CLAUDE_USER_RULE')
    writeFileSync(join(claudeHome, 'AGENTS.md'), 'NOT_READ')
    writeFileSync(join(root, 'AGENTS.md'), 'PROJECT_RULE')
    try {
      const files = await currentInstructionFiles(root, { home, claudeHome }, [])
      expect(files.map(file => [file.scope, file.text])).toEqual([['~\u0000AGENTS.md', 'DSH_HOME_RULE'], ['~claude\u0000CLAUDE.md', 'CLAUDE_USER_RULE'], ['.\u0000AGENTS.md', 'PROJECT_RULE']])
      expect(files[1]!.path).toBe(join(claudeHome, 'CLAUDE.md'))
    } finally {
      for (const dir of [root, home, claudeHome]) rmSync(dir, { recursive: true, force: true })
    }
  })
})

describe('instruction files read through the cache', () => {
  it('Y-1: with the cache, an edit that keeps the size, an added file and a removed one give what a fresh read gives', async () => {
    const root = workspace()
    const cache = new InstructionFileCache(() => Date.now() + 60_000)
    // Each change gets its own explicit mtime (edits at different moments); changes within one
    // clock tick are the racy window's job (next test).
    let tick = 1_000_000
    const write = (path: string, text: string) => { writeFileSync(path, text); tick += 10; utimesSync(path, tick, tick) }
    const both = async () => {
      const cached = await currentInstructionFiles(root, {}, [], cache)
      expect(cached).toEqual(await currentInstructionFiles(root, {}, []))
      return cached.map(file => `${file.path}=${file.text}`)
    }
    write(join(root, 'AGENTS.md'), 'rule one')
    expect(await both()).toEqual(['AGENTS.md=rule one'])
    expect(cache.files.size).toBe(1)
    expect(await both()).toEqual(['AGENTS.md=rule one'])
    write(join(root, 'AGENTS.md'), 'rule two')
    expect(await both()).toEqual(['AGENTS.md=rule two'])
    rmSync(join(root, 'AGENTS.md'))
    write(join(root, 'CLAUDE.md'), 'claude rules')
    expect(await both()).toEqual(['CLAUDE.md=claude rules'])
    rmSync(join(root, 'CLAUDE.md'))
    expect(await both()).toEqual([])
  })

  it('Y-1: a file changed within the racy window is read again, never kept', async () => {
    const root = workspace()
    writeFileSync(join(root, 'AGENTS.md'), 'fresh')
    const cache = new InstructionFileCache()
    expect((await currentInstructionFiles(root, {}, [], cache)).map(file => file.text)).toEqual(['fresh'])
    expect(cache.files.size).toBe(0)
  })
})

/** A loop in `root` with the command registry and this plugin (so `/init` is registered). */
function initHarness(root: string, options: Omit<LoopHarnessOptions, 'cwd' | 'setup'>) {
  return loopHarness({ ...options, cwd: root, setup: async (ctx) => {
    await ctx.plugin(CommandsPlugin).await()
    await ctx.plugin(WorkspaceInstructionsPlugin, {}).await()
  } })
}

/** The text of the session's first user message (the prompt `/init` queued). */
const firstPrompt = (h: LoopHarness) => (h.of('user/message')[0]!.data.content[0] as { text: string }).text

describe('/init', () => {
  it('queues a turn asking the model to write (or improve) AGENTS.md at the workspace root, with what the user added; the file it writes is the next step\'s instructions', async () => {
    const root = workspace()
    // A stand-in for the write tool: what the model writes lands in the workspace.
    const write = { type: 'object', properties: { file_path: { type: 'string' }, content: { type: 'string' } } }
    const h = await initHarness(root, {
      tools: [{ name: 'write', description: 'write', parameters: write, execute: (args: { file_path: string; content: string }) => {
        writeFileSync(join(root, args.file_path), args.content)
        return { content: [{ type: 'text' as const, text: 'written' }] }
      } }],
      responses: [
        toolCalls([{ id: 'w1', name: 'write', arguments: JSON.stringify({ file_path: 'AGENTS.md', content: 'Run tests with npm test.\n' }) }]),
        text('Wrote AGENTS.md.'),
      ],
    })
    try {
      expect(h.ctx.commands.list(h.agent.scope).map(command => command.name)).toContain('init')
      const outcome = await h.ctx.commands.execute(h.agent, '/init mention the fixtures folder')
      expect(outcome).toMatchObject({ kind: 'prompt' })
      await h.agent.whenIdle()
      const prompt = firstPrompt(h)
      expect(prompt).toContain('AGENTS.md')
      expect(prompt).toMatch(/test/i)
      expect(prompt).toContain('mention the fixtures folder')
      // The model's write landed, and the next step was given the new file.
      expect(readFileSync(join(root, 'AGENTS.md'), 'utf8')).toBe('Run tests with npm test.\n')
      expect(instructionMessages(h.session.events).map(message => message.source.changes.map(change => change.path))).toEqual([['AGENTS.md']])
    } finally {
      await h.dispose()
      rmSync(root, { recursive: true, force: true })
    }
  })

  it('says so when an AGENTS.md or CLAUDE.md already exists: improve it rather than start over', async () => {
    const root = workspace()
    writeFileSync(join(root, 'CLAUDE.md'), 'OLD_RULES\n')
    const h = await initHarness(root, { responses: [text('ok')] })
    try {
      await h.ctx.commands.execute(h.agent, '/init')
      await h.agent.whenIdle()
      expect(firstPrompt(h)).toContain('CLAUDE.md already exists')
    } finally {
      await h.dispose()
      rmSync(root, { recursive: true, force: true })
    }
  })
})
