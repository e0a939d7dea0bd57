/**
 * Error classes the built-in tools throw. The registry turns a thrown error into an `isError`
 * result whose `error` is `{name, code}` (T-7), so the name and code are part of the contract.
 */
import { ToolError } from '../errors.js'

/** Codes of `FsError` (file tools) and `EditError` (edit). */
export const BuiltinErrorCode = {
  /** write/edit on an existing file that this session never read. */
  notObserved: 'FS_NOT_OBSERVED',
  /** write/edit on a file that changed since this session last read it. */
  stale: 'FS_STALE',
  notFound: 'FS_NOT_FOUND',
  isDirectory: 'FS_IS_DIRECTORY',
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

/** Maps a Node fs error to an `FsError` naming the path; anything else is rethrown unchanged. */
export function fsFailure(error: unknown, path: string): never {
  const code = (error as { code?: unknown } | null)?.code
  if (code === 'ENOENT') throw new FsError(`file not found: ${path}`, BuiltinErrorCode.notFound)
  if (code === 'EISDIR') throw new FsError(`${path} is a directory, not a file (use glob to list it)`, BuiltinErrorCode.isDirectory)
  if (code === 'ENOTDIR') throw new FsError(`a parent of ${path} is not a directory`, BuiltinErrorCode.notDirectory)
  if (code === 'EACCES' || code === 'EPERM') throw new FsError(`permission denied: ${path}`, String(code))
  throw error
}
