/**
 * Another process holding a SQLite database's write lock (sqlite-locker.mjs), for tests of what
 * dsh does while the store cannot take a write: `lockSqlite(file)` resolves once it holds the
 * lock; `release()` (idempotent) resolves once it has let go.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { repoRoot } from './run-dsh.js'

export interface SqliteLock {
  readonly child: ChildProcess
  release(): Promise<void>
}

function lineMatching(stream: NodeJS.ReadableStream, pattern: RegExp): Promise<string> {
  return new Promise((resolve) => {
    const lines = createInterface({ input: stream })
    lines.on('line', (line) => {
      if (!pattern.test(line)) return
      lines.close()
      resolve(line)
    })
  })
}

export async function lockSqlite(file: string): Promise<SqliteLock> {
  const child = spawn(process.execPath, [join(repoRoot, 'test-support', 'sqlite-locker.mjs'), file], { stdio: ['pipe', 'pipe', 'inherit'] })
  const released = lineMatching(child.stdout!, /^released$/)
  await lineMatching(child.stdout!, /^locked$/)
  let releasing: Promise<void> | undefined
  return { child, release: () => releasing ??= (async () => { child.stdin!.end('release\n'); await released })() }
}
