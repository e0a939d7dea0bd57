/**
 * Error classes the built-in tools throw. The registry turns a thrown error into an `isError`
 * result whose `error` is `{name, code}` (T-7), so the name and code are part of the contract.
 */
import type { EditorFiles } from '../editor-files.js'
import { constants, fstatSync, type Stats } from 'node:fs'
import { open, type FileHandle } from 'node:fs/promises'
import { ToolError } from '../errors.js'

/** Codes of `FsError` (file tools) and `EditError` (edit). */
export const BuiltinErrorCode = {
  /** write/edit on an existing file that this session never read. */
  notObserved: 'FS_NOT_OBSERVED',
  /** write/edit on a file that changed since this session last read it. */
  stale: 'FS_STALE',
  notFound: 'FS_NOT_FOUND',
  isDirectory: 'FS_IS_DIRECTORY',
  /** A FIFO, socket or device: reading it could block forever (or never end). */
  notRegular: 'FS_NOT_REGULAR_FILE',
  notDirectory: 'FS_NOT_DIRECTORY',
  binary: 'FS_BINARY',
  offsetOutOfRange: 'FS_OFFSET_OUT_OF_RANGE',
  editNotFound: 'EDIT_NOT_FOUND',
  editAmbiguous: 'EDIT_AMBIGUOUS',
  editNoChange: 'EDIT_NO_CHANGE',
  invalidPattern: 'INVALID_PATTERN',
  aborted: 'ABORTED',
  spawnFailed: 'SPAWN_FAILED',
  fetchFailed: 'FETCH_FAILED',
  unsupportedContent: 'UNSUPPORTED_CONTENT',
} as const

export class FsError extends ToolError {
  override name = 'FsError'
}

export class EditError extends ToolError {
  override name = 'EditError'
}

export class BashError extends ToolError {
  override name = 'BashError'
}

export class WebFetchError extends ToolError {
  override name = 'WebFetchError'
}

/**
 * Opens `path` for reading without ever blocking: `O_NONBLOCK` makes opening a FIFO return at
 * once (a plain open waits for a writer, holding a thread of the file-I/O pool; four such waits
 * freeze every file operation of the process), and the type is checked on the descriptor itself,
 * so a path swapped after a `stat` cannot slip through. Anything but a regular file is refused
 * with an `FsError`; a failing open rejects with the raw fs error (map it with `fsFailure`).
 * The type check is a synchronous `fstat` of the open descriptor (an inode already in memory):
 * a trip through the libuv pool would cost an event-loop turn on every read step.
 */
export async function openRegularFile(path: string): Promise<FileHandle> {
  const handle = await open(path, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOCTTY).catch((error: unknown) => {
    // What opening a socket (or a device without a driver) gives.
    if ((error as { code?: unknown } | null)?.code === 'ENXIO') {
      throw new FsError(`${path} is not a regular file (a socket or device); only regular files can be read`, BuiltinErrorCode.notRegular)
    }
    throw error
  })
  try {
    const info = fstatSync(handle.fd)
    if (info.isDirectory()) throw new FsError(`${path} is a directory, not a file (use glob to list it)`, BuiltinErrorCode.isDirectory)
    if (!info.isFile()) throw new FsError(`${path} is not a regular file (${fileKind(info)}); only regular files can be read`, BuiltinErrorCode.notRegular)
    return handle
  } catch (error) {
    await handle.close().catch(() => undefined)
    throw error
  }
}

/**
 * The whole content of a file as the session sees it: the editor's text when an editor provides
 * the session's files (unsaved buffers included), else the regular file on disk.
 */
export async function readSessionFile(path: string, files: EditorFiles | undefined): Promise<Buffer> {
  if (files?.readText !== undefined) return Buffer.from(await files.readText(path), 'utf8')
  return readRegularFile(path)
}

/** The whole content of a regular file (see `openRegularFile`). */
export async function readRegularFile(path: string): Promise<Buffer> {
  const handle = await openRegularFile(path)
  try {
    return await handle.readFile()
  } finally {
    await handle.close().catch(() => undefined)
  }
}

function fileKind(info: Stats): string {
  if (info.isFIFO()) return 'a FIFO'
  if (info.isSocket()) return 'a socket'
  if (info.isCharacterDevice()) return 'a character device'
  if (info.isBlockDevice()) return 'a block device'
  return 'not a file'
}

/** Maps a Node fs error to an `FsError` naming the path; anything else is rethrown unchanged. */
export function fsFailure(error: unknown, path: string): never {
  const code = (error as { code?: unknown } | null)?.code
  if (code === 'ENOENT') throw new FsError(`file not found: ${path}`, BuiltinErrorCode.notFound)
  if (code === 'EISDIR') throw new FsError(`${path} is a directory, not a file (use glob to list it)`, BuiltinErrorCode.isDirectory)
  if (code === 'ENOTDIR') throw new FsError(`a parent of ${path} is not a directory`, BuiltinErrorCode.notDirectory)
  if (code === 'EACCES' || code === 'EPERM') throw new FsError(`permission denied: ${path}`, String(code))
  throw error
}
