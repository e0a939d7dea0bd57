/**
 * Opening a session of about 100,000 events in headless Chromium through a real `dsh web`, with
 * history pages (the page asks for the newest page) and without (the same page, its request
 * rewritten to ask for the whole log, as it did before pages), and prints per mode:
 *   first-render ms   navigation start -> the newest answer is on screen
 *   history-wait ms   request sent -> first byte of `sessions.history` (the server's share)
 *   history-kb        size of the `sessions.history` answer
 *   events            events in that answer
 * and the machine's load average (a loaded machine stretches every figure). Medians of RUNS
 * opens per mode after one warm-up open. No target: the numbers go to docs/benchmarks.md.
 * DSH_PAGING_VERBOSE=1 prints every open with the server's time to first byte of each API call.
 * Run: npx tsx bench/history-paging.bench.ts   (needs the Debian chromium package)
 */
import { loadavg } from 'node:os'
import { openWebBench } from './support/web-bench.js'
import { storeLongSession } from '../test-support/long-session.js'

/** About 11 events a turn (3 streamed chunks, a tool call): 9,000 turns make 100,000 events. */
const TURNS = Number(process.env.DSH_PAGING_TURNS ?? 9000)
const RUNS = Number(process.env.DSH_PAGING_RUNS ?? 3)

async function main(): Promise<void> {
  const bench = await openWebBench('paging', home => storeLongSession(home, home, { turns: TURNS }))
  if (bench === undefined) return
  const { id, web, page } = bench
  try {
    let whole = false
    // Without pages: the same request without `limit`, answered with the whole log as before.
    await page.route('**/api/sessions.history', async route => {
      const params = JSON.parse(route.request().postData() ?? '{}')
      if (whole) delete params.limit
      await route.continue({ postData: JSON.stringify(params) })
    })
    let answer: { bytes: number; events: number; length: number } = { bytes: 0, events: 0, length: 0 }
    page.on('response', response => {
      if (!response.url().endsWith('/api/sessions.history')) return
      void response.body().then(body => {
        const result = JSON.parse(body.toString('utf8')).result
        answer = { bytes: body.length, events: result.events.length, length: result.length }
      }, () => {})
    })
    const runs: Record<'paged' | 'whole', { first: number; wait: number; kb: number; events: number }[]> = { paged: [], whole: [] }
    // Each mode in a block, its first open not counted (the server reads the stored log once; the
    // whole log's 13 MB answers leave garbage that would slow the next open of the other mode).
    const block = (mode: 'whole' | 'paged') => [[mode, false], ...Array.from({ length: RUNS }, () => [mode, true])] as ['whole' | 'paged', boolean][]
    const opens = [...block('whole'), ...block('paged')]
    for (const [mode, counted] of opens) {
      whole = mode === 'whole'
      // The page asks for the session's totals (`sessions.trajectory`, the whole log) once it has
      // drawn: the next open waits for that answer, so it does not queue behind it on the server.
      const settled = page.waitForResponse(response => response.url().endsWith('/api/sessions.trajectory'), { timeout: 120_000 })
      const started = performance.now()
      await page.goto(`${web.origin}/?session=${id}`)
      await page.getByText(`Answer ${TURNS}:`).waitFor({ timeout: 120_000 })
      const first = performance.now() - started
      const waits = await page.evaluate(() => Object.fromEntries((performance.getEntriesByType('resource') as PerformanceResourceTiming[])
        .filter(entry => entry.name.includes('/api/')).map(entry => [entry.name.replace(/.*\/api\//, ''), Math.round(entry.responseStart - entry.requestStart)])))
      const wait = waits['sessions.history'] ?? Number.NaN
      if (process.env.DSH_PAGING_VERBOSE) console.log(mode, Math.round(first), JSON.stringify(waits))
      await settled
      if (counted) runs[mode].push({ first, wait, kb: answer.bytes / 1024, events: answer.events })
    }
    const median = (values: number[]) => values.sort((a, b) => a - b)[Math.floor(values.length / 2)]!
    console.log(`session-events ${answer.length} (${TURNS} turns)`)
    console.log(`load-average ${loadavg()[0].toFixed(1)} (${RUNS} runs per mode, medians)`)
    for (const mode of ['whole', 'paged'] as const) {
      const list = runs[mode]
      console.log(`${mode === 'whole' ? 'before (whole log)' : 'after (newest page)'}: first-render-ms ${median(list.map(r => r.first)).toFixed(0)}, history-wait-ms ${median(list.map(r => r.wait)).toFixed(0)}, history-kb ${median(list.map(r => r.kb)).toFixed(0)}, events ${list[0]!.events}`)
    }
  } finally {
    await bench.close()
  }
}

await main()
