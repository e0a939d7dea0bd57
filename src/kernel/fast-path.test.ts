/**
 * The hot-path helpers (untraced, eventsOf, serviceLookup): they bypass Cordis' tracing proxies,
 * so these tests pin that they see exactly what `ctx.*` sees (K-2, K-3, K-5).
 */
import { Context, Service } from 'cordis'
import { describe, expect, it } from 'vitest'
import { eventsOf, serviceLookup, untraced } from './index.js'

declare module 'cordis' {
  interface Context {
    'fast-path-svc': FastPathService
  }
  interface Events {
    /** @mode waterfall. Test-only. */
    'fast-path/waterfall'(input: string, next: () => string): string
  }
}

class FastPathService extends Service {
  constructor(ctx: Context, public readonly label: string) {
    super(ctx, 'fast-path-svc')
  }
  callerContext(): Context {
    return this.ctx
  }
}

const drain = () => new Promise<void>((resolve) => setImmediate(resolve))

describe('K-2 untraced services', () => {
  it('K-2: untraced gives the service object behind the proxy; plain values pass through', async () => {
    const root = new Context()
    await root.plugin(FastPathService, 'a')
    const traced = root.get('fast-path-svc')!
    const raw = untraced(traced)
    expect(raw).not.toBe(traced)
    expect(raw).toBeInstanceOf(FastPathService)
    expect(untraced(raw)).toBe(raw)
    expect(raw.label).toBe('a')
    const plain = { a: 1 }
    expect(untraced(plain)).toBe(plain)
    expect(untraced(undefined)).toBeUndefined()
    // The raw service's context is its own, not a caller's (why hot paths use it only where that is right).
    const child = root.extend({ tag: 1 })
    expect(child.get('fast-path-svc')!.callerContext()).not.toBe(raw.callerContext())
  })

  it('K-2: serviceLookup follows provide, dispose, replacement and a pending provider like ctx.get', async () => {
    const root = new Context()
    const lookup = serviceLookup(root, 'fast-path-svc')
    expect(lookup()).toBeUndefined()
    const first = root.plugin(FastPathService, 'first')
    await first
    expect(lookup()?.label).toBe('first')
    expect(lookup()).toBe(lookup())
    first.dispose()
    await drain()
    expect(root.get('fast-path-svc')).toBeUndefined()
    expect(lookup()).toBeUndefined()
    await root.plugin(FastPathService, 'second')
    expect(lookup()?.label).toBe('second')
    // A provider waiting for a missing dependency is not active: neither sees it.
    const fresh = new Context()
    const pendingLookup = serviceLookup(fresh, 'fast-path-svc')
    class Needy extends FastPathService { static inject = ['missing-dependency'] }
    fresh.plugin(Needy, 'needy')
    await drain()
    expect(fresh.get('fast-path-svc')).toBeUndefined()
    expect(pendingLookup()).toBeUndefined()
  })
})

describe('K-3/K-5 dispatch through the untraced events service', () => {
  it('K-5: eventsOf(ctx).waterfall admits, orders and filters listeners exactly like ctx.waterfall', () => {
    const root = new Context()
    const tagged = root.extend({ tagged: true } as never)
    const order: string[] = []
    root.on('fast-path/waterfall', (input, next) => { order.push('root'); return `${next()}+root` })
    tagged.on('fast-path/waterfall', (input, next) => { order.push('tagged'); return `${next()}+tagged` })
    const carrier = { [Context.filter]: (ctx: Context) => (ctx as unknown as { tagged?: boolean }).tagged !== true }
    const viaCtx = root.waterfall(carrier, 'fast-path/waterfall', 'x', () => 'core')
    const viaEvents = eventsOf(root).waterfall(carrier, 'fast-path/waterfall', 'x', () => 'core')
    expect(viaEvents).toBe(viaCtx)
    expect(viaEvents).toBe('core+root')
    order.length = 0
    expect(eventsOf(tagged).waterfall('fast-path/waterfall', 'x', () => 'core')).toBe(root.waterfall('fast-path/waterfall', 'x', () => 'core'))
    expect(order).toEqual(['root', 'tagged', 'root', 'tagged'])
  })

  it('K-5: an internal/dispatch veto stops the untraced dispatch too', () => {
    const root = new Context()
    root.on('internal/dispatch', () => { throw new Error('vetoed') })
    expect(() => eventsOf(root).waterfall('fast-path/waterfall', 'x', () => 'core')).toThrow('vetoed')
  })
})
