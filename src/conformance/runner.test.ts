import { execFile } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { Context } from 'cordis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { encodeSessionFile } from '../session/codec.js'
import { SessionsServicePlugin } from '../session/index.js'
import { assistantMessage, userMessage } from '../session/testing/fixtures.js'
import { findSkip, runConformance, sessionLogSuite, type ConformanceSuite } from './index.js'
import { lineOfSeq } from './session-logs.js'
import { packEvents } from '../session/chunk-rows.js'

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '../..')
const corpus = resolve(repoRoot, '../shared/fixtures/dsh')

/** A valid one-turn log built through the real service, with a text run that packs. */
async function validLog() {
  const ctx = new Context()
  await ctx.plugin(SessionsServicePlugin, { now: () => 1000 })
  const session = ctx.sessions.create({ id: 'conf-1', cwd: '/w' })
  session.append('turn/start', { turn: 1 })
  session.append('step/start', { turn: 1, step: 1 })
  session.append('user/message', userMessage('hi'), { surfaceOp: 'append' })
  const chunkSeqs: number[] = []
  chunkSeqs.push(session.append('assistant/chunk', { turn: 1, step: 1, chunk: { type: 'block-start', index: 0, blockType: 'text' } }).seq)
  for (const text of ['he', 'll', 'o']) chunkSeqs.push(session.append('assistant/chunk', { turn: 1, step: 1, chunk: { type: 'text-delta', index: 0, text } }).seq)
  session.append('assistant/message', { turn: 1, step: 1, message: assistantMessage('a1', 'hello') }, { surfaceOp: 'append', sourceEventSeqs: chunkSeqs })
  session.append('step/end', { turn: 1, step: 1 })
  session.append('turn/end', { turn: 1, reason: { kind: 'completed' } })
  // A second, crashed turn: repair must close it.
  session.append('turn/start', { turn: 2 })
  return { header: session.header, events: [...session.events] }
}

describe('conformance runner', () => {
  let dir: string
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'dsh-conformance-'))
    const { header, events } = await validLog()
    const write = (path: string, text: string): void => {
      mkdirSync(dirname(join(dir, path)), { recursive: true })
      writeFileSync(join(dir, path), text)
    }
    write('good/session.jsonl', encodeSessionFile(header, events, { projected: true }))
    write('good/session.1.jsonl', encodeSessionFile(header, events))
    const broken = encodeSessionFile(header, events, { projected: true }).split('\n')
    broken[2] = broken[2].replace('"type":"step/start"', '"type":"step/start","note":1')
    write('broken/session.jsonl', broken.join('\n'))
    // A projected file whose layout is not the canonical packing (the run stored verbatim).
    write('unpacked/session.expected.jsonl', encodeSessionFile(header, events, { projected: true, packed: false }))
    write('other/seed.jsonl', '{"jsonrpc":"2.0","method":"session/update"}\n')
    // Not a session log name: never looked at.
    write('good/replay.jsonl', 'not json at all\n')
    write('good/stdout.expected.jsonl', 'not json at all\n')
  })
  afterAll(() => rmSync(dir, { recursive: true, force: true }))

  it('prints one line per log, then the summary; fails on a broken log', async () => {
    const lines: string[] = []
    const summary = await runConformance([dir], { suites: [sessionLogSuite()], write: (line) => lines.push(line) })
    const rel = (line: string) => line.replace(dir + '/', '')
    expect(lines.map(rel)).toEqual([
      'FAIL broken/session.jsonl: parse: line 3: unknown top-level key "note" on a step/start event (allowed: type, seq, time, data, ignorable, surfaceOp, sourceEventSeqs)',
      'PASS good/session.1.jsonl',
      'PASS good/session.jsonl',
      'SKIP other/seed.jsonl: not a session log: first line is not a {"type":"session"} header',
      expect.stringMatching(/^FAIL unpacked\/session\.expected\.jsonl: re-pack: line 6 differs from the canonical packing: file has \{"type":"assistant\/chunk".*packing gives \{"type":"text-chunks"/),
      '2 passed, 2 failed, 1 skipped',
    ])
    expect(summary).toEqual({ passed: 2, failed: 2, skipped: 1, exitCode: 1 })
  })

  it('skips by relative path with the reason, and reports a missing directory as a failure', async () => {
    const lines: string[] = []
    const suite = sessionLogSuite({ skips: [{ path: 'broken/session.jsonl', reason: 'known broken' }, { path: 'unpacked/session.expected.jsonl', reason: 'layout demo' }] })
    const summary = await runConformance([join(dir, 'good'), join(dir, 'broken'), join(dir, 'unpacked'), join(dir, 'missing')], { suites: [suite], write: (l) => lines.push(l) })
    expect(lines.map((l) => l.replace(dir + '/', ''))).toEqual([
      'PASS good/session.1.jsonl',
      'PASS good/session.jsonl',
      'SKIP broken/session.jsonl: known broken',
      'SKIP unpacked/session.expected.jsonl: layout demo',
      expect.stringMatching(/^FAIL missing: /),
      '2 passed, 1 failed, 2 skipped',
    ])
    expect(summary.exitCode).toBe(1)
  })

  it('more suites join the same run and summary line', async () => {
    const extra: ConformanceSuite = {
      name: 'replay',
      async *run() { yield { suite: 'replay', status: 'pass', path: 'replay/x' } },
    }
    const lines: string[] = []
    const summary = await runConformance([join(dir, 'good')], { suites: [sessionLogSuite(), extra], write: (l) => lines.push(l) })
    expect(lines.at(-2)).toBe('PASS replay/x')
    expect(lines.at(-1)).toBe('3 passed, 0 failed, 0 skipped')
    expect(summary.exitCode).toBe(0)
  })

  it('names the file line of a failing seq, counting row members', async () => {
    const { events } = await validLog()
    const lines = packEvents(events, { projected: true })
    // header, turn/start, step/start, user/message, block-start, row (seqs 4..6), assistant/message
    expect([0, 3, 4, 6, 7].map((seq) => lineOfSeq(lines, seq))).toEqual([2, 5, 6, 6, 7])
  })

  it('findSkip matches whole trailing path segments only', () => {
    const skips = [{ path: 'a/session.jsonl', reason: 'r' }]
    expect(findSkip('/x/a/session.jsonl', skips)?.reason).toBe('r')
    expect(findSkip('x\\a\\session.jsonl', skips)?.reason).toBe('r')
    expect(findSkip('/x/ba/session.jsonl', skips)).toBeUndefined()
  })

  it('the CLI exits non-zero when a log fails and zero when all pass', async () => {
    const run = promisify(execFile)
    const tsx = resolve(repoRoot, 'node_modules/.bin/tsx')
    const cli = resolve(repoRoot, 'src/conformance/cli.ts')
    const ok = await run(tsx, [cli, join(dir, 'good')], { cwd: repoRoot })
    expect(ok.stdout.trim().split('\n').at(-1)).toBe('2 passed, 0 failed, 0 skipped')
    const failed = await run(tsx, [cli, dir], { cwd: repoRoot }).then(() => null, (error: { code: number; stdout: string }) => error)
    expect(failed?.code).toBe(1)
    expect(failed?.stdout.trim().split('\n').at(-1)).toBe('2 passed, 2 failed, 1 skipped')
  })
})

if (!existsSync(corpus)) console.warn('skipping the corpus conformance run: ../shared/fixtures/dsh absent')
describe.skipIf(!existsSync(corpus))('conformance over the recorded corpus', () => {
  it('every comparable session log passes', async () => {
    const lines: string[] = []
    const summary = await runConformance([corpus], { suites: [sessionLogSuite()], write: (l) => lines.push(l) })
    expect(lines.filter((l) => l.startsWith('FAIL'))).toEqual([])
    expect(summary.failed).toBe(0)
    expect(summary.passed).toBeGreaterThan(0)
  })
})
