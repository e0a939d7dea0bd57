import fs, { existsSync, readlinkSync } from 'node:fs'
import { syncBuiltinESMExports } from 'node:module'
import { copyFile, link, mkdtemp, open, readdir, readFile, readlink, rename, rm, stat, utimes, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import fc from 'fast-check'
import { describe, expect, it, vi } from 'vitest'
import { CorruptSessionError, type PersistenceBackend } from './api.js'
import type { SessionEvent } from '../session/types.js'
import { canonical, describeBackendConformance, realisticLog } from './backend.conformance.js'
import { JsonlBackend } from './jsonl/backend.js'
import { encodeSessionId, NO_CWD_KEY, projectKey } from './jsonl/paths.js'

const jsonl = (backend: PersistenceBackend) => backend as JsonlBackend

/**
 * Runs `body` with fs.fsync and/or fs.fdatasync answered by `answers` (the error each call gets,
 * or null) instead of the disk. The backend calls them on a descriptor through its named imports,
 * which syncBuiltinESMExports re-points at the spies; both are put back afterwards.
 */
async function withDiskSyncs(answers: Partial<Record<'fsync' | 'fdatasync', (fd: number) => Error | null>>, body: () => Promise<void>): Promise<void> {
  const spies = Object.entries(answers).map(([name, answer]) => vi.spyOn(fs, name as 'fsync').mockImplementation(((fd: number, callback: (error: Error | null) => void) => {
    callback(answer(fd))
  }) as typeof fs.fsync))
  syncBuiltinESMExports()
  try {
    await body()
  } finally {
    for (const spy of spies) spy.mockRestore()
    syncBuiltinESMExports()
  }
}

async function withRoot(body: (root: string) => Promise<void>): Promise<void> {
  const root = await mkdtemp(join(tmpdir(), 'dsh-jsonl-'))
  try {
    await body(root)
  } finally {
    await rm(root, { recursive: true, force: true })
  }
}

async function rewriteLines(backend: PersistenceBackend, id: string, edit: (lines: string[]) => void): Promise<void> {
  const path = (await jsonl(backend).pathOf(id))!
  const lines = (await readFile(path, 'utf8')).split('\n')
  edit(lines)
  await writeFile(path, lines.join('\n'))
}

describeBackendConformance({
  name: 'jsonl',
  open: (dir, durable = true) => new JsonlBackend({ root: dir, fsync: durable }),
  async modes(backend, root, id) {
    const file = (await jsonl(backend).pathOf(id))!
    return [
      { path: root, mode: 0o700 },
      { path: dirname(dirname(file)), mode: 0o700 },
      { path: dirname(file), mode: 0o700 },
      { path: file, mode: 0o600 },
    ]
  },
  corrupt: (backend, id, seq) => rewriteLines(backend, id, (lines) => {
    for (let i = 1; i < lines.length; i++) {
      if (lines[i] === '') continue
      const record = JSON.parse(lines[i]) as { seq?: number; seq0?: number; data: { texts?: unknown[]; args?: unknown[] } }
      const first = record.seq ?? record.seq0!
      const count = record.seq === undefined ? (record.data.texts ?? record.data.args)!.length : 1
      if (seq >= first && seq < first + count) {
        lines[i] = '{"type":"assistant/chunk","seq":'
        return
      }
    }
    throw new Error(`no record holds seq ${seq}`)
  }),
  setHeaderVersion: (backend, id, version) => rewriteLines(backend, id, (lines) => {
    lines[0] = JSON.stringify({ ...JSON.parse(lines[0]), version })
  }),
  bytes: { file: async (backend, id) => (await jsonl(backend).pathOf(id))! },
  child: { kind: 'jsonl', store: (dir) => dir },
})

describe('JSONL layout (D-4)', () => {
  it('D-4: ids are encoded so dots and separators cannot name another folder', () => {
    expect(encodeSessionId('..')).toBe('%2E.')
    expect(encodeSessionId('.')).toBe('%2E')
    expect(encodeSessionId('a/b')).toBe('a%2Fb')
    expect(encodeSessionId('a\\b')).toBe('a%5Cb')
    expect(encodeSessionId('50%')).toBe('50%25')
    expect(encodeSessionId('abc-DEF_1.2')).toBe('abc-DEF_1.2')
    expect(encodeSessionId('x'.repeat(500)).length).toBeLessThanOrEqual(120)
    expect(encodeSessionId('x'.repeat(500))).not.toBe(encodeSessionId(`${'x'.repeat(499)}y`))
    expect(() => encodeSessionId('')).toThrow(/empty/)
  })

  it('D-4: sessions without a cwd go under _no-cwd; project keys are readable and distinct', () => {
    expect(projectKey(undefined)).toBe(NO_CWD_KEY)
    expect(projectKey('/home/me/my project')).toMatch(/^my_project-[0-9a-f]{16}$/)
    expect(projectKey('/a/proj')).not.toBe(projectKey('/b/proj'))
    expect(projectKey('/')).toMatch(/^root-/)
  })

  it('D-4: the file is a header line then one record per line, chunk runs packed (R-1)', () => withRoot(async (root) => {
    const backend = new JsonlBackend({ root })
    const { header, events } = await realisticLog(1, 3)
    await backend.create(header, events)
    const path = (await backend.pathOf(header.id))!
    expect(path).toBe(join(root, projectKey(header.cwd), encodeSessionId(header.id), 'session.jsonl'))
    const lines = (await readFile(path, 'utf8')).split('\n')
    expect(lines.at(-1)).toBe('')
    expect(JSON.parse(lines[0])).toEqual(header)
    const types = lines.slice(1, -1).map((line) => (JSON.parse(line) as { type: string }).type)
    expect(types).toContain('reasoning-chunks')
    expect(types).toContain('text-chunks')
    expect(types).toContain('tool-call-chunks')
    expect(types.length).toBeLessThan(events.length / 2)
  }))

  it('D-5: a log read in chunks (longer than one, with a line longer than one) reads back whole; a torn tail is cut at its byte offset', () => withRoot(async (root) => {
    const backend = new JsonlBackend({ root })
    const log = await realisticLog(60, 11)
    const first = log.events.findIndex(event => event.type === 'user/message')
    const long = log.events[first] as SessionEvent<'user/message'>
    const events = log.events.map((event, seq) => seq !== first ? event : { ...long, data: { ...long.data, content: [{ type: 'text', text: 'x'.repeat(200_000) }] } }) as SessionEvent[]
    await backend.create(log.header, events)
    const path = (await backend.pathOf(log.header.id))!
    const size = (await stat(path)).size
    expect(size).toBeGreaterThan(4 * 65_536)
    expect(canonical((await new JsonlBackend({ root }).loadStored(log.header.id))!.events)).toEqual(canonical(events))
    await writeFile(path, '{"type":"turn/start","seq":', { flag: 'a' })
    const torn = (await new JsonlBackend({ root }).loadStored(log.header.id))!
    expect(canonical(torn.events)).toEqual(canonical(events))
    expect(torn.torn).toMatchObject({ fromSeq: events.length, reason: 'no-newline', cutAt: size, droppedRecords: 1, droppedBytes: 27 })
  }))

  /** Descriptors of this process open on `path` (Linux /proc). */
  async function openOn(path: string): Promise<number> {
    let count = 0
    for (const fd of await readdir('/proc/self/fd')) {
      if (await readlink(`/proc/self/fd/${fd}`).catch(() => '') === path) count++
    }
    return count
  }

  it.skipIf(!existsSync('/proc/self/fd'))('D-4: one append handle is kept between flushes and released by close()', () => withRoot(async (root) => {
    const backend = new JsonlBackend({ root })
    const { header, events } = await realisticLog(3, 5)
    await backend.create(header, events.slice(0, 10))
    const path = (await backend.pathOf(header.id))!
    for (let at = 10; at < 30; at += 5) await backend.appendBatch(header, events.slice(at, at + 5))
    expect(await openOn(path)).toBe(1)
    await backend.close()
    expect(await openOn(path)).toBe(0)
    expect((await new JsonlBackend({ root }).loadStored(header.id))!.events).toEqual(events.slice(0, 30))
  }))

  it('D-3/D-4: an append resolves after fdatasync of its file; creating a file (temp + link) fsyncs the file, then its folder', () => withRoot(async (root) => {
    const calls: string[] = []
    const record = (name: string) => (fd: number) => {
      calls.push(`${name} ${readlinkSync(`/proc/self/fd/${fd}`)}`)
      return null
    }
    await withDiskSyncs({ fsync: record('fsync'), fdatasync: record('fdatasync') }, async () => {
      const backend = new JsonlBackend({ root })
      const { header, events } = await realisticLog(2, 4)
      await backend.create(header, events.slice(0, 5))
      const dir = dirname((await backend.pathOf(header.id))!)
      expect(calls).toHaveLength(2)
      // The temp file's bytes before it is linked into place, then the folder holding the link.
      expect(calls[0]).toMatch(new RegExp(`^fsync ${dir.replaceAll('/', '\\/')}/\\.session\\.jsonl\\..*\\.tmp`))
      expect(calls[1]).toBe(`fsync ${dir}`)
      calls.length = 0
      await backend.appendBatch(header, events.slice(5, 10))
      expect(calls).toEqual([`fdatasync ${dir}/session.jsonl`])
      await backend.close()
    })
  }))

  it('D-4: an append whose fdatasync fails is truncated back to the previous size; the next append reopens and lands', () => withRoot(async (root) => {
    const backend = new JsonlBackend({ root })
    const { header, events } = await realisticLog(2, 6)
    await backend.create(header, events.slice(0, 5))
    await backend.appendBatch(header, events.slice(5, 8))
    const path = (await backend.pathOf(header.id))!
    const before = (await stat(path)).size
    const eio = () => Object.assign(new Error('EIO: i/o error, fdatasync'), { code: 'EIO' })
    await withDiskSyncs({ fdatasync: eio }, async () => {
      await expect(backend.appendBatch(header, events.slice(8, 12))).rejects.toThrow(/EIO/)
    })
    expect((await stat(path)).size).toBe(before)
    await backend.appendBatch(header, events.slice(8, 12))
    await backend.close()
    const loaded = await new JsonlBackend({ root }).loadStored(header.id)
    expect(loaded?.events.map(event => event.seq)).toEqual(events.slice(0, 12).map(event => event.seq))
    expect(loaded?.torn).toBeUndefined()
  }))

  it('D-4: a file replaced at its path is never written through the kept handle', () => withRoot(async (root) => {
    const backend = new JsonlBackend({ root })
    const { header, events } = await realisticLog(3, 6)
    await backend.create(header, events.slice(0, 10))
    await backend.appendBatch(header, events.slice(10, 20))
    const path = (await backend.pathOf(header.id))!
    // Another writer swaps in a copy (new inode, same bytes); the old inode stays observable.
    const old = join(root, 'old-inode')
    await link(path, old)
    await copyFile(path, `${path}.copy`)
    await rename(`${path}.copy`, path)
    const oldSize = (await stat(old)).size
    await backend.appendBatch(header, events.slice(20, 30))
    expect((await stat(old)).size).toBe(oldSize)
    expect((await new JsonlBackend({ root }).loadStored(header.id))!.events).toEqual(events.slice(0, 30))
    await backend.close()
  }))

  it('D-4: an append against a file that keeps changing under it gives up after a bounded number of rescans, naming the session', () => withRoot(async (root) => {
    const backend = new JsonlBackend({ root, fsync: false })
    const { header, events } = await realisticLog(2, 7)
    await backend.create(header, events.slice(0, 10))
    await backend.appendBatch(header, events.slice(10, 15))
    const path = (await backend.pathOf(header.id))!
    // Another writer touches the file right after every rescan, so its revision never settles.
    const internals = backend as unknown as { scan(id: string, dir: string, force?: boolean): Promise<unknown> }
    const scan = internals.scan.bind(backend)
    let rescans = 0
    let tick = 0
    internals.scan = async (id, dir, force) => {
      rescans++
      if (rescans > 100) throw new Error('unbounded: the append rescanned more than 100 times')
      const state = await scan(id, dir, force)
      const when = new Date(1_800_000_000_000 + ++tick * 1000)
      await utimes(path, when, when)
      return state
    }
    const before = await readFile(path)
    await utimes(path, new Date(1_700_000_000_000), new Date(1_700_000_000_000))
    const error = await backend.appendBatch(header, events.slice(15, 20)).then(() => undefined, (e: unknown) => e as Error)
    expect(error?.message).toMatch(new RegExp(`session "${header.id}".*(changing|another writer)`))
    expect(rescans).toBeLessThanOrEqual(10)
    expect(await readFile(path)).toEqual(before)
    await backend.close()
  }))

  it('D-4: after trash() the next session with that id is written to its own new file', () => withRoot(async (root) => {
    const backend = new JsonlBackend({ root })
    const { header, events } = await realisticLog(2, 8)
    await backend.create(header, events.slice(0, 10))
    await backend.appendBatch(header, events.slice(10, 15))
    expect(await backend.trash(header.id)).toBe(true)
    await backend.appendBatch(header, events.slice(0, 5))
    expect((await new JsonlBackend({ root }).loadStored(header.id))!.events).toEqual(events.slice(0, 5))
    await backend.close()
  }))

  it('S-13: a stored header written without delegationDepth reads as depth 0, as in the file codec', () => withRoot(async (root) => {
    const backend = new JsonlBackend({ root })
    const { header, events } = await realisticLog(1, 1)
    await backend.create(header, events)
    await rewriteLines(backend, header.id, (lines) => {
      const { delegationDepth: _depth, ...older } = JSON.parse(lines[0]) as Record<string, unknown>
      lines[0] = JSON.stringify(older)
    })
    const loaded = await new JsonlBackend({ root }).loadStored(header.id)
    expect(loaded?.header.delegationDepth).toBe(0)
  }))
})

describe('JSONL list index (D-4)', () => {
  const indexPath = (root: string) => join(root, '.cache', 'list-index.json')
  type IndexLine = [key: string, revision: string, summary: { id: string; title: string | null; turns: number }]
  /** The index's lines after its version line, one `[key, revision, summary]` each. */
  const readIndex = async (root: string) => {
    const [version, ...lines] = (await readFile(indexPath(root), 'utf8')).trimEnd().split('\n')
    expect(JSON.parse(version!)).toEqual({ version: 2 })
    return lines.map((line) => JSON.parse(line) as IndexLine)
  }
  const writeIndex = (root: string, lines: readonly IndexLine[]) => writeFile(indexPath(root), [JSON.stringify({ version: 2 }), ...lines.map((line) => JSON.stringify(line))].join('\n') + '\n')

  it('D-4: a listing answers unchanged sessions from the index (a summary kept there is what it returns) and re-reads a session whose log moved', () => withRoot(async (root) => {
    const backend = new JsonlBackend({ root })
    const one = await realisticLog(1, 51)
    const two = await realisticLog(1, 52)
    await backend.create(one.header, one.events)
    await backend.create(two.header, two.events)
    const first = await backend.list()
    expect(first.map((s) => s.id).sort()).toEqual([one.header.id, two.header.id].sort())
    // A title only the index holds: the next listing must take it from there (the log is unchanged).
    const index = await readIndex(root)
    for (const [, , summary] of index) summary.title = `indexed ${summary.id}`
    await writeIndex(root, index)
    const second = await new JsonlBackend({ root }).list()
    expect(second.map((s) => s.title).sort()).toEqual([`indexed ${one.header.id}`, `indexed ${two.header.id}`].sort())
    // An append moves the log's revision: that session is read again, the other still comes from the index.
    const more = await realisticLog(2, 51)
    await backend.appendBatch(one.header, more.events.slice(one.events.length))
    const third = await new JsonlBackend({ root }).list()
    expect(third.find((s) => s.id === one.header.id)).toMatchObject({ title: null, turns: 2, length: more.events.length })
    expect(third.find((s) => s.id === two.header.id)?.title).toBe(`indexed ${two.header.id}`)
    await backend.close()
  }))

  it('D-4: a damaged or foreign index is ignored and rewritten; a trashed session leaves the listing and the index', () => withRoot(async (root) => {
    const backend = new JsonlBackend({ root })
    const one = await realisticLog(1, 53)
    const two = await realisticLog(2, 54)
    await backend.create(one.header, one.events)
    await backend.create(two.header, two.events)
    await backend.list()
    const expected = [[one.header.id, 1], [two.header.id, 2]].sort()
    // Cut short, a line that is not an entry, and an index of the first version (one JSON object).
    const good = await readFile(indexPath(root), 'utf8')
    for (const damaged of [good.slice(0, -5), good.replace(/\n\[/, '\n{"not":"an entry"}\n['), `{"version":1,"entries":{}}\n`]) {
      await writeFile(indexPath(root), damaged)
      const listed = await new JsonlBackend({ root }).list()
      expect(listed.map((s) => [s.id, s.turns]).sort()).toEqual(expected)
      expect(await readIndex(root)).toHaveLength(2)
    }
    expect(await backend.trash(one.header.id)).toBe(true)
    expect((await new JsonlBackend({ root }).list()).map((s) => s.id)).toEqual([two.header.id])
    expect((await readIndex(root)).map(([, , summary]) => summary.id)).toEqual([two.header.id])
    await backend.close()
  }))
})

describe('JSONL listing leaves the event loop free (#43 item 6)', () => {
  /**
   * How many times a self-rescheduling immediate runs while `list()` is pending: each run is one
   * turn of the event loop that the listing let other work (an agent's stream) have.
   */
  async function loopTurnsDuring(list: () => Promise<readonly unknown[]>): Promise<{ turns: number; listed: number }> {
    let turns = 0
    let pending = true
    const tick = () => {
      if (!pending) return
      turns++
      setImmediate(tick)
    }
    setImmediate(tick)
    const listed = (await list()).length
    pending = false
    return { turns, listed }
  }

  it('a listing of many sessions yields to the event loop as it goes, cold (every log read) and warm (every log stat-ed), and lists the same', () => withRoot(async (root) => {
    const writer = new JsonlBackend({ root, fsync: false })
    const log = await realisticLog(1, 61)
    const count = 600 // more than one slice of the list index (500 lines)
    for (let i = 0; i < count; i++) await writer.create({ ...log.header, id: `many-${i}`, cwd: `/work/project-${i % 4}` }, log.events)
    await writer.close()
    const cold = await loopTurnsDuring(() => new JsonlBackend({ root }).list())
    const warm = await loopTurnsDuring(() => new JsonlBackend({ root }).list())
    expect([cold.listed, warm.listed]).toEqual([count, count])
    // Not a single blocking pass: the loop turned at least once per 64 sessions listed.
    expect(cold.turns).toBeGreaterThanOrEqual(count / 64)
    expect(warm.turns).toBeGreaterThanOrEqual(count / 64)
    const again = await new JsonlBackend({ root }).list()
    const byId = (a: readonly unknown[], b: readonly unknown[]) => (String(a[0]) < String(b[0]) ? -1 : 1)
    expect(again.map((s) => [s.id, s.turns, s.length]).sort(byId)).toEqual(Array.from({ length: count }, (_, i) => [`many-${i}`, 1, log.events.length]).sort(byId))
  }))

  it('the summary of a long log is read a piece at a time (the loop turns while it is read) and counts every event', () => withRoot(async (root) => {
    const writer = new JsonlBackend({ root, fsync: false, packed: false })
    const log = await realisticLog(400, 62)
    await writer.create(log.header, log.events)
    await writer.close()
    expect((await stat(await writer.pathOf(log.header.id) ?? '')).size).toBeGreaterThan(1 << 20)
    const backend = new JsonlBackend({ root })
    const { turns } = await loopTurnsDuring(() => backend.list())
    expect(turns).toBeGreaterThanOrEqual(4)
    expect(await new JsonlBackend({ root }).list()).toEqual([expect.objectContaining({ id: log.header.id, turns: 400, length: log.events.length, lastTurn: 'completed' })])
  }))

  it('two listings at once answer the same as one after the other', () => withRoot(async (root) => {
    const writer = new JsonlBackend({ root, fsync: false })
    for (let i = 0; i < 30; i++) {
      const log = await realisticLog(1 + (i % 3), 70 + i)
      await writer.create({ ...log.header, id: `both-${i}` }, log.events)
    }
    await writer.close()
    const backend = new JsonlBackend({ root })
    const [a, b] = await Promise.all([backend.list(), backend.list()])
    expect(a).toEqual(b)
    expect(await new JsonlBackend({ root }).list()).toEqual(a)
  }))
})

describe('JSONL damage (D-5)', () => {
  type Damage = 'duplicate' | 'swap' | 'garbage' | 'nul-line'
  const damage = (lines: string[], kind: Damage, at: number): void => {
    if (kind === 'duplicate') lines.splice(at, 0, lines[at])
    else if (kind === 'swap') [lines[at], lines[at + 1]] = [lines[at + 1], lines[at]]
    else if (kind === 'garbage') lines.splice(at, 0, '{"type":"assistant/chunk","seq":')
    else lines.splice(at, 1, '\0'.repeat(lines[at].length))
  }

  it('D-5: a duplicated, swapped, foreign or zeroed line inside an open turn, with intact lines after it, is refused naming file and line; the file is unchanged; salvage recovers duplicates and swaps whole', () => withRoot(async (root) => {
    let n = 0
    await fc.assert(fc.asyncProperty(
      fc.constantFrom<Damage>('duplicate', 'swap', 'garbage', 'nul-line'), fc.integer({ min: 1, max: 500 }), fc.integer({ min: 8, max: 40 }), fc.double({ min: 0, max: 1, noNaN: true, maxExcluded: true }),
      async (kind, seed, openTail, where) => {
        const backend = new JsonlBackend({ root, fsync: false })
        const { header: base, events } = await realisticLog(1, seed, openTail)
        const h = { ...base, id: `damaged-${n++}` }
        await backend.create(h, events)
        const path = (await backend.pathOf(h.id))!
        const lines = (await readFile(path, 'utf8')).split('\n') // header, records..., '' after the last newline
        const lastTurnEndLine = lines.findLastIndex(line => line.includes('"turn/end"'))
        // A line of the open turn that has at least two whole lines after it (a swap moves two).
        const first = lastTurnEndLine + 1
        const at = first + Math.floor(where * (lines.length - 3 - first))
        damage(lines, kind, at)
        const damaged = lines.join('\n')
        await writeFile(path, damaged)
        const reader = new JsonlBackend({ root, fsync: false })
        const error = await reader.loadStored(h.id).then(() => undefined, (e: unknown) => e as Error)
        expect(error).toBeInstanceOf(CorruptSessionError)
        // lines[i] is line i+1; a duplicate is noticed at its second copy.
        expect(error!.message).toContain(`${path}: line ${kind === 'duplicate' ? at + 2 : at + 1}: `)
        expect(error!.message).toMatch(/valid record (follows|stands) at line \d+.*dsh sessions repair/)
        expect(await readFile(path, 'utf8')).toBe(damaged)
        const salvaged = (await reader.salvageStored(h.id))!
        if (kind === 'duplicate' || kind === 'swap') expect(canonical(salvaged.events)).toEqual(canonical(events))
        else expect(canonical(salvaged.events)).toEqual(canonical(events.slice(0, salvaged.events.length)))
      }), { numRuns: 40 })
  }), 120_000)

  it('D-5: trailing NUL bytes or a partial last line are a torn tail: reported, cut on repair, nothing intact lost', () => withRoot(async (root) => {
    let n = 0
    await fc.assert(fc.asyncProperty(
      fc.integer({ min: 1, max: 500 }), fc.integer({ min: 1, max: 64 }), fc.boolean(), fc.boolean(),
      async (seed, nuls, newlineAfter, partial) => {
        const backend = new JsonlBackend({ root, fsync: false })
        const { header: base, events } = await realisticLog(1, seed, 12)
        const h = { ...base, id: `torn-${n++}` }
        await backend.create(h, events)
        const path = (await backend.pathOf(h.id))!
        const intact = await readFile(path, 'utf8')
        const tail = `${partial ? '{"type":"assistant/chu' : ''}${'\0'.repeat(nuls)}${newlineAfter ? '\n' : ''}`
        await writeFile(path, intact + tail)
        const stored = (await new JsonlBackend({ root, fsync: false }).loadStored(h.id))!
        expect(stored.torn).toBeDefined()
        expect(canonical(stored.events)).toEqual(canonical(events))
        expect(stored.torn!.cutAt).toBe(Buffer.byteLength(intact))
      }), { numRuns: 30 })
  }), 60_000)

  it('D-5 (#43.3): a line lost before a whole last record is corruption, not a torn tail: refused naming the seq, the file unchanged', () => withRoot(async (root) => {
    const backend = new JsonlBackend({ root, fsync: false })
    const { header, events } = await realisticLog(1, 7, 12)
    await backend.create(header, events)
    const path = (await backend.pathOf(header.id))!
    const lines = (await readFile(path, 'utf8')).split('\n')
    // Drop the line before the last record: the last one is whole and valid, with the wrong seq.
    lines.splice(lines.length - 3, 1)
    const damaged = lines.join('\n')
    await writeFile(path, damaged)
    const error = await new JsonlBackend({ root, fsync: false }).loadStored(header.id).then(() => undefined, (e: unknown) => e as Error)
    expect(error).toBeInstanceOf(CorruptSessionError)
    expect(error!.message).toMatch(/wrong-seq: seq0? \d+ where \d+ was expected; a valid record stands at line \d+/)
    expect(await readFile(path, 'utf8')).toBe(damaged)
  }))

  it('D-5 (#43.3): over cut points and dropped lines, a load either keeps every intact record before the damage or refuses; it never cuts a whole record', () => withRoot(async (root) => {
    let n = 0
    await fc.assert(fc.asyncProperty(
      fc.integer({ min: 1, max: 500 }), fc.double({ min: 0, max: 1, noNaN: true, maxExcluded: true }), fc.constantFrom('cut', 'drop', 'drop-and-cut'), fc.integer({ min: 1, max: 40 }),
      async (seed, where, kind, cutBytes) => {
        const backend = new JsonlBackend({ root, fsync: false })
        const { header: base, events } = await realisticLog(1, seed, 10)
        const h = { ...base, id: `gen-${n++}` }
        await backend.create(h, events)
        const path = (await backend.pathOf(h.id))!
        const text = await readFile(path, 'utf8')
        const lines = text.split('\n')
        const records = lines.length - 2 // header and the '' after the last newline
        let damaged = text
        let expectTorn = false
        if (kind !== 'cut') {
          const at = 1 + Math.floor(where * records)
          lines.splice(at, 1)
          damaged = lines.join('\n')
        }
        if (kind !== 'drop') {
          // A crash cuts the end short: bytes of the last line are lost, never the whole line.
          const lastLine = damaged.slice(damaged.lastIndexOf('\n', damaged.length - 2) + 1)
          damaged = damaged.slice(0, damaged.length - Math.min(cutBytes, lastLine.length - 1))
          expectTorn = kind === 'cut'
        }
        await writeFile(path, damaged)
        const loaded = await new JsonlBackend({ root, fsync: false }).loadStored(h.id).then(stored => stored, (e: unknown) => e as Error)
        if (loaded instanceof Error) {
          expect(loaded).toBeInstanceOf(CorruptSessionError)
          expect(kind).not.toBe('cut')
          expect(await readFile(path, 'utf8')).toBe(damaged)
          return
        }
        // Loaded: only a cut end was dropped, and what stays is the log's own prefix.
        expect(canonical(loaded!.events)).toEqual(canonical(events.slice(0, loaded!.events.length)))
        if (expectTorn) expect(loaded!.torn).toBeDefined()
        // A dropped line the load did not refuse was the last record itself: nothing is torn.
        if (kind === 'drop') expect(loaded!.torn).toBeUndefined()
      }), { numRuns: 40 })
  }), 120_000)
})
