/**
 * The terminal app's pure parts: the input editor, the conversation fold, launcher routing.
 */
import { describe, expect, it } from 'vitest'
import { backspace, commandAtCursor, controlPresses, down, emptyEditor, end, insert, mentionAtCursor, moveLeft, submit, up } from './editor.js'
import { ConversationFold, settled } from './fold.js'
import { parseLauncherArgs, routeDefault, UsageError } from '../cli/main.js'
import { parseInteractiveArgs } from './args.js'
import { BUILTIN_COMMANDS, parseCommandLine, resumeChoice } from './commands.js'
import type { SessionEvent } from '../session/types.js'

describe('editor', () => {
  it('inserts at the cursor, pastes CRLF as line breaks, deletes whole characters', () => {
    let state = insert(emptyEditor(), 'helo')
    state = insert(moveLeft(state), 'l')
    expect(state.text).toBe('hello')
    state = insert(end(state), '!\r\nb\tc')
    expect(state.text).toBe('hello!\nb  c')
    const emoji = insert(emptyEditor(), 'a😀')
    expect(backspace(emoji).text).toBe('a')
  })

  it('up/down move between lines, then through the history; the draft comes back', () => {
    let state = emptyEditor(['first', 'second'])
    state = insert(state, 'draft')
    state = up(state)
    expect(state.text).toBe('second')
    state = up(state)
    expect(state.text).toBe('first')
    state = down(down(state))
    expect(state.text).toBe('draft')
    const multi = insert(emptyEditor(['old']), 'one\ntwo')
    expect(up(multi).text).toBe('one\ntwo')
    expect(up(multi).cursor).toBe(3)
  })

  it('submit records the text once in the history and empties the box', () => {
    const { text, state } = submit(insert(emptyEditor(['x']), 'y'))
    expect(text).toBe('y')
    expect(state.text).toBe('')
    expect(state.history).toEqual(['x', 'y'])
    expect(submit(insert(state, 'y')).state.history).toEqual(['x', 'y'])
  })

  it('a run of Ctrl keys read at once is one press each; text, a single key and pasted line breaks are not split', () => {
    expect(controlPresses('\x03\x03', { ctrl: false })).toEqual(['c', 'c'])
    expect(controlPresses('\x03\x04', { ctrl: false })).toEqual(['c', 'd'])
    expect(controlPresses('\x03', { ctrl: true })).toBeUndefined()
    expect(controlPresses('ab', { ctrl: false })).toBeUndefined()
    expect(controlPresses('a\x03', { ctrl: false })).toBeUndefined()
    expect(controlPresses('\r\r', { ctrl: false })).toBeUndefined()
    expect(controlPresses('\x03\t', { ctrl: false })).toBeUndefined()
    expect(controlPresses('\x1b\x1b', { ctrl: false })).toBeUndefined()
  })

  it('finds the @mention and the /command being typed', () => {
    expect(mentionAtCursor(insert(emptyEditor(), 'look at @src/ma'))).toEqual({ start: 8, query: 'src/ma' })
    expect(mentionAtCursor(insert(emptyEditor(), 'mail me@host'))).toBeUndefined()
    expect(commandAtCursor(insert(emptyEditor(), '/he'))).toBe('he')
    expect(commandAtCursor(insert(emptyEditor(), '/help me'))).toBeUndefined()
    expect(parseCommandLine('/new  now ')).toEqual({ name: 'new', args: 'now' })
    expect(parseCommandLine('not /a command')).toBeUndefined()
  })

  it('/resume lists this folder\'s other sessions newest first, opens one by its id or the start of it, and says what is wrong otherwise', () => {
    const at = (minutes: number) => 1_000_000 - minutes * 60_000
    const stored = [
      { id: 'aaaa1111-0000', title: 'old work', cwd: '/p', updatedAt: at(90), turns: 3 },
      { id: 'aaaa2222-0000', title: 'newer\nwork', cwd: '/p', updatedAt: at(5), turns: 1 },
      { id: 'bbbb0000-0000', title: null, cwd: '/p', updatedAt: at(30), turns: 2 },
      { id: 'cccc0000-0000', title: 'elsewhere', cwd: '/q', updatedAt: at(1), turns: 1 },
      { id: 'dddd0000-0000', title: 'open now', cwd: '/p', updatedAt: at(0), turns: 1 },
    ]
    const ago = (ms: number) => `${Math.round((1_000_000 - ms) / 60_000)}m ago`
    const choose = (wanted: string) => resumeChoice(stored, '/p', 'dddd0000-0000', wanted, ago)
    const list = choose('')
    expect(list.kind).toBe('list')
    const rows = (list as { text: string }).text.split('\n').slice(1)
    expect(rows.map(row => row.trim().split(/\s+/)[0])).toEqual(['aaaa2222', 'bbbb0000', 'aaaa1111'])
    expect(rows[0]).toContain('newer work')
    expect(rows[1]).toContain('(untitled)')
    expect(choose('bbbb')).toEqual({ kind: 'open', id: 'bbbb0000-0000' })
    expect(choose('aaaa1111-0000')).toEqual({ kind: 'open', id: 'aaaa1111-0000' })
    expect(choose('aaaa')).toMatchObject({ kind: 'error', text: expect.stringContaining('type more') })
    expect(choose('dddd')).toMatchObject({ kind: 'error', text: expect.stringContaining('open now') })
    expect(choose('cccc')).toMatchObject({ kind: 'error', text: expect.stringContaining('dsh --session cccc0000-0000') })
    expect(choose('zzzz')).toMatchObject({ kind: 'error', text: expect.stringContaining('No stored session') })
    expect(resumeChoice([], '/p', 'x', '', ago)).toEqual({ kind: 'list', text: 'No other stored session in this folder.' })
  })

  it('/clear starts a new session, as /new does (the name other agents use)', async () => {
    const started: string[] = []
    const ui = { print() {}, exit() {}, newSession: async () => { started.push('new') }, resume: async () => {}, fork: async () => {}, rewind() {}, list: () => BUILTIN_COMMANDS }
    for (const name of ['clear', 'new']) await BUILTIN_COMMANDS.find(command => command.name === name)?.run('', ui)
    expect(started).toEqual(['new', 'new'])
  })
})

let seq = 0
function event(type: string, data: unknown, time = 1000 + seq): SessionEvent {
  return { type, seq: seq++, time, data } as SessionEvent
}

describe('conversation fold', () => {
  it('streams a step, pairs tool results, sums the turn and settles items in order', () => {
    const fold = new ConversationFold()
    fold.apply(event('turn/start', { turn: 1 }, 1000))
    fold.apply(event('user/message', { role: 'user', content: [{ type: 'text', text: 'hi' }], source: { kind: 'user' } }))
    fold.apply(event('step/start', { turn: 1, step: 1 }))
    fold.apply(event('assistant/chunk', { turn: 1, step: 1, chunk: { type: 'reasoning-delta', index: 0, text: 'think' } }))
    fold.apply(event('assistant/chunk', { turn: 1, step: 1, chunk: { type: 'text-delta', index: 1, text: 'Hel' } }))
    fold.apply(event('assistant/chunk', { turn: 1, step: 1, chunk: { type: 'text-delta', index: 1, text: 'lo' } }))
    expect(fold.items[1]).toMatchObject({ kind: 'assistant', text: 'Hello', reasoning: 'think', streaming: true })
    expect(settled(fold.items[1])).toBe(false)
    fold.apply(event('assistant/message', {
      turn: 1, step: 1, usage: { inputTokens: 100, outputTokens: 5 },
      message: { role: 'assistant', content: [{ type: 'text', text: 'Hello' }, { type: 'tool-call', id: 'c1', name: 'bash', arguments: '{}' }] },
    }))
    expect(settled(fold.items[1])).toBe(false)
    fold.apply(event('tool/result', { turn: 1, step: 1, message: { content: [{ type: 'tool-result', toolCallId: 'c1', content: [{ type: 'text', text: 'ok' }], isError: false }] }, meta: { exitCode: 0 } }))
    expect(settled(fold.items[1])).toBe(true)
    fold.apply(event('llm/retry', { retry: 1, maxRetries: 5, delayMs: 500, failure: { code: 'RATE_LIMIT', message: 'slow down' } }))
    expect(fold.status).toBe('retry 1/5 in 0.5s · RATE_LIMIT: slow down')
    fold.apply(event('turn/end', { turn: 1, reason: { kind: 'completed' } }, 4000))
    expect(fold.status).toBeUndefined()
    expect(fold.items.at(-1)).toMatchObject({ kind: 'turn-end', steps: 1, usage: { inputTokens: 100, outputTokens: 5 }, durationMs: 3000 })
    expect(fold.contextTokens).toBe(105)
    expect(fold.running).toBe(false)
  })

  it('a turn that ends mid-stream leaves its step settled', () => {
    const fold = new ConversationFold()
    fold.apply(event('turn/start', { turn: 1 }))
    fold.apply(event('assistant/chunk', { turn: 1, step: 1, chunk: { type: 'text-delta', index: 0, text: 'partial' } }))
    fold.apply(event('turn/end', { turn: 1, reason: { kind: 'aborted', reason: { kind: 'user' } } }))
    expect(fold.items.every(settled)).toBe(true)
  })
})

describe('launcher routing', () => {
  const route = (argv: string[], terminal: boolean) => routeDefault(parseLauncherArgs(argv), terminal)

  it('no task in a terminal opens the terminal app; a task or no terminal keeps headless', () => {
    expect(route([], true)).toBe('tui')
    expect(route(['-c'], true)).toBe('tui')
    expect(route(['--session', 'abc'], true)).toBe('tui')
    expect(route(['fix', 'the', 'bug'], true)).toBe('headless')
    expect(route([], false)).toBe('headless')
    expect(route(['--session', 'abc', 'more'], false)).toBe('headless')
  })

  it('-c or --resume without a terminal, or with a task, is a usage error', () => {
    expect(route(['-c'], false)).toBeInstanceOf(UsageError)
    expect(route(['--resume', 'task'], true)).toBeInstanceOf(UsageError)
    expect(() => parseInteractiveArgs(['-c', '--session', 'x'])).toThrow(/only one/)
  })

  it('an explicit profile or subcommand is never rerouted', () => {
    expect(parseLauncherArgs(['--profile', 'headless']).profileGiven).toBe(true)
    expect(parseLauncherArgs(['tui']).profile).toBe('tui')
    expect(parseLauncherArgs([]).profileGiven).toBeUndefined()
  })
})
