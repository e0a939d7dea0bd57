/**
 * Processes a command left behind outside its process group (`setsid`, a daemon that detaches):
 * the group kill of a timeout or a cancel does not reach them, and a writer among them would keep
 * the call's pipes open. Each directly spawned command carries a marker in its environment
 * (inherited by everything it starts, whatever session or group it moves to); the sweep finds
 * the processes that still carry it in `/proc` and kills them. Linux only; elsewhere it finds
 * nothing. A process that clears its own environment escapes the sweep, not the pipe cut.
 */
import { randomUUID } from 'node:crypto'
import { readdir, readFile } from 'node:fs/promises'

/** The environment variable of the marker. */
export const RUN_MARKER = 'DSH_BASH_RUN'

export function newRunMarker(): string {
  return randomUUID()
}

export interface DetachedProcess {
  readonly pid: number
  /** Its command name (`/proc/<pid>/comm`). */
  readonly name: string
}

/** The processes other than dsh whose environment holds `RUN_MARKER=marker`. */
export async function markedProcesses(marker: string): Promise<DetachedProcess[]> {
  const needle = Buffer.from(`\0${RUN_MARKER}=${marker}\0`)
  const first = Buffer.from(`${RUN_MARKER}=${marker}\0`)
  let entries: string[]
  try {
    entries = await readdir('/proc')
  } catch {
    return []
  }
  const found: DetachedProcess[] = []
  await Promise.all(entries.map(async (entry) => {
    const pid = Number(entry)
    if (!Number.isSafeInteger(pid) || pid <= 0 || pid === process.pid) return
    try {
      const environ = await readFile(`/proc/${pid}/environ`)
      if (!(environ.includes(needle) || environ.subarray(0, first.length).equals(first))) return
      const name = (await readFile(`/proc/${pid}/comm`, 'utf8').catch(() => '?')).trim()
      found.push({ pid, name })
    } catch {
      // Gone, or not ours to read.
    }
  }))
  return found.sort((a, b) => a.pid - b.pid)
}

/** Kills every process still carrying `marker`; returns those it signalled. */
export async function sweepMarked(marker: string): Promise<DetachedProcess[]> {
  const found = await markedProcesses(marker)
  for (const { pid } of found) {
    try {
      process.kill(pid, 'SIGKILL')
    } catch {
      // Already gone.
    }
  }
  return found
}
