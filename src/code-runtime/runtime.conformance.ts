/**
 * The shared conformance suite of the code runtime seam: every `CodeRuntime` provider runs it.
 * It pins what a program sees (its globals, tools as async functions, `ToolCallError`, values as
 * plain JSON), what it cannot reach (Node's APIs, code from strings), each way a run ends
 * (value, exception, invalid output, each limit, abort) and that no inner call outlives its run.
 */
import { describe, expect, it } from 'vitest'
import type { JsonValue } from '../session/types.js'
import type { CodeRunRequest, CodeRuntime, ToolCallAnswer } from './api.js'

interface Recorded { readonly name: string; readonly args: JsonValue; readonly signal: AbortSignal }

/** A tool host for one run: `add` sums, `fail` refuses, `hold` waits until released or aborted. */
function toolHost() {
  const calls: Recorded[] = []
  const held: { release(value: JsonValue): void; readonly signal: AbortSignal }[] = []
  const waiters: (() => void)[] = []
  const call = (name: string, args: JsonValue, signal: AbortSignal): Promise<ToolCallAnswer> => {
    calls.push({ name, args, signal })
    const { a, b } = (args ?? {}) as { a?: number; b?: number }
    if (name === 'add') return Promise.resolve({ ok: true, value: (a ?? 0) + (b ?? 0) })
    if (name === 'fail') return Promise.resolve({ ok: false, message: `cannot read "missing.txt": not found` })
    if (name === 'hold') {
      return new Promise((resolve) => {
        const entry = { release: (value: JsonValue) => resolve({ ok: true, value }), signal }
        held.push(entry)
        // A held call ends when its run aborts it, as a real tool's body does.
        signal.addEventListener('abort', () => resolve({ ok: false, message: 'aborted' }), { once: true })
        waiters.splice(0).forEach((wake) => wake())
      })
    }
    return Promise.resolve({ ok: false, message: `unknown tool ${name}` })
  }
  /** Resolves once `n` calls to `hold` are waiting. */
  const holding = (n: number) => new Promise<void>((resolve) => {
    const check = () => { if (held.length >= n) resolve(); else waiters.push(check) }
    check()
  })
  return { calls, held, holding, call }
}

const TOOLS = ['add', 'fail', 'hold']

export function describeCodeRuntime(name: string, make: () => CodeRuntime): void {
  describe(`code runtime conformance: ${name}`, () => {
    const runtime = make()
    const run = (code: string, extra: Partial<CodeRunRequest> = {}) => {
      const host = toolHost()
      return { host, result: runtime.run({ code, tools: TOOLS, call: host.call, ...extra }) }
    }

    it('a TypeScript body runs with top-level await and return; logs come in order, then the value', async () => {
      const { host, result } = run(`
        interface Pair { a: number; b: number }
        const pair: Pair = { a: 2, b: 3 }
        const sum = await tools.add(pair) as number
        console.log('sum', sum)
        console.error({ nested: [1, 'two'] })
        return { sum, doubled: sum * 2 }`)
      expect(await result).toEqual({ ok: true, logs: ['sum 5', "{ nested: [ 1, 'two' ] }"], value: { sum: 5, doubled: 10 } })
      expect(host.calls.map(({ name, args }) => [name, args])).toEqual([['add', { a: 2, b: 3 }]])
    })

    it('no return value is a success without a value; a string comes back as it is', async () => {
      expect(await run('console.log("only logs")').result).toEqual({ ok: true, logs: ['only logs'] })
      expect(await run('return "text"').result).toEqual({ ok: true, logs: [], value: 'text' })
    })

    it('a refused inner call is a ToolCallError the program can catch, with the tool name and the message', async () => {
      const { result } = run(`
        try { await tools.fail({}) } catch (error) {
          return [error instanceof ToolCallError, error instanceof Error, error.name, error.toolName, error.message]
        }`)
      expect(await result).toMatchObject({ ok: true, value: [true, true, 'ToolCallError', 'fail', 'cannot read "missing.txt": not found'] })
    })

    it('an uncaught error ends the run as an exception, with what was printed before it', async () => {
      const { result } = run('console.log("before"); await tools.fail({}); console.log("after")')
      expect(await result).toEqual({ ok: false, kind: 'exception', message: 'ToolCallError: cannot read "missing.txt": not found', logs: ['before'] })
      expect(await run('throw "plain"').result).toMatchObject({ ok: false, kind: 'exception', message: 'thrown: plain' })
    })

    it('a program that does not compile is an exception and calls nothing', async () => {
      const { host, result } = run('await tools.add({a: 1}); return {')
      const ended = await result
      expect(ended).toMatchObject({ ok: false, kind: 'exception' })
      expect(ended.ok === false && ended.message).toMatch(/^SyntaxError: /)
      expect(host.calls).toEqual([])
    })

    it('only the tools given are there: another name is not a function', async () => {
      const { host, result } = run('return await tools.bash({ command: "id" })')
      expect(await result).toMatchObject({ ok: false, kind: 'exception', message: 'TypeError: tools.bash is not a function' })
      expect(host.calls).toEqual([])
    })

    it('arguments that are not plain JSON are refused in the program, before any call', async () => {
      const { host, result } = run(`
        const problems = []
        for (const args of [{ when: new Date() }, { n: NaN }, { f: () => 1 }, { u: undefined }, [1, , 3]]) {
          try { await tools.add(args) } catch (error) { problems.push(error.message) }
        }
        return problems`)
      const ended = await result
      expect(ended.ok).toBe(true)
      expect(ended.ok && (ended.value as string[]).length).toBe(5)
      expect(ended.ok && (ended.value as string[]).every((text) => text.includes('arguments must be plain JSON'))).toBe(true)
      expect(host.calls).toEqual([])
    })

    it('a returned value that is not lossless JSON is invalid output', async () => {
      for (const code of ['return new Map()', 'return { n: Infinity }', 'const a: any[] = []; a.push(a); return a', 'return 10n']) {
        expect(await run(code).result).toMatchObject({ ok: false, kind: 'invalid-output' })
      }
    })

    it('the program reaches no Node API and cannot compile code from strings', async () => {
      const { result } = run(`
        const seen = [typeof process, typeof require, typeof module, typeof setTimeout, typeof fetch, typeof Buffer, typeof WebAssembly === 'object' ? 'wasm' : 'none']
        const escapes = []
        for (const from of [() => 1, console.log, tools.add, ToolCallError]) {
          try { escapes.push(String(from.constructor.constructor('return typeof process')())) } catch (error) { escapes.push(error.name) }
        }
        try { escapes.push(String(eval('1 + 1'))) } catch (error) { escapes.push(error.name) }
        return { seen, escapes }`)
      const ended = await result
      expect(ended).toMatchObject({ ok: true })
      const value = (ended as unknown as { value: { seen: string[]; escapes: string[] } }).value
      expect(value.seen.slice(0, 6)).toEqual(['undefined', 'undefined', 'undefined', 'undefined', 'undefined', 'undefined'])
      expect(value.escapes).toEqual(['EvalError', 'EvalError', 'EvalError', 'EvalError', 'EvalError'])
    })

    it('a program that replaces the promise machinery still ends with its own value, and reaches nothing', async () => {
      const { result } = run(`
        const reached = []
        Promise.prototype.then = function (onValue) {
          try { reached.push(typeof onValue.constructor.constructor('return process')()) } catch (error) { reached.push(error.name) }
          return this
        }
        return 7`)
      expect(await result).toEqual({ ok: true, logs: [], value: 7 })
    })

    it('nothing carries over from one run to the next', async () => {
      expect(await run('globalThis.kept = 1; return typeof kept').result).toMatchObject({ ok: true, value: 'number' })
      expect(await run('return typeof kept').result).toMatchObject({ ok: true, value: 'undefined' })
    })

    it('calls started together are in flight together (the caller decides what may overlap)', async () => {
      const { host, result } = run('return await Promise.all([tools.hold({}), tools.hold({}), tools.add({ a: 1, b: 1 })])')
      await host.holding(2)
      host.held.forEach((entry, index) => entry.release(index))
      expect(await result).toEqual({ ok: true, logs: [], value: [0, 1, 2] })
    })

    it('busy time past the compute budget ends the run; time waiting on a tool does not count', async () => {
      expect(await run('while (true) {}', { limits: { computeMs: 200 } }).result)
        .toMatchObject({ ok: false, kind: 'timeout', message: expect.stringMatching(/^compute budget exhausted \(\d+ms busy\)$/) })
      const { host, result } = run('const value = await tools.hold({}); return value', { limits: { computeMs: 200 } })
      await host.holding(1)
      // Idle for longer than the budget while the call is held.
      await new Promise((resolve) => setTimeout(resolve, 500))
      host.held[0]!.release('late')
      expect(await result).toEqual({ ok: true, logs: [], value: 'late' })
    })

    it('the wall-clock ceiling ends a waiting run, aborts its call and waits for it to settle', async () => {
      // Long enough for a provider's thread to start and make the call under load.
      const { host, result } = run('await tools.hold({})', { limits: { maxWallMs: 3000 } })
      expect(await result).toMatchObject({ ok: false, kind: 'timeout', message: 'wall-clock ceiling reached (3000ms)' })
      expect(host.held).toHaveLength(1)
      expect(host.held[0]!.signal.aborted).toBe(true)
    })

    it('output past the budget ends the run, counted over logs and the value', async () => {
      expect(await run('for (;;) console.log("x".repeat(1000))', { limits: { maxOutputBytes: 50_000 } }).result)
        .toMatchObject({ ok: false, kind: 'output-limit', message: 'outer output exceeded 50000 bytes' })
      expect(await run('return "y".repeat(60_000)', { limits: { maxOutputBytes: 50_000 } }).result)
        .toMatchObject({ ok: false, kind: 'output-limit' })
    })

    it('a program past its heap ceiling ends as worker-exit; the next run is unaffected', async () => {
      const ended = await run('const keep = []; for (;;) keep.push(new Array(100_000).fill(keep.length))', { limits: { maxOldGenerationSizeMb: 32 } }).result
      expect(ended).toMatchObject({ ok: false, kind: 'worker-exit' })
      expect(await run('return 1').result).toMatchObject({ ok: true, value: 1 })
    })

    it('aborting ends the run with the reason; the calls in flight are aborted and settle first', async () => {
      const controller = new AbortController()
      const { host, result } = run('await Promise.all([tools.hold({}), tools.hold({})])', { signal: controller.signal })
      await host.holding(2)
      controller.abort(new Error('cancelled by the user'))
      expect(await result).toMatchObject({ ok: false, kind: 'abort', message: 'cancelled by the user' })
      expect(host.held.every((entry) => entry.signal.aborted)).toBe(true)
      const early = new AbortController()
      early.abort('gone')
      const before = run('return 1', { signal: early.signal })
      expect(await before.result).toMatchObject({ ok: false, kind: 'abort', message: 'gone' })
      expect(before.host.calls).toEqual([])
    })

    it('a call left running when the program returns is aborted; the run ends after it settles', async () => {
      const { host, result } = run('tools.hold({}); return "done"')
      const ended = await result
      expect(ended).toEqual({ ok: true, logs: [], value: 'done' })
      // The call reached the host before the program's end did (messages keep their order).
      expect(host.held).toHaveLength(1)
      expect(host.held[0]!.signal.aborted).toBe(true)
    })
  })
}
