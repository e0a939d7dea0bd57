/**
 * A separate process acting on one session of a store, for the writer-lock tests of the
 * persistence backends (see test-support/writer-lock-child.mjs for what it prints).
 */
import { spawn } from 'node:child_process'
import { createInterface } from 'node:readline'

const writerChild = new URL('./writer-lock-child.mjs', import.meta.url).pathname

/** A separate process acting on one session (see test-support/writer-lock-child.mjs). */
export function spawnWriter(kind: string, store: string, id: string, mode: 'create' | 'load' | 'read') {
  const child = spawn(process.execPath, [writerChild, kind, store, id, mode], { stdio: ['pipe', 'pipe', 'inherit'] })
  const lines: string[] = []
  const waiting: ((line: string) => void)[] = []
  const deliver = (line: string) => {
    const next = waiting.shift()
    if (next) next(line)
    else lines.push(line)
  }
  let closed = false
  createInterface({ input: child.stdout! }).on('line', deliver).on('close', () => {
    closed = true
    while (waiting.length > 0) deliver('(exited)')
  })
  const exit = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)))
  return {
    pid: child.pid!,
    exit,
    line: () => lines.length > 0 ? Promise.resolve(lines.shift()!) : closed ? Promise.resolve('(exited)') : new Promise<string>((resolve) => waiting.push(resolve)),
    send: (text: string) => child.stdin!.write(`${text}\n`),
    kill: () => child.kill('SIGKILL'),
  }
}
