// Preloaded into a benchmarked dsh process (`node --expose-gc --require`): on SIGUSR2 it
// collects garbage, then writes `<heapUsed bytes> <rss bytes> <open file descriptors>` to
// DSH_BENCH_STATS_FILE.<n> (n = 1, 2, ... per signal), created whole by a rename.
const { readdirSync, renameSync, writeFileSync } = require('node:fs')
const file = process.env.DSH_BENCH_STATS_FILE
if (file) {
  let n = 0
  process.on('SIGUSR2', () => {
    if (typeof global.gc === 'function') { global.gc(); global.gc() }
    const { heapUsed, rss } = process.memoryUsage()
    const fds = readdirSync('/proc/self/fd').length
    n += 1
    writeFileSync(`${file}.tmp`, `${heapUsed} ${rss} ${fds}\n`)
    renameSync(`${file}.tmp`, `${file}.${n}`)
  })
}
