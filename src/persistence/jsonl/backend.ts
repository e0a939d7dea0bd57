/**
 * JSONL backend (D-4): one append-only file per session. Appends cost O(batch): the file is
 * never rewritten; the next seq and size are cached per session and revalidated by `stat`.
 * The append handle stays open between flushes (a step flushes three times, D-3), checked
 * against the path's inode on every append so a replaced or moved file is never written.
 */
import { randomUUID } from 'node:crypto'
import { closeSync, constants as fsConstants, existsSync, fstatSync, fsync, fdatasync, ftruncateSync, linkSync, mkdirSync, openSync, statSync, writeFileSync } from 'node:fs'
import type { BigIntStats } from 'node:fs'
import { link, mkdir, open, readdir, readFile, rename, stat, unlink } from 'node:fs/promises'
import { join } from 'node:path'
import type { SessionEvent, SessionHeader } from '../../session/types.js'
import {
  OperationChains, PersistenceError, SeqMismatchError, SessionExistsError, StaleRevisionError,
  SessionInUseError, type PersistenceBackend, type SalvagedSession, type WriterLease, type StoredSession, type StoredSessionSummary, type TornTail,
} from '../api.js'
import { checkHeader, encodeHeader, encodeRecords, salvageRecords, scanRecords } from '../records.js'
import { currentHolder, holderIsStale, parseHolder } from '../writer-lock.js'
import { encodeSessionId, LOCKS_DIR, projectKey, SESSION_FILE, TRASH_DIR } from './paths.js'
import { isAttachmentId, sniffImage, type StoredAttachment } from '../../session/attachments.js'
import {
  closeQuietly, DIR_MODE, exists, FILE_MODE, onPool, readdirOrEmpty, readdirOrEmptySync, readRange, readTextOrUndefined,
  revisionOf, syncDir, unlinkQuietly, writeAllAt, writeAllSync,
} from './files.js'
import { ChunkedLines, lines, NEWLINE } from './lines.js'
import { listStore } from './listing.js'

/** Attachments of a session: `<session folder>/attachments/<sha256 hex>`. */
export const ATTACHMENTS_DIR = 'attachments'

/** The file name of a content-addressed attachment id; anything else is refused. */
function attachmentFileName(attachmentId: string): string {
  if (!isAttachmentId(attachmentId)) throw new PersistenceError(`attachment id ${JSON.stringify(attachmentId)} is not sha256:<64 hex digits>`)
  return attachmentId.slice('sha256:'.length)
}

export interface JsonlBackendOptions {
  /** Folder holding one sub-folder per project. Created 0700 when missing. */
  readonly root: string
  /** Pack chunk runs into rows (R-1..R-4). Default true. */
  readonly packed?: boolean
  /** fsync after every write (default true). Off only for throwaway stores. */
  readonly fsync?: boolean
}

interface FileState {
  readonly dir: string
  readonly file: string
  size: number
  nextSeq: number
  revision: string
  /** A crash tail found by the last scan; appends wait for `commitRepair`. */
  torn?: TornTail
}

/** An append handle (a file descriptor) kept open, with the inode it was opened on. */
interface OpenHandle {
  readonly fd: number
  readonly dev: bigint
  readonly ino: bigint
}

/** An append rescans a file changed by someone else at most this often before giving up. */
const MAX_APPEND_RESCANS = 3

/** Open append handles kept at most; the least recently used is closed beyond that. */
const MAX_OPEN_HANDLES = 16

export class JsonlBackend implements PersistenceBackend {
  readonly kind = 'jsonl'
  readonly root: string
  private readonly packed: boolean
  private readonly fsync: boolean
  private readonly chains = new OperationChains()
  /** id -> session folder; filled by writes and lookups, so a known id is never searched for. */
  private readonly index = new Map<string, string>()
  private readonly states = new Map<string, FileState>()
  /** id -> open append handle, in least-recently-used order. */
  private readonly handles = new Map<string, OpenHandle>()
  /** The listing in progress (settled): the next one starts after it. */
  private listing: Promise<unknown> = Promise.resolve()

  constructor(options: JsonlBackendOptions) {
    this.root = options.root
    this.packed = options.packed ?? true
    this.fsync = options.fsync ?? true
  }

  /** The session file of a stored id (undefined when not stored). */
  async pathOf(id: string): Promise<string | undefined> {
    const dir = await this.locate(id)
    return dir === undefined ? undefined : join(dir, SESSION_FILE)
  }

  create(header: SessionHeader, events: readonly SessionEvent[]): Promise<void> {
    return this.chains.run(header.id, async () => {
      checkContiguous(header.id, events)
      if (await this.locate(header.id) !== undefined) {
        throw new SessionExistsError(`session ${JSON.stringify(header.id)} is already stored`, header.id)
      }
      await this.materialise(header, events)
    })
  }

  appendBatch(header: SessionHeader, events: readonly SessionEvent[]): Promise<void> {
    return this.chains.run(header.id, async () => {
      checkContiguous(header.id, events)
      let state = this.states.get(header.id)
      if (state === undefined) {
        const dir = await this.locate(header.id)
        if (dir === undefined) return this.materialise(header, events)
        state = await this.scan(header.id, dir)
      }
      if (events.length === 0) return
      await this.append(header.id, state, events)
    })
  }

  loadStored(id: string): Promise<StoredSession | undefined> {
    return this.chains.run(id, async () => {
      const dir = await this.locate(id)
      if (dir === undefined) return undefined
      const { header, events, state } = await this.read(id, dir)
      return { header, events, revision: state.revision, torn: state.torn }
    })
  }

  readStoredRevision(id: string): Promise<string | undefined> {
    return this.chains.run(id, async () => {
      const dir = await this.locate(id)
      if (dir === undefined) return undefined
      return revisionOf(await stat(join(dir, SESSION_FILE), { bigint: true }))
    })
  }

  commitRepair(id: string, closers: readonly SessionEvent[], expectedRevision: string): Promise<string> {
    return this.chains.run(id, async () => {
      checkContiguous(id, closers)
      const dir = await this.locate(id)
      if (dir === undefined) throw new StaleRevisionError(`session ${JSON.stringify(id)}: not stored any more; repair refused`, id)
      const handle = await open(join(dir, SESSION_FILE), 'r+')
      try {
        const revision = revisionOf(await handle.stat({ bigint: true }))
        if (revision !== expectedRevision) {
          throw new StaleRevisionError(`session ${JSON.stringify(id)}: written since it was loaded (revision ${revision}, expected ${expectedRevision}); repair refused`, id)
        }
      } finally {
        await handle.close()
      }
      let state = this.states.get(id)
      if (state === undefined || state.revision !== expectedRevision) state = await this.scan(id, dir, true)
      if (state.torn !== undefined) {
        const handle = await open(state.file, 'r+')
        try {
          await handle.truncate(state.torn.cutAt)
          if (this.fsync) await handle.sync()
          state.size = state.torn.cutAt
          state.revision = revisionOf(await handle.stat({ bigint: true }))
          state.torn = undefined
        } finally {
          await handle.close()
        }
      }
      if (closers.length > 0) state = await this.append(id, state, closers)
      return state.revision
    })
  }


  /**
   * Every stored session's summary (listing.ts). Listings of one backend run one after another,
   * so two never work on one session's summary cache at once.
   */
  list(): Promise<readonly StoredSessionSummary[]> {
    const listing = this.listing.then(() => listStore(this.root, (id, dir) => this.index.set(id, dir)))
    this.listing = listing.catch(() => undefined)
    return listing
  }

  trash(id: string): Promise<boolean> {
    return this.chains.run(id, async () => {
      const dir = await this.locate(id)
      if (dir === undefined) return false
      const trash = join(this.root, TRASH_DIR)
      await mkdir(trash, { recursive: true, mode: DIR_MODE })
      this.dropHandle(id)
      await rename(dir, join(trash, `${Date.now()}-${randomUUID().slice(0, 8)}-${encodeSessionId(id)}`))
      this.index.delete(id)
      this.states.delete(id)
      return true
    })
  }

  restore(id: string): Promise<boolean> {
    return this.chains.run(id, async () => {
      if (await this.locate(id) !== undefined) throw new SessionExistsError(`session ${JSON.stringify(id)} is stored; it cannot be restored over`, id)
      const trash = join(this.root, TRASH_DIR)
      // Trashed folders are `<ms>-<8 hex>-<encoded id>`: the newest of this id goes back.
      const name = encodeSessionId(id)
      const entries = await readdir(trash).catch((error: NodeJS.ErrnoException) => { if (error.code === 'ENOENT') return []; throw error })
      const from = entries.map(entry => /^(\d+)-[0-9a-f]{8}-(.*)$/.exec(entry)).filter(match => match !== null && match[2] === name)
        .sort((a, b) => Number(b![1]) - Number(a![1]))[0]?.[0]
      if (from === undefined) return false
      const file = join(trash, from, SESSION_FILE)
      const header = checkHeader(JSON.parse((await readFile(file, 'utf8')).split('\n', 1)[0]), `${file}: line 1`)
      const dir = join(this.root, projectKey(header.cwd), encodeSessionId(header.id))
      await mkdir(join(this.root, projectKey(header.cwd)), { recursive: true, mode: DIR_MODE })
      await rename(join(trash, from), dir)
      this.index.set(id, dir)
      return true
    })
  }

  async close(): Promise<void> {
    await this.chains.idle()
    for (const id of [...this.handles.keys()]) this.dropHandle(id)
  }

  /**
   * `<session folder>/attachments/<sha256 hex>`, written to a temp file and linked into place
   * (an existing file already holds these bytes). The folder is the session's own, so trash
   * takes the attachments along; it may exist before the log does.
   */
  putAttachment(header: SessionHeader, attachmentId: string, attachment: StoredAttachment): Promise<void> {
    return this.chains.run(header.id, async () => {
      const name = attachmentFileName(attachmentId)
      const dir = join(await this.locate(header.id) ?? join(this.root, projectKey(header.cwd), encodeSessionId(header.id)), ATTACHMENTS_DIR)
      await mkdir(dir, { recursive: true, mode: DIR_MODE })
      const file = join(dir, name)
      if (await exists(file)) return
      const tmp = join(dir, `.${name}.${process.pid}.${randomUUID()}.tmp`)
      const handle = await open(tmp, fsConstants.O_CREAT | fsConstants.O_EXCL | fsConstants.O_WRONLY, FILE_MODE)
      try {
        await handle.writeFile(attachment.data)
        if (this.fsync) await handle.sync()
      } finally {
        await handle.close()
      }
      try {
        await link(tmp, file)
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error
      } finally {
        await unlink(tmp).catch(() => undefined)
      }
      if (this.fsync) await syncDir(dir)
    })
  }

  getAttachment(sessionId: string, attachmentId: string): Promise<StoredAttachment | undefined> {
    return this.chains.run(sessionId, async () => {
      const name = attachmentFileName(attachmentId)
      let dir = await this.locate(sessionId)
      if (dir === undefined) {
        // Stored before the log was materialised: look for the folder by id.
        for (const project of await readdirOrEmpty(this.root)) {
          if (project.startsWith('.')) continue
          const candidate = join(this.root, project, encodeSessionId(sessionId))
          if (await exists(join(candidate, ATTACHMENTS_DIR, name))) { dir = candidate; break }
        }
      }
      if (dir === undefined) return undefined
      let data: Buffer
      try {
        data = await readFile(join(dir, ATTACHMENTS_DIR, name))
      } catch {
        return undefined
      }
      return { data, mediaType: sniffImage(data)?.mediaType ?? 'application/octet-stream' }
    })
  }

  // --- internals ---

  private async locate(id: string): Promise<string | undefined> {
    const known = this.index.get(id)
    if (known !== undefined && existsSync(join(known, SESSION_FILE))) return known
    this.index.delete(id)
    this.states.delete(id)
    this.dropHandle(id)
    const encoded = encodeSessionId(id)
    // Synchronous: a directory listing and a stat per project folder take microseconds each,
    // and each asynchronous one an event-loop turn through the libuv pool (see appendHandle).
    for (const project of readdirOrEmptySync(this.root)) {
      if (project.startsWith('.')) continue
      const dir = join(this.root, project, encoded)
      if (existsSync(join(dir, SESSION_FILE))) {
        this.index.set(id, dir)
        return dir
      }
    }
    return undefined
  }

  /**
   * D-4: temp file + fsync + link (never rename over) + unlink temp. As for appends, only the
   * two fsyncs (the file, then its folder) go to the pool; the folder, the temp file, its bytes,
   * the link and the unlink are synchronous calls that do not wait for the disk (a new session's
   * first flush went from ~14 event-loop turns to 2).
   */
  private async materialise(header: SessionHeader, events: readonly SessionEvent[]): Promise<void> {
    if (events.length > 0 && events[0].seq !== 0) {
      throw new SeqMismatchError(`session ${JSON.stringify(header.id)}: the first stored event must have seq 0, got ${events[0].seq}`, header.id)
    }
    const dir = join(this.root, projectKey(header.cwd), encodeSessionId(header.id))
    mkdirSync(this.root, { recursive: true, mode: DIR_MODE })
    mkdirSync(dir, { recursive: true, mode: DIR_MODE })
    const file = join(dir, SESSION_FILE)
    const tmp = join(dir, `.${SESSION_FILE}.${process.pid}.${randomUUID()}.tmp`)
    const text = Buffer.from([encodeHeader(header), ...encodeRecords(events, this.packed)].join('\n') + '\n')
    const fd = openSync(tmp, fsConstants.O_CREAT | fsConstants.O_EXCL | fsConstants.O_WRONLY, FILE_MODE)
    try {
      try {
        writeAllSync(fd, text)
        if (this.fsync) await onPool(fsync, fd)
      } finally {
        closeSync(fd)
      }
      linkSync(tmp, file)
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'EEXIST') {
        throw new SessionExistsError(`session ${JSON.stringify(header.id)} is already stored (another writer materialised it first)`, header.id)
      }
      throw error
    } finally {
      unlinkQuietly(tmp)
    }
    if (this.fsync) await syncDir(dir)
    const info = statSync(file, { bigint: true })
    this.index.set(header.id, dir)
    this.states.set(header.id, { dir, file, size: Number(info.size), nextSeq: events.length, revision: revisionOf(info) })
  }

  /** Append + fdatasync; a failed write is truncated back to the previous size. */
  /** Returns the state it ended with (a fresh one if another writer forced a rescan). */
  private async append(id: string, state: FileState, events: readonly SessionEvent[]): Promise<FileState> {
    let { fd, before } = this.appendHandle(id, state.file)
    for (let rescans = 0; revisionOf(before) !== state.revision; rescans++) {
      if (rescans === MAX_APPEND_RESCANS) {
        throw new PersistenceError(`session ${JSON.stringify(id)}: the file kept changing while appending (${rescans} rescans); another writer is using it, nothing was written`, id)
      }
      // Someone else wrote the file: learn its real end before judging our seq.
      state = await this.scan(id, state.dir, true)
      ;({ fd, before } = this.appendHandle(id, state.file))
    }
    if (state.torn !== undefined) {
      throw new PersistenceError(`session ${JSON.stringify(id)} has an unrepaired crash tail (${state.torn.detail}); load it to repair before appending`, id)
    }
    if (events[0].seq !== state.nextSeq) {
      throw new SeqMismatchError(`session ${JSON.stringify(id)}: batch starts at seq ${events[0].seq} but the stored log ends before seq ${state.nextSeq}`, id)
    }
    const bytes = Buffer.from(encodeRecords(events, this.packed).join('\n') + '\n', 'utf8')
    try {
      writeAllAt(fd, bytes, state.size)
      // fdatasync, not fsync: an append changes the data and the size, both of which fdatasync
      // makes durable (with the block allocation that reaches them); what it skips is timestamp
      // metadata, which recovery never reads (docs/decisions.md, "fdatasync for appends").
      if (this.fsync) await onPool(fdatasync, fd)
    } catch (error) {
      try {
        ftruncateSync(fd, state.size)
      } catch {
        // The next append finds the stray bytes by the file's revision and rescans.
      }
      // A handle whose write or fsync failed is not trusted again: the next append reopens.
      this.dropHandle(id)
      throw error
    }
    state.size += bytes.length
    state.nextSeq += events.length
    state.revision = revisionOf(fstatSync(fd, { bigint: true }))
    return state
  }

  /**
   * The open append handle of `id` and the stat of the file it writes, judged as before by the
   * revision. A kept handle is used only while the path still names its inode (one `stat` of
   * the path, as cheap as the `fstat` it replaces); otherwise the file is opened afresh.
   *
   * The open, the stats and the write itself are synchronous: each is a page-cache operation of
   * a few microseconds, where a trip through the libuv pool costs a thread wake-up and an
   * event-loop turn each (three per flush, three flushes per step; the open and its stat were two
   * more at a session's first append, on the path of its first model request). Only the fsync,
   * which waits for the disk, goes to the pool.
   */
  private appendHandle(id: string, file: string): { fd: number; before: BigIntStats } {
    const kept = this.handles.get(id)
    if (kept !== undefined) {
      const info = statSync(file, { bigint: true })
      if (info.dev === kept.dev && info.ino === kept.ino) {
        this.handles.delete(id)
        this.handles.set(id, kept)
        return { fd: kept.fd, before: info }
      }
      this.dropHandle(id)
    }
    const fd = openSync(file, 'r+')
    let before: BigIntStats
    try {
      before = fstatSync(fd, { bigint: true })
    } catch (error) {
      closeQuietly(fd)
      throw error
    }
    this.handles.set(id, { fd, dev: before.dev, ino: before.ino })
    for (const [oldest, evicted] of this.handles) {
      if (this.handles.size <= MAX_OPEN_HANDLES) break
      this.handles.delete(oldest)
      // Closed in its own session's chain, after any append still using it.
      void this.chains.run(oldest, async () => closeQuietly(evicted.fd)).catch(() => undefined)
    }
    return { fd, before }
  }

  private dropHandle(id: string): void {
    const kept = this.handles.get(id)
    if (kept === undefined) return
    this.handles.delete(id)
    closeQuietly(kept.fd)
  }

  private async scan(id: string, dir: string, force = false): Promise<FileState> {
    const cached = this.states.get(id)
    if (cached !== undefined && !force) return cached
    return (await this.read(id, dir)).state
  }

  /**
   * One writer per session: `<root>/.locks/<encoded-id>.lock` holds `{pid, host, since, token}`,
   * created by writing a temp file and linking it into place (link fails if the lock exists, so
   * of racing writers exactly one wins). A lock whose holder is a dead pid on this host is
   * stale: it is replaced under a `.takeover` guard file so two processes never both take it.
   */
  async acquireWriter(id: string): Promise<WriterLease> {
    // Synchronous calls throughout: lock files are small and never fsynced, so nothing here
    // waits for the disk, and each asynchronous call would be an event-loop turn of its own.
    const dir = join(this.root, LOCKS_DIR)
    mkdirSync(this.root, { recursive: true, mode: DIR_MODE })
    mkdirSync(dir, { recursive: true, mode: DIR_MODE })
    const path = join(dir, `${encodeSessionId(id)}.lock`)
    const holder = currentHolder()
    const token = randomUUID()
    const record = JSON.stringify({ ...holder, token })
    for (let attempt = 0; attempt < 8; attempt++) {
      const temp = `${path}.${process.pid}.${token}.tmp`
      writeFileSync(temp, record, { flag: 'wx', mode: FILE_MODE })
      try {
        linkSync(temp, path)
        return {
          holder,
          release: async () => {
            if (parseHolder(readTextOrUndefined(path) ?? '')?.token === token) unlinkQuietly(path)
          },
        }
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error
      } finally {
        unlinkQuietly(temp)
      }
      const text = readTextOrUndefined(path)
      if (text === undefined) continue // released meanwhile: try again
      const held = parseHolder(text)
      if (held !== undefined && !holderIsStale(held)) throw new SessionInUseError(id, held)
      this.takeOver(id, path, text, record)
    }
    throw new PersistenceError(`session ${id}: could not take the writer lock ${path} (it kept changing hands)`, id)
  }

  /** Removes a stale lock whose content is still `stale`, under an exclusive guard file. */
  private takeOver(id: string, path: string, stale: string, record: string): void {
    const guard = `${path}.takeover`
    try {
      writeFileSync(guard, record, { flag: 'wx', mode: FILE_MODE })
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error
      const text = readTextOrUndefined(guard)
      const other = text === undefined ? undefined : parseHolder(text)
      // A guard left by a process that died while taking over is itself stale.
      if (other !== undefined && holderIsStale(other)) unlinkQuietly(guard)
      else if (other !== undefined) throw new SessionInUseError(id, other)
      return
    }
    try {
      if (readTextOrUndefined(path) === stale) unlinkQuietly(path)
    } finally {
      unlinkQuietly(guard)
    }
  }

  salvageStored(id: string): Promise<SalvagedSession | undefined> {
    return this.chains.run(id, async () => {
      const dir = await this.locate(id)
      if (dir === undefined) return undefined
      const { header, buffer, headerEnd } = await this.readFile(id, dir)
      return { header, ...salvageRecords(lines(buffer, headerEnd + 1, 2)) }
    })
  }

  /**
   * Reads and classifies the whole file (D-5); caches the resulting state. The file is read
   * 64 KB at a time (never held whole): a 100k-event log is ~6 MB that would otherwise sit in
   * memory beside the events parsed from it (a resumed 100k-event session peaked ~6 MB higher
   * with whole-file reads, and ~2 MB higher with 1 MB chunks).
   */
  private async read(id: string, dir: string): Promise<{ header: SessionHeader; events: readonly SessionEvent[]; state: FileState }> {
    const file = join(dir, SESSION_FILE)
    const handle = await open(file, 'r')
    try {
      const info = await handle.stat({ bigint: true })
      const revision = revisionOf(info)
      const reader = new ChunkedLines(handle.fd, Number(info.size))
      const first = reader.next()
      if (first.done === true || !first.value.complete) throw new PersistenceError(`${file}: the session header line is incomplete`, id)
      const header = this.checkHeaderLine(id, file, first.value.text)
      const { events, torn } = scanRecords(id, reader, 0, file)
      const state: FileState = { dir, file, size: reader.bytesRead, nextSeq: events.length, revision, torn }
      this.states.set(id, state)
      this.index.set(id, dir)
      return { header, events, state }
    } finally {
      await handle.close()
    }
  }

  private checkHeaderLine(id: string, file: string, text: string): SessionHeader {
    let headerValue: unknown
    try {
      headerValue = JSON.parse(text)
    } catch (error) {
      throw new PersistenceError(`${file}: line 1 is not a JSON session header (${(error as Error).message})`, id)
    }
    const header = checkHeader(headerValue, file)
    if (header.id !== id) throw new PersistenceError(`${file}: the header names session ${JSON.stringify(header.id)}, not ${JSON.stringify(id)}`, id)
    return header
  }

  /** The whole file with its header checked (S-13) and its revision. */
  private async readFile(id: string, dir: string): Promise<{ file: string; buffer: Buffer; headerEnd: number; header: SessionHeader; revision: string }> {
    const file = join(dir, SESSION_FILE)
    const handle = await open(file, 'r')
    let buffer: Buffer
    let revision: string
    try {
      const info = await handle.stat({ bigint: true })
      revision = revisionOf(info)
      buffer = await readRange(handle, 0, Number(info.size))
    } finally {
      await handle.close()
    }
    const headerEnd = buffer.indexOf(NEWLINE)
    if (headerEnd < 0) throw new PersistenceError(`${file}: the session header line is incomplete`, id)
    const header = this.checkHeaderLine(id, file, buffer.toString('utf8', 0, headerEnd))
    return { file, buffer, headerEnd, header, revision }
  }
}

function checkContiguous(id: string, events: readonly SessionEvent[]): void {
  for (let i = 1; i < events.length; i++) {
    if (events[i].seq !== events[0].seq + i) {
      throw new SeqMismatchError(`session ${JSON.stringify(id)}: batch is not contiguous at seq ${events[i].seq} (expected ${events[0].seq + i})`, id)
    }
  }
}

