/**
 * Contract suite pinning what dsh relies on from cordis 4.0.0-rc.10 (K-1..K-7). If an upgrade
 * changes any of these semantics, a test here fails before the runtime misbehaves.
 */
import { Context, EventsService, Service, type Plugin } from 'cordis'
import { createRequire } from 'node:module'
import { readFileSync } from 'node:fs'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { emitContained } from './index.js'

declare module 'cordis' {
  interface Context {
    'kernel-test-svc': KernelTestService
  }
  interface Events {
    /** @mode emit. Test-only. */
    'kernel-test/emit'(label: string): void
    /** @mode parallel. Test-only. */
    'kernel-test/parallel'(label: string): Promise<void>
    /** @mode serial. Test-only. */
    'kernel-test/serial'(label: string): unknown
    /** @mode bail. Test-only. */
    'kernel-test/bail'(label: string): unknown
    /** @mode waterfall. Test-only. */
    'kernel-test/waterfall'(input: string, next: (...args: unknown[]) => string): string
  }
}

/** The Standard Schema shape cordis accepts as a plugin's `Config`. */
type ConfigSchema = NonNullable<Plugin.Base['Config']>

class KernelTestService extends Service {
  constructor(ctx: Context, public readonly version: string) {
    super(ctx, 'kernel-test-svc')
  }
}

/** Lets every pending microtask and promise job run (no timers involved). */
const drain = () => new Promise<void>((resolve) => setImmediate(resolve))

function deferred<T = void>() {
  let resolve!: (value: T) => void
  const promise = new Promise<T>((r) => (resolve = r))
  return { promise, resolve }
}

const svcVersion = (ctx: Context) => (ctx.get('kernel-test-svc') as KernelTestService | undefined)?.version

describe('K-7 pinned version', () => {
  it('K-7: the kernel is cordis 4.0.0-rc.10 exactly (this suite pins its semantics)', () => {
    const require = createRequire(import.meta.url)
    const manifest = JSON.parse(readFileSync(require.resolve('cordis/package.json'), 'utf8')) as { version: string }
    expect(manifest.version).toBe('4.0.0-rc.10')
  })
})

describe('K-3 dispatch modes', () => {
  it('K-3 emit: results ignored; a throwing listener reaches the emitter and skips later listeners', () => {
    const root = new Context()
    const seen: string[] = []
    root.on('kernel-test/emit', (label) => void seen.push(`first:${label}`))
    root.on('kernel-test/emit', () => {
      throw new Error('observer broke')
    })
    root.on('kernel-test/emit', (label) => void seen.push(`third:${label}`))
    expect(() => root.emit('kernel-test/emit', 'x')).toThrow('observer broke')
    expect(seen).toEqual(['first:x'])
  })

  it('K-3 emit: synchronous, returns nothing even when listeners return values', () => {
    const root = new Context()
    const seen: string[] = []
    root.on('kernel-test/emit', ((label: string) => {
      seen.push(label)
      return 'ignored'
    }) as never)
    expect(root.emit('kernel-test/emit', 'now')).toBeUndefined()
    expect(seen).toEqual(['now'])
  })

  it('K-3 parallel: every listener runs; rejects with AggregateError only after all settle', async () => {
    const root = new Context()
    const gate = deferred()
    let slowFinished = false
    root.on('kernel-test/parallel', async () => {
      throw new Error('first failed')
    })
    root.on('kernel-test/parallel', async () => {
      await gate.promise
      slowFinished = true
    })
    root.on('kernel-test/parallel', () => {
      // A synchronous throw is captured too and does not stop the others.
      throw new Error('third failed')
    })
    let settled = false
    const result = root.parallel('kernel-test/parallel', 'p').finally(() => (settled = true))
    result.catch(() => {})
    await drain()
    expect(settled).toBe(false)
    gate.resolve()
    const error = await result.then(() => undefined, (e: unknown) => e)
    expect(slowFinished).toBe(true)
    expect(error).toBeInstanceOf(AggregateError)
    expect((error as AggregateError).errors.map((e: Error) => e.message)).toEqual(['first failed', 'third failed'])
  })

  it('K-3 parallel: listeners start together (the second starts before the first finishes) and it resolves to undefined', async () => {
    const root = new Context()
    const gate = deferred()
    const started: string[] = []
    root.on('kernel-test/parallel', async () => {
      started.push('a')
      await gate.promise
    })
    root.on('kernel-test/parallel', async () => {
      started.push('b')
    })
    const result = root.parallel('kernel-test/parallel', 'p')
    await drain()
    expect(started).toEqual(['a', 'b'])
    gate.resolve()
    expect(await result).toBeUndefined()
  })

  it('K-3 serial: awaited in order; the first result that is not null/undefined/false wins', async () => {
    const root = new Context()
    const gate = deferred()
    const seen: string[] = []
    root.on('kernel-test/serial', async () => {
      seen.push('a:start')
      await gate.promise
      seen.push('a:end')
      return null
    })
    root.on('kernel-test/serial', () => {
      seen.push('b')
      return false
    })
    root.on('kernel-test/serial', () => {
      seen.push('c')
      return undefined
    })
    root.on('kernel-test/serial', () => {
      seen.push('d')
      return 'winner'
    })
    root.on('kernel-test/serial', () => {
      seen.push('e')
      return 'too late'
    })
    const result = root.serial('kernel-test/serial', 's')
    await drain()
    expect(seen).toEqual(['a:start'])
    gate.resolve()
    expect(await result).toBe('winner')
    expect(seen).toEqual(['a:start', 'a:end', 'b', 'c', 'd'])
  })

  it.each([
    ['0', 0],
    ["''", ''],
    ['NaN', Number.NaN],
  ])('K-3 serial: %s wins (only null, undefined and false are skipped)', async (_label, value) => {
    const root = new Context()
    const later = vi.fn(() => 'later')
    root.on('kernel-test/serial', () => value)
    root.on('kernel-test/serial', later)
    expect(await root.serial('kernel-test/serial', 's')).toBe(value)
    expect(later).not.toHaveBeenCalled()
  })

  it('K-3 serial: no winner resolves to undefined; a throw rejects and skips later listeners', async () => {
    const root = new Context()
    root.on('kernel-test/serial', () => null)
    expect(await root.serial('kernel-test/serial', 's')).toBeUndefined()
    const later = vi.fn()
    root.on('kernel-test/serial', () => {
      throw new Error('serial broke')
    })
    root.on('kernel-test/serial', later)
    await expect(root.serial('kernel-test/serial', 's')).rejects.toThrow('serial broke')
    expect(later).not.toHaveBeenCalled()
  })

  it('K-3 bail: synchronous serial; a returned promise is itself a winning value (never awaited)', () => {
    const root = new Context()
    const seen: string[] = []
    root.on('kernel-test/bail', () => {
      seen.push('a')
      return false
    })
    root.on('kernel-test/bail', () => {
      seen.push('b')
      return 0
    })
    root.on('kernel-test/bail', () => {
      seen.push('c')
      return 'late'
    })
    expect(root.bail('kernel-test/bail', 'b')).toBe(0)
    expect(seen).toEqual(['a', 'b'])

    const other = new Context()
    const pending = Promise.resolve(null)
    other.on('kernel-test/bail', () => pending)
    other.on('kernel-test/bail', () => 'never reached')
    expect(other.bail('kernel-test/bail', 'b')).toBe(pending)
  })

  it('K-3 waterfall: around-middleware, first registered is outermost, the outermost return is the result', () => {
    const root = new Context()
    const seen: string[] = []
    root.on('kernel-test/waterfall', (input, next) => {
      seen.push(`outer:${input}`)
      return `outer(${next()})`
    })
    root.on('kernel-test/waterfall', (input, next) => {
      seen.push(`inner:${input}`)
      return `inner(${next()})`
    })
    const result = root.waterfall('kernel-test/waterfall', 'in', (...args: unknown[]) => {
      seen.push(`core:${args.length}`)
      return 'core'
    })
    expect(result).toBe('outer(inner(core))')
    // The innermost function is called with no arguments.
    expect(seen).toEqual(['outer:in', 'inner:in', 'core:0'])
  })

  it('K-3 waterfall: next() takes no arguments (values passed to it are dropped)', () => {
    const root = new Context()
    let innerSaw: string | undefined
    root.on('kernel-test/waterfall', (_input, next) => next('rewritten'))
    root.on('kernel-test/waterfall', (input, next) => {
      innerSaw = input
      return next()
    })
    root.waterfall('kernel-test/waterfall', 'original', () => 'core')
    expect(innerSaw).toBe('original')
  })

  it('K-3 waterfall: not calling next() short-circuits every inner listener and the core', () => {
    const root = new Context()
    const inner = vi.fn((_input: string, next: () => string) => next())
    const core = vi.fn(() => 'core')
    root.on('kernel-test/waterfall', () => 'ruling')
    root.on('kernel-test/waterfall', inner)
    expect(root.waterfall('kernel-test/waterfall', 'x', core)).toBe('ruling')
    expect(inner).not.toHaveBeenCalled()
    expect(core).not.toHaveBeenCalled()
  })

  it('K-3 waterfall: with no listeners the core runs alone; async listeners compose as promises', async () => {
    const root = new Context()
    expect(root.waterfall('kernel-test/waterfall', 'x', () => 'core only')).toBe('core only')
    root.on('kernel-test/waterfall', (async (_input: string, next: () => Promise<string>) => `a(${await next()})`) as never)
    const result = root.waterfall('kernel-test/waterfall', 'x', (async () => 'core') as never) as unknown as Promise<string>
    expect(await result).toBe('a(core)')
  })

  it('K-7: a waterfall listener calling next() a second time throws', () => {
    const root = new Context()
    let calls = 0
    root.on('kernel-test/waterfall', (_input, next) => {
      next()
      return next()
    })
    expect(() => root.waterfall('kernel-test/waterfall', 'x', () => String(++calls))).toThrow('next() called multiple times')
    expect(calls).toBe(1)
  })
})

describe('K-5 listener options and internal/dispatch', () => {
  it('K-5: prepend runs first; prepends stack (the last registered runs first)', () => {
    const root = new Context()
    const seen: string[] = []
    root.on('kernel-test/emit', () => void seen.push('plain-1'))
    root.on('kernel-test/emit', () => void seen.push('prepend-1'), { prepend: true })
    root.on('kernel-test/emit', () => void seen.push('plain-2'))
    root.on('kernel-test/emit', () => void seen.push('prepend-2'), { prepend: true })
    root.emit('kernel-test/emit', 'x')
    expect(seen).toEqual(['prepend-2', 'prepend-1', 'plain-1', 'plain-2'])
  })

  it('K-5: a bare boolean option means prepend', () => {
    const root = new Context()
    const seen: string[] = []
    root.on('kernel-test/emit', () => void seen.push('plain'))
    root.on('kernel-test/emit', () => void seen.push('bare-true'), true)
    root.on('kernel-test/emit', () => void seen.push('bare-false'), false)
    root.emit('kernel-test/emit', 'x')
    expect(seen).toEqual(['bare-true', 'plain', 'bare-false'])
  })

  it('K-5: prepend decides waterfall nesting too (a prepended listener is outermost)', () => {
    const root = new Context()
    root.on('kernel-test/waterfall', (_i, next) => `plain(${next()})`)
    root.on('kernel-test/waterfall', (_i, next) => `first(${next()})`, { prepend: true })
    expect(root.waterfall('kernel-test/waterfall', 'x', () => 'core')).toBe('first(plain(core))')
  })

  it('K-5: a thisArg carrying [Context.filter] filters listeners by their context; global bypasses it', () => {
    const root = new Context()
    const tagged = root.extend({ tag: 'blocked' })
    const seen: string[] = []
    let filteredContexts = 0
    root.on('kernel-test/emit', () => void seen.push('untagged'))
    tagged.on('kernel-test/emit', () => void seen.push('tagged'))
    tagged.on('kernel-test/emit', () => void seen.push('tagged-global'), { global: true })
    const carrier = {
      [Context.filter](ctx: Context) {
        filteredContexts++
        return (ctx as unknown as { tag?: string }).tag !== 'blocked'
      },
    }
    root.emit(carrier, 'kernel-test/emit', 'x')
    expect(seen).toEqual(['untagged', 'tagged-global'])
    // The global listener is admitted without consulting the filter.
    expect(filteredContexts).toBe(2)
  })

  it('K-5: listeners receive the carrier as `this`', () => {
    const root = new Context()
    const carrier = { [Context.filter]: () => true, id: 'carrier' }
    let self: unknown
    root.on('kernel-test/emit', function (this: unknown) {
      self = this
    } as never)
    root.emit(carrier, 'kernel-test/emit', 'x')
    expect(self).toBe(carrier)
  })

  it('K-5: internal/dispatch sees (mode, name, args, thisArg); parallel is reported as emit', async () => {
    const root = new Context()
    const reports: [string, string | symbol, unknown[], unknown][] = []
    root.on('internal/dispatch', (mode, name, args, thisArg) => {
      reports.push([mode, name, [...args], thisArg])
    })
    const carrier = { [Context.filter]: () => true }
    root.emit('kernel-test/emit', 'e')
    await root.parallel('kernel-test/parallel', 'p')
    await root.serial(carrier, 'kernel-test/serial', 's')
    root.bail('kernel-test/bail', 'b')
    const core = () => 'core'
    root.waterfall('kernel-test/waterfall', 'w', core)
    expect(reports).toEqual([
      ['emit', 'kernel-test/emit', ['e'], null],
      ['emit', 'kernel-test/parallel', ['p'], null],
      ['serial', 'kernel-test/serial', ['s'], carrier],
      ['bail', 'kernel-test/bail', ['b'], null],
      ['waterfall', 'kernel-test/waterfall', ['w', core], null],
    ])
  })

  it('K-5: internal/dispatch is only emitted when it has listeners', () => {
    const root = new Context()
    const emit = vi.spyOn(EventsService.prototype, 'emit')
    try {
      const vetoCalls = () => emit.mock.calls.filter((call) => call[0] === 'internal/dispatch').length
      root.emit('kernel-test/emit', 'x')
      expect(vetoCalls()).toBe(0)
      const off = root.on('internal/dispatch', () => {})
      root.emit('kernel-test/emit', 'x')
      expect(vetoCalls()).toBe(1)
      off()
      root.emit('kernel-test/emit', 'x')
      expect(vetoCalls()).toBe(1)
    } finally {
      emit.mockRestore()
    }
  })

  it('K-5: internal/* events are not reported to internal/dispatch', async () => {
    const root = new Context()
    const names: (string | symbol)[] = []
    root.on('internal/dispatch', (_mode, name) => void names.push(name))
    // Loading a plugin emits internal/plugin and internal/status; none of them is reported.
    await root.plugin(() => {})
    root.emit('kernel-test/emit', 'x')
    expect(names).toEqual(['kernel-test/emit'])
  })

  it('K-5: a throw from internal/dispatch vetoes emit, bail and waterfall synchronously, before any listener', () => {
    const root = new Context()
    const listener = vi.fn(() => 'value')
    const core = vi.fn(() => 'core')
    root.on('kernel-test/emit', listener)
    root.on('kernel-test/bail', listener)
    root.on('kernel-test/waterfall', (_i, next) => {
      listener()
      return next()
    })
    root.on('internal/dispatch', (mode, name) => {
      throw new Error(`veto ${mode} ${String(name)}`)
    })
    expect(() => root.emit('kernel-test/emit', 'x')).toThrow('veto emit kernel-test/emit')
    expect(() => root.bail('kernel-test/bail', 'x')).toThrow('veto bail kernel-test/bail')
    expect(() => root.waterfall('kernel-test/waterfall', 'x', core)).toThrow('veto waterfall kernel-test/waterfall')
    expect(listener).not.toHaveBeenCalled()
    expect(core).not.toHaveBeenCalled()
  })

  it('K-5: for serial and parallel the veto is a rejected promise, not a synchronous throw', async () => {
    const root = new Context()
    const listener = vi.fn()
    root.on('kernel-test/serial', listener)
    root.on('kernel-test/parallel', listener)
    root.on('internal/dispatch', (mode) => {
      throw new Error(`veto ${mode}`)
    })
    let serial: Promise<unknown> | undefined
    let parallel: Promise<unknown> | undefined
    expect(() => {
      serial = root.serial('kernel-test/serial', 'x')
      parallel = root.parallel('kernel-test/parallel', 'x')
    }).not.toThrow()
    await expect(serial).rejects.toThrow('veto serial')
    await expect(parallel).rejects.toThrow('veto emit')
    expect(listener).not.toHaveBeenCalled()
  })

  it('K-5: disposing the veto listener restores dispatch; on() returns that disposer', () => {
    const root = new Context()
    const listener = vi.fn()
    root.on('kernel-test/emit', listener)
    const dispose = root.on('internal/dispatch', () => {
      throw new Error('veto')
    })
    expect(() => root.emit('kernel-test/emit', 'x')).toThrow('veto')
    dispose()
    root.emit('kernel-test/emit', 'x')
    expect(listener).toHaveBeenCalledTimes(1)
  })
})

describe('K-6 effects', () => {
  it('K-6: disposers of one effect run in reverse order', async () => {
    const root = new Context()
    const seen: string[] = []
    const dispose = root.effect(function* () {
      yield () => void seen.push('first')
      yield () => void seen.push('second')
      yield () => void seen.push('third')
    })
    await dispose()
    expect(seen).toEqual(['third', 'second', 'first'])
  })

  it('K-6: a failing effect setup rolls back what it already registered and throws', () => {
    const root = new Context()
    const seen: string[] = []
    expect(() =>
      root.effect(function* () {
        yield () => void seen.push('undo a')
        yield () => void seen.push('undo b')
        throw new Error('setup failed')
      }),
    ).toThrow('setup failed')
    expect(seen).toEqual(['undo b', 'undo a'])
  })

  it('K-6: an effect disposer runs once; on() is an effect whose disposer removes the listener', async () => {
    const root = new Context()
    let undone = 0
    const dispose = root.effect(() => () => void undone++)
    await dispose()
    await dispose()
    expect(undone).toBe(1)
    const listener = vi.fn()
    const off = root.on('kernel-test/emit', listener)
    off()
    root.emit('kernel-test/emit', 'x')
    expect(listener).not.toHaveBeenCalled()
  })

  it('K-6: unloading a plugin undoes its listeners, effects and services', async () => {
    const root = new Context()
    const seen: string[] = []
    const fiber = root.plugin((ctx: Context) => {
      ctx.on('kernel-test/emit', () => void seen.push('listener'))
      ctx.effect(() => () => void seen.push('effect undone'))
      ctx.plugin(KernelTestService, 'inner')
    })
    await fiber
    root.emit('kernel-test/emit', 'x')
    expect(svcVersion(root)).toBe('inner')
    await fiber.dispose()
    root.emit('kernel-test/emit', 'x')
    expect(seen).toEqual(['listener', 'effect undone'])
    expect(svcVersion(root)).toBeUndefined()
  })

  it('K-6: a plugin whose setup throws is rolled back (its listeners removed) and the error is logged, not thrown to plugin()', async () => {
    const root = new Context()
    const listener = vi.fn()
    let fiber: ReturnType<Context['plugin']> | undefined
    expect(() => {
      fiber = root.plugin((ctx: Context) => {
        ctx.on('kernel-test/emit', listener)
        throw new Error('plugin setup failed')
      })
    }).not.toThrow()
    await expect(Promise.resolve(fiber!).then(() => 'ok')).rejects.toThrow('plugin setup failed')
    await drain()
    root.emit('kernel-test/emit', 'x')
    expect(listener).not.toHaveBeenCalled()
    // The default logger only buffers: without an exporter nothing is printed.
    expect(root.logger.buffer.some((m) => String(m.args[0]).includes('plugin setup failed'))).toBe(true)
  })
})

describe('K-1 plugins', () => {
  afterEach(() => vi.restoreAllMocks())

  it('K-1: a plugin is an arrow function, a class (built with new) or an object with apply; each gets (ctx, config)', async () => {
    const root = new Context()
    const seen: unknown[] = []
    await root.plugin((_ctx: Context, config: unknown) => void seen.push(['arrow', config]), 1)
    class ClassPlugin {
      constructor(_ctx: Context, config: unknown) {
        seen.push(['class', config, new.target === ClassPlugin])
      }
    }
    await root.plugin(ClassPlugin, 2)
    await root.plugin({ apply: (_ctx: Context, config: unknown) => void seen.push(['object', config]) }, 3)
    expect(seen).toEqual([['arrow', 1], ['class', 2, true], ['object', 3]])
  })

  it('K-1: a disposer returned by an arrow or apply plugin runs on unload', async () => {
    const root = new Context()
    let undone = 0
    const arrow = root.plugin(() => () => void undone++)
    await arrow
    await arrow.dispose()
    const object = root.plugin({ apply: () => () => void undone++ })
    await object
    await object.dispose()
    expect(undone).toBe(2)
  })

  it('K-1 trap: a plain `function` plugin is called with new, so the disposer it returns is lost', async () => {
    const root = new Context()
    let undone = 0
    let calledWithNew = false
    function legacyPlugin(this: unknown, _ctx: Context) {
      calledWithNew = new.target !== undefined
      return () => void undone++
    }
    const fiber = root.plugin(legacyPlugin)
    await fiber
    await fiber.dispose()
    expect(calledWithNew).toBe(true)
    expect(undone).toBe(0)
  })

  it('K-1: a plugin stays pending until every injected service exists', async () => {
    const root = new Context()
    const apply = vi.fn((_ctx: Context) => {})
    const fiber = root.plugin({ inject: ['kernel-test-svc'], apply: (ctx: Context) => apply(ctx) })
    await drain()
    expect(apply).not.toHaveBeenCalled()
    await root.plugin(KernelTestService, 'v1')
    await fiber
    expect(apply).toHaveBeenCalledTimes(1)
  })

  it('K-1: a dependency change reloads the plugin (old effects undone, setup re-run with the new service)', async () => {
    const root = new Context()
    const seen: string[] = []
    root.plugin({
      inject: ['kernel-test-svc'],
      apply: (ctx: Context) => {
        const version = ctx['kernel-test-svc'].version
        seen.push(`up ${version}`)
        return () => void seen.push(`down ${version}`)
      },
    })
    const v1 = root.plugin(KernelTestService, 'v1')
    await v1
    await drain()
    await v1.dispose()
    await drain()
    expect(seen).toEqual(['up v1', 'down v1'])
    await root.plugin(KernelTestService, 'v2')
    await drain()
    expect(seen).toEqual(['up v1', 'down v1', 'up v2'])
  })

  it('K-1: a plugin whose setup failed is not reloaded by dependency changes', async () => {
    const root = new Context()
    let broken = true
    const apply = vi.fn((_ctx: Context) => {
      if (broken) throw new Error('broken plugin')
    })
    const fiber = root.plugin({ inject: ['kernel-test-svc'], apply: (ctx: Context) => apply(ctx) })
    fiber.then(undefined, () => {})
    const v1 = root.plugin(KernelTestService, 'v1')
    await v1
    await drain()
    expect(apply).toHaveBeenCalledTimes(1)
    await v1.dispose()
    await root.plugin(KernelTestService, 'v2')
    await drain()
    expect(apply).toHaveBeenCalledTimes(1)
    // An explicit update clears the failure and runs setup again.
    broken = false
    await fiber.update({})
    expect(apply).toHaveBeenCalledTimes(2)
  })

  it('K-1: a bad config (synchronous Standard Schema) is logged, not thrown; the plugin does not run', async () => {
    const root = new Context()
    const apply = vi.fn((_ctx: Context, _config: number) => {})
    const Config: ConfigSchema = {
      '~standard': {
        version: 1,
        vendor: 'dsh-test',
        validate: (value: unknown) =>
          typeof value === 'number' ? { value } : { issues: [{ message: 'expected a number', path: ['limit'] }] },
      },
    }
    let fiber: ReturnType<Context['plugin']> | undefined
    const plugin = { Config, apply: (ctx: Context, config: number) => apply(ctx, config) }
    expect(() => (fiber = root.plugin(plugin, 'not a number' as never))).not.toThrow()
    await expect(Promise.resolve(fiber!).then(() => 'ok')).rejects.toThrow(/invalid config:\n {2}- expected a number \(at limit\)/)
    expect(apply).not.toHaveBeenCalled()
    await root.plugin(plugin, 7)
    expect(apply).toHaveBeenCalledWith(expect.anything(), 7)
  })

  it('K-1: an asynchronous Config validator is refused', async () => {
    const root = new Context()
    const Config = { '~standard': { version: 1, vendor: 'dsh-test', validate: async (value: unknown) => ({ value }) } } as unknown as ConfigSchema
    const fiber = root.plugin({ Config, apply: (_ctx: Context, _config: unknown) => {} }, {})
    await expect(Promise.resolve(fiber).then(() => 'ok')).rejects.toThrow('Async config validation is not supported')
  })

  it('K-1: reading ctx.x without inject throws inside a plugin; ctx.get(x) reads optional services', async () => {
    const root = new Context()
    let direct: unknown
    let optional: unknown
    let missing: unknown = 'unset'
    await root.plugin(KernelTestService, 'v1')
    await root.plugin((ctx: Context) => {
      try {
        direct = ctx['kernel-test-svc']
      } catch (error) {
        direct = error
      }
      optional = svcVersion(ctx)
      missing = ctx.get('no-such-service')
    })
    expect(direct).toBeInstanceOf(Error)
    expect((direct as Error).message).toBe('cannot get property "kernel-test-svc" without inject')
    expect(optional).toBe('v1')
    expect(missing).toBeUndefined()
  })

  it('K-1/K-2: with inject, ctx.x is the service found by its key', async () => {
    const root = new Context()
    let version: string | undefined
    await root.plugin(KernelTestService, 'keyed')
    await root.plugin({ inject: ['kernel-test-svc'], apply: (ctx: Context) => void (version = ctx['kernel-test-svc'].version) })
    expect(version).toBe('keyed')
  })

  it('K-2: a second provider under the same key is refused while the first is alive', async () => {
    const root = new Context()
    await root.plugin(KernelTestService, 'first')
    const second = root.plugin(KernelTestService, 'second')
    await expect(Promise.resolve(second).then(() => 'ok')).rejects.toThrow('service "kernel-test-svc" has been registered')
    expect(svcVersion(root)).toBe('first')
  })
})

describe('K-2 services', () => {
  it('K-2: inside a service method called through another context, this.ctx is the caller\'s context', async () => {
    const root = new Context()
    await root.plugin(KernelTestService, 'v1')
    const caller = root.extend({ marker: 'caller' })
    const svc = caller.get('kernel-test-svc') as KernelTestService
    expect(((svc as unknown as { ctx: { marker?: string } }).ctx).marker).toBe('caller')
  })

  it('K-2 trap: #private fields of a service are unreachable through the tracing proxy', async () => {
    class PrivateService extends Service {
      #secret = 'hidden'
      constructor(ctx: Context) {
        super(ctx, 'kernel-test-private')
      }

      reveal() {
        return this.#secret
      }
    }
    const root = new Context()
    await root.plugin(PrivateService)
    const svc = root.get('kernel-test-private') as unknown as PrivateService
    expect(() => svc.reveal()).toThrow(TypeError)
  })
})

describe('emitContained (K-3 contained notifications)', () => {
  it('K-3: a throwing listener is reported and later listeners still run', () => {
    const root = new Context()
    const seen: string[] = []
    const reported: [string, unknown][] = []
    root.on('kernel-test/emit', (label) => void seen.push(`a:${label}`))
    root.on('kernel-test/emit', () => {
      throw new Error('observer broke')
    })
    root.on('kernel-test/emit', (label) => void seen.push(`c:${label}`))
    emitContained(root, 'kernel-test/emit', ['x'], (name, error) => reported.push([name, error]))
    expect(seen).toEqual(['a:x', 'c:x'])
    expect(reported).toHaveLength(1)
    expect(reported[0][0]).toBe('kernel-test/emit')
    expect((reported[0][1] as Error).message).toBe('observer broke')
  })

  it('K-3: the default reporter writes the failure to stderr', () => {
    const root = new Context()
    const write = vi.spyOn(process.stderr, 'write').mockImplementation(() => true)
    try {
      root.on('kernel-test/emit', () => {
        throw new Error('loud failure')
      })
      emitContained(root, 'kernel-test/emit', ['x'])
      expect(write).toHaveBeenCalledTimes(1)
      expect(String(write.mock.calls[0][0])).toMatch(/^dsh: listener of kernel-test\/emit failed: Error: loud failure/)
    } finally {
      write.mockRestore()
    }
  })

  it('K-3/K-5: admission and order match emit (prepend first, a carrier filter applies, global bypasses it)', () => {
    const root = new Context()
    const tagged = root.extend({ tag: 'blocked' })
    const seen: string[] = []
    root.on('kernel-test/emit', () => void seen.push('plain'))
    root.on('kernel-test/emit', () => void seen.push('prepended'), true)
    tagged.on('kernel-test/emit', () => void seen.push('blocked'))
    tagged.on('kernel-test/emit', () => void seen.push('blocked-global'), { global: true })
    const carrier = { [Context.filter]: (ctx: Context) => (ctx as unknown as { tag?: string }).tag !== 'blocked' }
    emitContained(root, 'kernel-test/emit', ['x'], () => {}, carrier)
    expect(seen).toEqual(['prepended', 'plain', 'blocked-global'])
    seen.length = 0
    emitContained(root, 'kernel-test/emit', ['x'], () => {})
    expect(seen).toEqual(['prepended', 'plain', 'blocked', 'blocked-global'])
  })

  it('K-5: an internal/dispatch veto is not contained: it throws before any listener runs', () => {
    const root = new Context()
    const listener = vi.fn()
    const report = vi.fn()
    root.on('kernel-test/emit', listener)
    root.on('internal/dispatch', () => {
      throw new Error('invariant veto')
    })
    expect(() => emitContained(root, 'kernel-test/emit', ['x'], report)).toThrow('invariant veto')
    expect(listener).not.toHaveBeenCalled()
    expect(report).not.toHaveBeenCalled()
  })
})
