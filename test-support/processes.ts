/** Whether a process is still there, for tests that check what a run left behind. */

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
