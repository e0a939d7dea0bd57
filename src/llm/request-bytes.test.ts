import { Context } from 'cordis'
import { describe, expect, it } from 'vitest'
import { SessionsServicePlugin, type Session } from '../session/index.js'
import { assistantMessage, toolResultMessage, userMessage } from '../session/testing/fixtures.js'
import { DEEPSEEK_DIALECT } from './deepseek/index.js'
import { buildRequestBody, encodeRequestBody, type WireDialect } from './openai-wire.js'
import type { LlmCallOptions, Message, ToolSchema } from './types.js'

/** The body as it was built before the cached parts existed: serialise the whole request. */
const uncached = (options: LlmCallOptions, dialect: WireDialect) => Buffer.from(JSON.stringify(buildRequestBody(options, dialect)), 'utf8')

const TOOLS: readonly ToolSchema[] = Object.freeze([
  Object.freeze({ name: 'read', description: 'reads a file', parameters: Object.freeze({ type: 'object', properties: Object.freeze({ file_path: Object.freeze({ type: 'string' }) }) }) }),
  Object.freeze({ name: 'bash', description: 'runs "a command" — ü', parameters: Object.freeze({ type: 'object' }) }),
]) as readonly ToolSchema[]

const optionsOf = (messages: readonly Message[], extra: Partial<LlmCallOptions> = {}): LlmCallOptions => ({
  provider: 'deepseek-official', model: 'deepseek-v4-flash', system: 'You are a test. ✓', messages, tools: TOOLS, maxTokens: 100, thinking: true, ...extra,
})

/** Every encoding equals the uncached one, for both dialects; returns the DeepSeek body as text. */
function expectSame(options: LlmCallOptions): string {
  for (const dialect of [DEEPSEEK_DIALECT, { sendReasoningContent: false }]) {
    const bytes = encodeRequestBody(options, dialect)
    expect(bytes.toString('utf8')).toBe(uncached(options, dialect).toString('utf8'))
    expect(bytes.equals(uncached(options, dialect))).toBe(true)
  }
  return encodeRequestBody(options, DEEPSEEK_DIALECT).toString('utf8')
}

async function boot(): Promise<Context> {
  const ctx = new Context()
  let clock = 1000
  await ctx.plugin(SessionsServicePlugin, { now: () => clock++ })
  return ctx
}

/** One step: the user's input (when given), an assistant message with a call, its result. */
function step(session: Session, turn: number, n: number, input: string | undefined, output: string): { resultSeq: number } {
  session.append('step/start', { turn, step: n })
  if (input !== undefined) session.append('user/message', userMessage(input, `u-${turn}-${n}`), { surfaceOp: 'append' })
  const reasoning = { type: 'reasoning' as const, text: `thinking ${n}` }
  const base = assistantMessage(`a-${turn}-${n}`, `step ${n}`, [{ id: `c-${turn}-${n}`, name: 'read', arguments: '{"file_path":"x"}' }])
  session.append('assistant/message', { turn, step: n, message: { ...base, content: [reasoning, ...base.content] } }, { surfaceOp: 'append', sourceEventSeqs: [] })
  session.append('tool/call', { turn, step: n, callId: `c-${turn}-${n}`, name: 'read', arguments: '{"file_path":"x"}' })
  const result = session.append('tool/result', { turn, step: n, message: toolResultMessage(`c-${turn}-${n}`, output, false, `r-${turn}-${n}`) }, { surfaceOp: 'append', sourceEventSeqs: [session.length - 1] })
  session.append('step/end', { turn, step: n })
  return { resultSeq: result.seq }
}

describe('request body bytes from cached parts (L-6)', () => {
  it('L-6: equal byte for byte to serialising the whole request, for every option and content shape', () => {
    const messages = [
      userMessage('plain'),
      { ...userMessage('x'), content: [{ type: 'text', text: 'look' }, { type: 'image', data: 'AAAA', mimeType: 'image/png' }, { type: 'text', text: 'lone \ud800 surrogate' }] },
      assistantMessage('a', '', [{ id: 'c1', name: 'read', arguments: '{"a":"\\u0000"}' }, { id: 'c2' }]),
      { ...toolResultMessage('c1', ''), content: [{ type: 'tool-result', toolCallId: 'c1', content: [{ type: 'text', text: 'one' }], isError: false }, { type: 'tool-result', toolCallId: 'c2', content: [], isError: true }] },
      { id: 's', role: 'system', content: [{ type: 'text', text: 'a note' }], source: { kind: 'plugin', plugin: 't' } },
    ] as unknown as Message[]
    for (const frozen of [false, true]) {
      const list = frozen ? messages.map(m => structuredFreeze(m)) : messages
      expectSame(optionsOf(list))
      expectSame(optionsOf(list, { system: undefined, tools: undefined, maxTokens: undefined }))
      expectSame(optionsOf(list, { system: '', tools: [], temperature: 0.5, stop: ['END', '"q"'], reasoningEffort: 'high' }))
      expectSame(optionsOf(list, { thinking: false, reasoningEffort: 'low' }))
      expectSame(optionsOf([]))
      // A value that holds a slot's text is sent as it is (the cached parts step aside).
      expectSame(optionsOf(list, { model: '\u0000dsh:messages\u0000', stop: ['\u0000dsh:tools\u0000'] }))
    }
    // A dialect field named like a body key is sent as the dialect says.
    const odd: WireDialect = { sendReasoningContent: true, requestFields: () => ({ messages: 'theirs', tools: [] }) }
    expect(encodeRequestBody(optionsOf([userMessage('x')]), odd).equals(uncached(optionsOf([userMessage('x')]), odd))).toBe(true)
  })

  it('L-6/A-11: the request after a prune (one message replaced), a compaction (a span replaced) and a fork equals the uncached build', async () => {
    const ctx = await boot()
    const session = ctx.sessions.create({ id: 'p' })
    session.append('turn/start', { turn: 1 })
    const first = step(session, 1, 1, 'go', 'a long output '.repeat(50))
    step(session, 1, 2, undefined, 'second output')
    const before = expectSame(optionsOf(session.deriveMessages()))
    expect(before).toContain('a long output a long output')
    // Fills the caches, then the same request again comes from them.
    expectSame(optionsOf(session.deriveMessages()))

    // Prune: the first tool result replaced by a stub in place.
    const pruned = toolResultMessage('c-1-1', '[pruned]', false, 'r-1-1')
    session.append('tool/result', { turn: 1, step: 1, message: pruned }, { surfaceOp: { op: 'replace', start: first.resultSeq, end: first.resultSeq }, sourceEventSeqs: [first.resultSeq] })
    const afterPrune = expectSame(optionsOf(session.deriveMessages()))
    expect(afterPrune).not.toContain('a long output')
    expect(afterPrune).toContain('[pruned]')

    // Compaction: everything so far replaced by one summary message.
    const surface = session.surface()
    session.append('user/message', userMessage('summary of it all', 'sum'), { surfaceOp: { op: 'replace', start: surface[0]!, end: surface.at(-1)! }, sourceEventSeqs: [...surface] })
    step(session, 1, 3, undefined, 'after the summary')
    const afterCompaction = expectSame(optionsOf(session.deriveMessages()))
    expect(afterCompaction).not.toContain('step 1')
    expect(afterCompaction).toContain('summary of it all')

    // Fork: the child resends the parent's history, then each goes its own way.
    session.append('turn/end', { turn: 1, reason: { kind: 'completed' } })
    const child = ctx.sessions.fork('p', undefined, 'c')
    expect(expectSame(optionsOf(child.deriveMessages()))).toBe(afterCompaction)
    child.append('turn/start', { turn: 2 })
    session.append('turn/start', { turn: 2 })
    step(child, 2, 1, 'child', 'child only')
    step(session, 2, 1, 'parent', 'parent only')
    const childBody = expectSame(optionsOf(child.deriveMessages()))
    const parentBody = expectSame(optionsOf(session.deriveMessages()))
    expect(childBody).toContain('child only')
    expect(childBody).not.toContain('parent only')
    expect(parentBody).toContain('parent only')

    // A changed prompt or tool list is sent as it now is.
    expectSame(optionsOf(session.deriveMessages(), { system: 'another prompt' }))
    expectSame(optionsOf(session.deriveMessages(), { tools: Object.freeze([TOOLS[1]!]) }))
  })

  it('L-6: a message, tool list or prompt that can still change is never served from a cache', () => {
    const content = [{ type: 'text', text: 'before' }]
    // Frozen at the top, but its content is not: the body follows every change.
    const message = Object.freeze({ ...userMessage('x'), content: Object.freeze(content.map(block => ({ ...block }))) }) as unknown as Message
    const tools = [{ name: 'read', description: 'before', parameters: { type: 'object' } }]
    const options = optionsOf([message], { tools: Object.freeze(tools) as readonly ToolSchema[] })
    expect(expectSame(options)).toContain('before')
    ;((message.content[0] as { text: string }).text) = 'after'
    tools[0]!.description = 'after'
    const again = expectSame(options)
    expect(again).not.toContain('before')
    expect(again.match(/after/g)).toHaveLength(2)
    let system = 'first prompt'
    expect(expectSame(optionsOf([message], { system }))).toContain('first prompt')
    system = 'second prompt'
    expect(expectSame(optionsOf([message], { system }))).not.toContain('first prompt')
  })
})

function structuredFreeze<T>(value: T): T {
  const copy = structuredClone(value) as T
  const freeze = (node: unknown): void => {
    if (node === null || typeof node !== 'object') return
    for (const child of Object.values(node)) freeze(child)
    Object.freeze(node)
  }
  freeze(copy)
  return copy
}
