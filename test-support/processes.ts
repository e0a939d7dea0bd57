/** Whether a process is still there, for tests that check what a run left behind. */
import { spawnSync } from 'node:child_process'
import { readFileSync } from 'node:fs'

/** True while `pid` names a process (signal 0 checks without sending anything). */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

/** Resolves once `pid` is gone (the test's timeout fails a process that never ends). */
export function processGone(pid: number): Promise<void> {
  return new Promise(resolve => {
    const check = () => processAlive(pid) ? setImmediate(check) : resolve()
    check()
  })
}

/** True while `pid` runs: there, and not a zombie waiting to be reaped. */
export function processRunning(pid: number): boolean {
  return processAlive(pid) && !zombie(pid)
}

/**
 * Whether every one of `pids` is gone within `ms` (checked every 25 ms). A zombie (ended, not yet
 * reaped by whoever inherited it) counts as gone where /proc shows it.
 */
export async function allGoneWithin(pids: readonly number[], ms: number): Promise<boolean> {
  const deadline = Date.now() + ms
  const gone = (pid: number) => !processAlive(pid) || zombie(pid)
  while (!pids.every(gone)) {
    if (Date.now() >= deadline) return false
    await new Promise(resolve => setTimeout(resolve, 25))
  }
  return true
}

function zombie(pid: number): boolean {
  try {
    return readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/^.*\) /s, '').startsWith('Z')
  } catch {
    return false
  }
}

/** Whether `setpriv` (util-linux) is there to drop a test's child to another uid. */
export function hasSetpriv(): boolean {
  return spawnSync('setpriv', ['--version'], { stdio: 'ignore' }).status === 0
}
