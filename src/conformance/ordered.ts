/** Runs `task` over `items` with at most `limit` in flight, yielding the results in item order. */
export async function* orderedPool<T, R>(items: Iterable<T>, limit: number, task: (item: T) => Promise<R>): AsyncGenerator<R> {
  const pending: Promise<R>[] = []
  const iterator = items[Symbol.iterator]()
  const fill = () => {
    while (pending.length < limit) {
      const next = iterator.next()
      if (next.done === true) return
      const started = task(next.value)
      started.catch(() => undefined) // awaited in order below; never an unhandled rejection meanwhile
      pending.push(started)
    }
  }
  fill()
  while (pending.length > 0) {
    const result = await pending.shift()!
    fill()
    yield result
  }
}

/** How many scenario processes run at once: `DSH_CONFORMANCE_JOBS`, else two per core. */
export function conformanceJobs(): number {
  const configured = Number(process.env.DSH_CONFORMANCE_JOBS)
  if (Number.isInteger(configured) && configured > 0) return configured
  return 2 * (globalThis.navigator?.hardwareConcurrency ?? 2)
}
