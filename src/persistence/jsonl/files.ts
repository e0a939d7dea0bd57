/**
 * File calls shared by the JSONL backend and its listing: positioned reads and writes, quiet
 * closes and unlinks, folder listings that treat a missing folder as empty, the fsyncs that go to
 * the libuv pool, and the D-4 revision of a stat.
 */
import { closeSync, fdatasync, fsync, openSync, readdirSync, readFileSync, unlinkSync, writeSync } from 'node:fs'
import { readdir, stat, type FileHandle } from 'node:fs/promises'

export const DIR_MODE = 0o700
export const FILE_MODE = 0o600

export async function readRange(handle: FileHandle, start: number, end: number): Promise<Buffer> {
  const buffer = Buffer.alloc(Math.max(0, end - start))
  let filled = 0
  while (filled < buffer.length) {
    const { bytesRead } = await handle.read(buffer, filled, buffer.length - filled, start + filled)
    if (bytesRead === 0) break
    filled += bytesRead
  }
  return buffer.subarray(0, filled)
}

export function readdirOrEmptySync(dir: string): string[] {
  try {
    return readdirSync(dir)
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT' || (error as NodeJS.ErrnoException).code === 'ENOTDIR') return []
    throw error
  }
}

export function writeAllAt(fd: number, bytes: Buffer, position: number): void {
  let written = 0
  while (written < bytes.length) written += writeSync(fd, bytes, written, bytes.length - written, position + written)
}

export function closeQuietly(fd: number): void {
  try {
    closeSync(fd)
  } catch {
    // Closed already, or the close failed: nothing more to do with it.
  }
}

/** fsync of a folder: the open and close are synchronous, the fsync goes to the pool. */
export async function syncDir(dir: string): Promise<void> {
  const fd = openSync(dir, 'r')
  try {
    await onPool(fsync, fd)
  } finally {
    closeSync(fd)
  }
}

/** `fsync` or `fdatasync` of a descriptor on the libuv pool: the only calls here that wait for the disk. */
export function onPool(sync: typeof fsync | typeof fdatasync, fd: number): Promise<void> {
  return new Promise((resolve, reject) => { sync(fd, error => { if (error === null) resolve(); else reject(error) }) })
}

export function writeAllSync(fd: number, bytes: Buffer): void {
  let written = 0
  while (written < bytes.length) written += writeSync(fd, bytes, written, bytes.length - written)
}

export function unlinkQuietly(path: string): void {
  try {
    unlinkSync(path)
  } catch {
    // Gone already.
  }
}

export function readTextOrUndefined(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8')
  } catch {
    return undefined
  }
}

export async function exists(path: string): Promise<boolean> {
  try {
    await stat(path)
    return true
  } catch {
    return false
  }
}

export async function readdirOrEmpty(dir: string): Promise<string[]> {
  try {
    return await readdir(dir)
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT' || (error as NodeJS.ErrnoException).code === 'ENOTDIR') return []
    throw error
  }
}

/** D-4 revision: the stat quintuple dev:ino:size:mtimeNs:ctimeNs. */
export function revisionOf(info: { dev: bigint; ino: bigint; size: bigint; mtimeNs: bigint; ctimeNs: bigint }): string {
  return `${info.dev}:${info.ino}:${info.size}:${info.mtimeNs}:${info.ctimeNs}`
}
