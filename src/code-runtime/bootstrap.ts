/**
 * What runs in a code run's thread (CommonJS, evaluated as the worker's script), and the
 * program's world inside it.
 *
 * The thread gets the compiled program and the tool names as `workerData`. The program runs in
 * a context of its own (`node:vm`) whose only globals besides the language's are `tools`,
 * `ToolCallError` and a five-method `console`: no `process`, `require`, timers or `fetch`, and
 * code generation from strings is off there, so `(() => {}).constructor('...')` cannot compile
 * code either. Everything the program holds was made inside that context: the prelude below
 * (compiled there) builds the tool functions and the console around one bridge object of the
 * thread's, which stays in the prelude's closure; values cross as JSON text and primitives.
 * This is containment, not the security boundary: the boundary is the thread's limits and what
 * the tools allow (each inner call runs the whole tool pipeline: approvals, sandbox, hooks).
 *
 * Messages to the parent: `{type: 'log', text}`, `{type: 'call', id, name, args}` (args as JSON
 * text), `{type: 'done', value?}` (JSON text), `{type: 'failed', kind, message}`. From the
 * parent: `{type: 'answer', id, ok, value?, message?}`.
 */

/**
 * Compiled inside the program's context, called once with the bridge. Rules that keep the
 * thread's objects out of the program's reach: nothing of the thread's is ever handed to
 * program code (the bridge stays in this closure, and its functions take and return
 * primitives only); the thread never calls `then` on a value of the context nor resolves a
 * promise of its own with one (a program may replace `Promise.prototype.then`); the builtins
 * used here are taken before the program runs.
 */
const PRELUDE = String.raw`(function (bridge, names) {
  'use strict'
  const { stringify, parse } = JSON
  const { getPrototypeOf, keys, freeze, defineProperty, create } = Object
  const { isArray } = Array
  const { isFinite } = Number
  const ObjectProto = Object.prototype
  const NativePromise = Promise
  const { then } = Promise.prototype
  const settleWith = Promise.resolve
  const plain = (value) => { const proto = getPrototypeOf(value); return proto === ObjectProto || proto === null }
  function lossy(value, path, seen) {
    if (value === null || typeof value === 'string' || typeof value === 'boolean') return null
    if (typeof value === 'number') return isFinite(value) ? null : path + ' is ' + String(value)
    if (typeof value !== 'object') return path + ' is ' + (typeof value === 'undefined' ? 'undefined' : 'a ' + typeof value)
    if (seen.has(value)) return path + ' is circular'
    seen.add(value)
    try {
      if (isArray(value)) {
        for (let i = 0; i < value.length; i++) {
          if (!(i in value)) return path + '[' + i + '] is empty'
          const problem = lossy(value[i], path + '[' + i + ']', seen)
          if (problem !== null) return problem
        }
        return null
      }
      if (!plain(value)) {
        const name = typeof value.constructor === 'function' && typeof value.constructor.name === 'string' ? value.constructor.name : ''
        return path + ' is ' + (name ? 'a ' + name : 'not a plain object')
      }
      for (const key of keys(value)) {
        const problem = lossy(value[key], path + '.' + key, seen)
        if (problem !== null) return problem
      }
      return null
    } finally {
      seen.delete(value)
    }
  }
  const json = (value, what) => {
    const problem = lossy(value, what, new Set())
    if (problem !== null) return [false, problem]
    const text = stringify(value)
    return typeof text === 'string' ? [true, text] : [false, what + ' cannot be written as JSON']
  }
  const describe = (error) => {
    try {
      if (error !== null && typeof error === 'object' && typeof error.message === 'string') {
        const name = typeof error.name === 'string' && error.name !== '' ? error.name : 'Error'
        return name + ': ' + error.message
      }
      return 'thrown: ' + (typeof error === 'string' ? error : String(stringify(error)))
    } catch (failure) {
      return 'thrown: a value that cannot be shown'
    }
  }
  class ToolCallError extends Error {
    constructor(toolName, message) {
      super(message)
      this.name = 'ToolCallError'
      this.toolName = toolName
    }
  }
  const tools = create(null)
  for (const name of names) {
    tools[name] = (args) => new Promise((resolve, reject) => {
      const [ok, text] = json(args === undefined ? {} : args, 'the arguments')
      if (!ok) {
        reject(new TypeError('tools.' + name + ': ' + text + '; arguments must be plain JSON'))
        return
      }
      bridge.call(name, text, (answered, value, message) => {
        if (answered) resolve(value === undefined ? undefined : parse(value))
        else reject(new ToolCallError(name, message))
      })
    })
  }
  const say = (level) => (...args) => { bridge.log(level, args) }
  const console = freeze({ log: say('log'), info: say('info'), warn: say('warn'), error: say('error'), debug: say('debug') })
  for (const [key, value] of [['tools', freeze(tools)], ['ToolCallError', ToolCallError], ['console', console]]) {
    defineProperty(globalThis, key, { value, writable: false, configurable: false, enumerable: false })
  }
  return (program) => {
    try {
      const started = program()
      then.call(settleWith.call(NativePromise, started), (value) => {
        if (value === undefined) return bridge.finish('done', undefined)
        const [ok, text] = json(value, 'the returned value')
        bridge.finish(ok ? 'done' : 'invalid-output', ok ? text : 'program completion must be lossless JSON: ' + text)
      }, (error) => { bridge.finish('exception', describe(error)) })
    } catch (error) {
      bridge.finish('exception', describe(error))
    }
  }
})`

export const BOOTSTRAP_SOURCE = String.raw`'use strict'
const { parentPort, workerData } = require('node:worker_threads')
const vm = require('node:vm')
const { formatWithOptions } = require('node:util')
// A call the program started and did not wait for may fail; it is the program's to catch.
process.on('unhandledRejection', () => {})
const post = (message) => parentPort.postMessage(message)
const context = vm.createContext(Object.create(null), { name: 'run_code', codeGeneration: { strings: false, wasm: false } })
const answers = new Map()
let next = 0
let finished = false
// Called by program code: primitives in, nothing out, and nothing of this thread thrown back.
const bridge = Object.freeze({
  call(name, args, done) {
    try {
      if (finished || typeof name !== 'string' || typeof args !== 'string' || typeof done !== 'function') return
      const id = ++next
      answers.set(id, done)
      post({ type: 'call', id, name, args })
    } catch {}
  },
  log(level, args) {
    try {
      if (finished) return
      let text
      try {
        text = formatWithOptions({ colors: false, customInspect: false, getters: false, showProxy: false, depth: 6, breakLength: 120 }, ...args)
      } catch {
        text = '(a value console could not show)'
      }
      post({ type: 'log', level: String(level), text: String(text) })
    } catch {}
  },
  finish(kind, text) {
    try {
      if (finished) return
      finished = true
      post({ type: 'finish', kind: String(kind), text: typeof text === 'string' ? text : undefined })
    } catch {}
  },
})
parentPort.on('message', (message) => {
  if (message === null || typeof message !== 'object' || message.type !== 'answer') return
  const done = answers.get(message.id)
  if (done === undefined) return
  answers.delete(message.id)
  try {
    done(message.ok === true, typeof message.value === 'string' ? message.value : undefined, String(message.message ?? ''))
  } catch {}
})
const start = vm.runInContext(${JSON.stringify(PRELUDE)}, context, { filename: 'run_code-prelude.js' })(bridge, workerData.tools.slice())
let program
try {
  program = new vm.Script(workerData.script, { filename: 'run_code.ts' }).runInContext(context)
} catch (error) {
  const name = error && typeof error.name === 'string' ? error.name : 'Error'
  bridge.finish('exception', name + ': ' + (error && typeof error.message === 'string' ? error.message : 'the program does not compile'))
}
if (typeof program === 'function') {
  try {
    start(program)
  } catch {
    bridge.finish('exception', 'Error: the program could not be started')
  }
}
else if (!finished) bridge.finish('exception', 'TypeError: the program did not compile to a function')
`
