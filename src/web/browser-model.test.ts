/**
 * The browser app's DOM-free parts, run in Node: the log fold (streaming, tool pairing, turn
 * usage, errors) and the markdown renderer's handling of untrusted model output.
 */
import { describe, expect, it } from 'vitest'
import { LogFold, describeEnd } from '../../web/src/fold.js'
import { highlight, renderMarkdown } from '../../web/src/markdown.js'
import { describeGoalItem } from '../../web/src/session-state.js'
import type { SessionEvent } from '../../web/src/types.js'

let seq = 0
const ev = (type: string, data: unknown): SessionEvent => ({ type, seq: seq++, time: 1000 + seq, data })
const user = (text: string) => ev('user/message', { id: `u${seq}`, role: 'user', source: { kind: 'user' }, content: [{ type: 'text', text }] })
const chunk = (turn: number, step: number, c: unknown) => ev('assistant/chunk', { turn, step, chunk: c })

describe('LogFold', () => {
  it('streams text from chunks, then replaces it with the final message', () => {
    const fold = new LogFold()
    fold.apply([ev('turn/start', { turn: 1 }), user('hi'), ev('step/start', { turn: 1, step: 1 }),
      chunk(1, 1, { type: 'reasoning-delta', index: 0, text: 'think' }), chunk(1, 1, { type: 'text-delta', index: 1, text: 'Hel' })])
    const streaming = fold.items.at(-1)!
    expect(streaming).toMatchObject({ kind: 'assistant', text: 'Hel', reasoning: 'think', streaming: true })
    fold.apply([chunk(1, 1, { type: 'text-delta', index: 1, text: 'lo' })])
    expect(fold.items.at(-1)).toMatchObject({ text: 'Hello', streaming: true })
    const before = fold.items
    fold.apply([ev('assistant/message', { turn: 1, step: 1, message: { role: 'assistant', content: [{ type: 'reasoning', text: 'think' }, { type: 'text', text: 'Hello!' }] }, usage: { inputTokens: 10, outputTokens: 3 } })])
    expect(fold.items).not.toBe(before)
    expect(fold.items.filter(item => item.kind === 'assistant')).toHaveLength(1)
    expect(fold.items.at(-1)).toMatchObject({ text: 'Hello!', streaming: false })
  })

  it('pairs tool results with their calls and sums usage per turn', () => {
    const fold = new LogFold()
    fold.apply([ev('turn/start', { turn: 1 }), user('run'),
      ev('assistant/message', { turn: 1, step: 1, message: { content: [{ type: 'tool-call', id: 'c1', name: 'bash', arguments: '{"command":"ls"}' }] }, usage: { inputTokens: 5, outputTokens: 1 } }),
      ev('tool/call', { turn: 1, step: 1, callId: 'c1', name: 'bash', arguments: '{"command":"ls"}' }),
      ev('tool/result', { turn: 1, step: 1, message: { content: [{ type: 'tool-result', toolCallId: 'c1', isError: false, content: [{ type: 'text', text: 'a\nb' }] }] }, meta: { exitCode: 0, durationMs: 12 } }),
      ev('assistant/message', { turn: 1, step: 2, message: { content: [{ type: 'text', text: 'done' }] }, usage: { inputTokens: 7, outputTokens: 2 } }),
      ev('turn/end', { turn: 1, reason: { kind: 'completed' } })])
    const step = fold.items.find(item => item.kind === 'assistant')!
    expect(step.kind === 'assistant' && step.calls[0]).toMatchObject({ name: 'bash', result: { text: 'a\nb', isError: false, meta: { exitCode: 0 } } })
    expect(fold.items.at(-1)).toMatchObject({ kind: 'turn-end', usage: { inputTokens: 12, outputTokens: 3 } })
  })

  it('ignores non-user prompts, keeps the latest plan, shows retries and errors', () => {
    const fold = new LogFold()
    fold.apply([ev('turn/start', { turn: 1 }), ev('user/message', { source: { kind: 'plugin', plugin: 'runtime-contexts' }, content: [{ type: 'text', text: '<ctx>' }] }),
      ev('todo/write', { todos: [{ content: 'a', status: 'completed' }, { content: 'b', status: 'pending' }] }),
      ev('llm/retry', { retry: 1, maxRetries: 3, delayMs: 2000, failure: { code: 'RATE_LIMITED', message: 'slow down', status: 429 } }),
      ev('turn/end', { turn: 1, reason: { kind: 'error', error: { code: 'AUTH', message: 'bad key' } } })])
    expect(fold.items.some(item => item.kind === 'user')).toBe(false)
    expect(fold.todos).toHaveLength(2)
    // One retry line per retried step, settled as failed when the turn ends in an error.
    expect(fold.items.filter(item => item.kind === 'retry')).toMatchObject([{ retry: 1, maxRetries: 3, delayMs: 2000, state: 'failed', cause: 'RATE_LIMITED 429: slow down' }])
    expect(describeEnd((fold.items.at(-1) as { reason: unknown }).reason)).toEqual({ level: 'error', text: 'AUTH: bad key' })
  })

  it('folds a 5,000-message log into one item per message', () => {
    const events: SessionEvent[] = []
    for (let turn = 1; turn <= 2500; turn += 1) {
      events.push(ev('turn/start', { turn }), user(`question ${turn}`),
        ev('assistant/message', { turn, step: 1, message: { content: [{ type: 'text', text: `answer ${turn}` }] } }), ev('turn/end', { turn, reason: { kind: 'completed' } }))
    }
    const fold = new LogFold()
    fold.apply(events)
    expect(fold.items.filter(item => item.kind === 'user' || item.kind === 'assistant')).toHaveLength(5000)
  })
})

describe('markdown of untrusted model output', () => {
  it('escapes raw HTML and drops script links', () => {
    const html = renderMarkdown('hi <script>alert(1)</script> <img src=x onerror=alert(1)>\n\n[x](javascript:alert(1)) [ok](https://example.org)')
    expect(html).not.toMatch(/<script|<img/i)
    expect(html).toContain('&lt;script&gt;')
    expect(html).not.toContain('javascript:')
    expect(html).toContain('<a href="https://example.org" target="_blank" rel="noreferrer noopener">ok</a>')
  })

  it('highlights fenced code without letting markup through', () => {
    const html = renderMarkdown('```ts\nconst a = "<b>" // note\n```')
    expect(html).toContain('<span class="hl-k">const</span>')
    expect(html).toContain('<span class="hl-s">&quot;&lt;b&gt;&quot;</span>')
    expect(html).toContain('<span class="hl-c">// note</span>')
    expect(highlight('echo "$HOME" # home', 'bash')).toBe('<span class="hl-k">echo</span> <span class="hl-s">&quot;$HOME&quot;</span> <span class="hl-c"># home</span>')
  })
})

describe('LogFold: session state and older log shapes', () => {
  it('GL-1, GL-2: goal snapshots and round messages give the goal bar and one line each; a new goal starts its own count; plan/mode toggles', () => {
    const fold = new LogFold()
    const goal = (operation: string, id: string, revision: number, phase: string, roundsStarted: number) =>
      ev('goal/change', { kind: 'goal/change', version: 1, operation, goal: { id, revision, objective: `obj ${id}`, phase, maxGoalRounds: 3 }, roundsStarted, createdAt: 1, updatedAt: 1 })
    const round = (goalId: string, n: number) => ev('user/message', { role: 'user', content: [{ type: 'text', text: '<goal_round>' }], source: { kind: 'goal', goalId, revision: 1, round: n } })
    fold.apply([goal('create', 'g1', 1, 'active', 0), ev('turn/start', { turn: 1 }), round('g1', 1)])
    expect(fold.state.goal).toMatchObject({ id: 'g1', phase: 'active', rounds: 1, maxGoalRounds: 3 })
    fold.apply([round('g1', 2), goal('complete', 'g1', 2, 'complete', 2), ev('plan/mode', { active: true })])
    expect(fold.state.goal).toMatchObject({ phase: 'complete', rounds: 2 })
    expect(fold.state.planMode).toBe(true)
    expect(fold.items.filter(item => item.kind === 'goal').map(item => item.kind === 'goal' && describeGoalItem(item)))
      .toEqual(['Goal set: obj g1', 'Goal round 1 of 3', 'Goal round 2 of 3', 'Goal complete after 2 rounds: obj g1'])
    // The round messages are not drawn as user prompts.
    expect(fold.items.filter(item => item.kind === 'user')).toHaveLength(0)
    // A completed goal leaves the bar at the next turn; a new goal counts from its own snapshot.
    fold.apply([ev('turn/start', { turn: 2 }), ev('plan/mode', { active: false })])
    expect(fold.state.goal).toBeUndefined()
    expect(fold.state.planMode).toBe(false)
    fold.apply([goal('create', 'g2', 1, 'active', 0)])
    expect(fold.state.goal).toMatchObject({ id: 'g2', rounds: 0 })
  })

  it('reads the older assistant/message.content and tool/result {callId, content} shapes', () => {
    const fold = new LogFold()
    fold.apply([
      ev('turn/start', { turn: 1, trigger: { kind: 'message', source: { kind: 'user' } } }), user('run it'),
      ev('assistant/message', { turn: 1, step: 1, content: [{ type: 'text', text: 'Running.' }, { type: 'tool-call', id: 'c1', name: 'bash', arguments: '{"command":"echo OLD"}' }] }),
      ev('tool/call', { turn: 1, step: 1, callId: 'c1', name: 'bash', arguments: '{"command":"echo OLD"}' }),
      ev('tool/result', { turn: 1, step: 1, callId: 'c1', content: [{ type: 'text', text: 'OLD\n' }], isError: false }),
    ])
    const step = fold.items.find(item => item.kind === 'assistant')
    expect(step).toMatchObject({ text: 'Running.', calls: [{ id: 'c1', name: 'bash', result: { text: 'OLD\n', isError: false } }] })
  })

  it('an event it cannot read becomes one notice; the rest is still drawn', () => {
    const fold = new LogFold()
    fold.apply([user('before'), ev('turn/end', null), ev('turn/end', null), user('after')])
    expect(fold.items.map(item => item.kind)).toEqual(['user', 'notice', 'user'])
    expect(fold.items[1]).toMatchObject({ level: 'warning', text: expect.stringMatching(/^2 events of this session could not be shown/) })
  })
})
