/**
 * The in-process file fence for tools that write (`write`, `edit`, SB-1, SB-2).
 *
 * API: `writableRoots(mode, root)`, `checkWritable(path, fence)` (throws `SandboxDenied`) and
 * `fencedWriteFile(path, data, fence)` (check, create parents, open without following a final
 * symlink, re-check what was actually opened, then truncate and write through the descriptor).
 *
 * Decisions are made on real paths: `..`, symlinks (also dangling ones and symlinked parents)
 * and absolute paths cannot leave the roots. A file with more than one hard link is refused under
 * a confining mode, because writing it would change every other name of the same inode.
 * Protected paths (`./protected.ts`: agent configuration, git config and hooks, dsh's home) are
 * refused even inside the roots, by the path as given and by the real path it reaches.
 */
import { constants } from 'node:fs'
import { lstat, mkdir, open, readlink, realpath, stat } from 'node:fs/promises'
import { basename, dirname, join, resolve, sep } from 'node:path'
import { deniedMarker, type SandboxMode } from './modes.js'
import { protectedTarget, type ProtectedMatch } from './protected.js'

export interface WriteFence {
  readonly mode: SandboxMode
  /** The session's workspace root (its cwd). */
  readonly root: string
  /** Absolute paths protected besides the built-in rules (dsh's home). */
  readonly protectedPaths?: readonly string[]
}

/** A write outside the roots of `mode`, or to a protected path; the message is the model-facing marker. */
export class SandboxDenied extends Error {
  readonly code = 'FS_SANDBOX_DENIED'
  constructor(readonly mode: SandboxMode, readonly path: string, readonly protection?: ProtectedMatch) {
    super(deniedMarker(mode))
    this.name = 'SandboxDenied'
  }
}

async function real(path: string): Promise<string> {
  try {
    return await realpath(path)
  } catch {
    return resolve(path)
  }
}

/**
 * Real paths a confined write may land under; `'any'` for danger-full-access. The workspace
 * alone: a confined command's /tmp is private to it, so a write there would land where no
 * command can see it (a root that covers /tmp covers it for both).
 */
export async function writableRoots(mode: SandboxMode, root: string): Promise<readonly string[] | 'any'> {
  if (mode === 'danger-full-access') return 'any'
  if (mode === 'read-only') return []
  return [await real(root)]
}

/** The protected rule `path` (as given) or `target` (the real path it reaches) matches, if any. */
async function protection(path: string, target: string, roots: readonly string[], fence: WriteFence): Promise<ProtectedMatch | undefined> {
  const extra = await Promise.all((fence.protectedPaths ?? []).map(real))
  return protectedTarget(target, roots, extra) ?? protectedTarget(resolve(path), [resolve(fence.root), ...roots], [...fence.protectedPaths ?? [], ...extra])
}

/** Throws `SandboxDenied` when `target` is outside `roots` or protected. */
async function refuseUnlessAllowed(path: string, target: string | undefined, roots: readonly string[], fence: WriteFence): Promise<string> {
  if (target === undefined || !isUnder(target, roots)) throw new SandboxDenied(fence.mode, path)
  const match = await protection(path, target, roots, fence)
  if (match !== undefined) throw new SandboxDenied(fence.mode, path, match)
  return target
}

/** Whether `path` is one of `roots` or lies below one (all absolute; /dev/null always counts). */
export function isUnder(path: string, roots: readonly string[]): boolean {
  if (path === '/dev/null') return true
  return roots.some(root => path === root || path.startsWith(root.endsWith(sep) ? root : root + sep))
}

/**
 * The real path a write to `path` would reach. Missing trailing components are appended to the
 * real path of the deepest existing ancestor; a dangling symlink on the way cannot be followed
 * safely, so it yields undefined (denied).
 */
export async function realTarget(path: string): Promise<string | undefined> {
  let current = resolve(path)
  const rest: string[] = []
  for (;;) {
    try {
      return join(await realpath(current), ...rest.reverse())
    } catch (error) {
      const code = (error as { code?: string }).code
      if (code !== 'ENOENT' && code !== 'ENOTDIR') throw error
      // The name exists but does not resolve: a dangling symlink (or a loop).
      if (await lstat(current).then(() => true, () => false)) return undefined
      const parent = dirname(current)
      if (parent === current) return undefined
      rest.push(basename(current))
      current = parent
    }
  }
}

/** Throws `SandboxDenied` unless `path` may be written under `fence`. */
export async function checkWritable(path: string, fence: WriteFence): Promise<void> {
  const roots = await writableRoots(fence.mode, fence.root)
  if (roots === 'any') return
  await refuseUnlessAllowed(path, await realTarget(path), roots, fence)
}

/** Real path of an open descriptor (Linux `/proc`), or undefined where that is not available. */
async function descriptorPath(fd: number): Promise<string | undefined> {
  try {
    return await readlink(`/proc/self/fd/${fd}`)
  } catch {
    return undefined
  }
}

/**
 * Writes `data` to `path` (creating missing parents) when the fence allows it. The opened file is
 * checked again after `open` so a symlink swapped in between the check and the write is caught.
 */
export async function fencedWriteFile(path: string, data: string | Uint8Array, fence: WriteFence, options: { mkdirs?: boolean } = {}): Promise<void> {
  const roots = await writableRoots(fence.mode, fence.root)
  if (roots === 'any') {
    if (options.mkdirs === true) await mkdir(dirname(path), { recursive: true })
    const handle = await open(path, 'w')
    try { await handle.writeFile(data) } finally { await handle.close() }
    return
  }
  // Open the checked real path (symlinks inside the roots resolved), never following a final link.
  const target = await refuseUnlessAllowed(path, await realTarget(path), roots, fence)
  if (options.mkdirs === true) await mkdir(dirname(target), { recursive: true })
  const handle = await open(target, constants.O_WRONLY | constants.O_CREAT | constants.O_NOFOLLOW, 0o666)
    .catch((error: { code?: string }) => {
      if (error.code === 'ELOOP') throw new SandboxDenied(fence.mode, path)
      throw error
    })
  try {
    const info = await handle.stat()
    let opened = await descriptorPath(handle.fd)
    if (opened === undefined) {
      // No /proc: the opened inode must be the one the checked path names.
      const named = await stat(target)
      opened = named.ino === info.ino && named.dev === info.dev ? await realTarget(target) : undefined
    }
    if (opened === undefined || !isUnder(opened, roots) || (info.isFile() && info.nlink > 1)) throw new SandboxDenied(fence.mode, path)
    const match = await protection(path, opened, roots, fence)
    if (match !== undefined) throw new SandboxDenied(fence.mode, path, match)
    await handle.truncate(0)
    await handle.writeFile(data)
  } finally {
    await handle.close()
  }
}
