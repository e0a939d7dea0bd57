// Preloaded into a benchmarked dsh process (`node --require`): on exit, writes the process's
// peak RSS (KB) and its own CPU time (user + system, microseconds) to the file named by
// DSH_BENCH_RSS_FILE. Portable where /usr/bin/time is not.
const { appendFileSync } = require('node:fs')
const file = process.env.DSH_BENCH_RSS_FILE
if (file) {
  process.on('exit', () => {
    const usage = process.resourceUsage()
    appendFileSync(file, `${usage.maxRSS} ${usage.userCPUTime + usage.systemCPUTime}\n`)
  })
}
