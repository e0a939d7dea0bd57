/**
 * What `/proc` tells about a terminal's processes (Linux; elsewhere every answer is "unknown"):
 * the terminal's foreground process group, whether that group waits on the terminal for input,
 * and every process that belongs to the terminal (its session, its descendants, and what carries
 * its environment marker) so closing it leaves nothing behind.
 */
import { readdirSync, readFileSync, readlinkSync } from 'node:fs'
import { RUN_MARKER } from '../tools/builtin/detached.js'

export interface ProcStat {
  readonly pid: number
  readonly comm: string
  readonly state: string
  readonly ppid: number
  readonly pgrp: number
  readonly session: number
  /** The foreground process group of the process's controlling terminal (-1: none). */
  readonly tpgid: number
}

/** `/proc/<pid>/stat`, or undefined when the process is gone (or /proc is not there). */
export function procStat(pid: number): ProcStat | undefined {
  let text: string
  try {
    text = readFileSync(`/proc/${pid}/stat`, 'utf8')
  } catch {
    return undefined
  }
  const open = text.indexOf('(')
  const close = text.lastIndexOf(')')
  if (open < 0 || close < 0) return undefined
  const fields = text.slice(close + 2).split(' ')
  return {
    pid,
    comm: text.slice(open + 1, close),
    state: fields[0] ?? '?',
    ppid: Number(fields[1]),
    pgrp: Number(fields[2]),
    session: Number(fields[3]),
    tpgid: Number(fields[5]),
  }
}

function allPids(): number[] {
  try {
    return readdirSync('/proc').map(Number).filter(pid => Number.isSafeInteger(pid) && pid > 0 && pid !== process.pid)
  } catch {
    return []
  }
}

/** Kernel wait channels of a task blocked reading a terminal (a line read, or a poll on it). */
const TTY_WAITS = /^(n_tty_read|wait_woken|poll_schedule_timeout.*|do_select|do_sys_poll|core_sys_select)$/

/**
 * Whether a member of process group `pgrp` is asleep on a read or poll with a terminal on its
 * stdin: the program waits for input. `undefined` when /proc cannot say.
 */
export function groupWaitsOnStdin(pgrp: number, pids: readonly number[] = allPids()): boolean | undefined {
  let seen = false
  for (const pid of pids) {
    const stat = procStat(pid)
    if (stat === undefined || stat.pgrp !== pgrp) continue
    seen = true
    if (stat.state !== 'S') continue
    let wchan: string
    let stdin: string
    try {
      wchan = readFileSync(`/proc/${pid}/wchan`, 'utf8').trim()
      stdin = readlinkSync(`/proc/${pid}/fd/0`)
    } catch {
      continue
    }
    if (TTY_WAITS.test(wchan) && /^\/dev\/(pts\/|tty)/.test(stdin)) return true
  }
  return seen ? false : undefined
}

/** The members of process group `pgrp`. */
export function groupMembers(pgrp: number): ProcStat[] {
  return allPids().map(procStat).filter((stat): stat is ProcStat => stat !== undefined && stat.pgrp === pgrp)
}

function hasMarker(pid: number, marker: string): boolean {
  try {
    const environ = readFileSync(`/proc/${pid}/environ`)
    return environ.includes(Buffer.from(`${RUN_MARKER}=${marker}\0`))
  } catch {
    return false
  }
}

/**
 * Every live process of the terminal whose first process is `root`: its session (the PTY makes
 * `root` a session leader), the descendants of `root` wherever they moved, and what carries
 * `marker` in its environment (a daemon that double-forked away). Zombies are left out.
 */
export function terminalProcesses(root: number, marker?: string): ProcStat[] {
  const stats = allPids().map(procStat).filter((stat): stat is ProcStat => stat !== undefined && stat.state !== 'Z')
  const children = new Map<number, ProcStat[]>()
  for (const stat of stats) {
    const list = children.get(stat.ppid)
    if (list === undefined) children.set(stat.ppid, [stat])
    else list.push(stat)
  }
  const found = new Map<number, ProcStat>()
  const walk = (pid: number) => {
    for (const child of children.get(pid) ?? []) {
      if (found.has(child.pid)) continue
      found.set(child.pid, child)
      walk(child.pid)
    }
  }
  const self = stats.find(stat => stat.pid === root)
  if (self !== undefined) found.set(root, self)
  walk(root)
  for (const stat of stats) {
    if (found.has(stat.pid)) continue
    if (stat.session === root || (marker !== undefined && hasMarker(stat.pid, marker))) {
      found.set(stat.pid, stat)
      walk(stat.pid)
    }
  }
  return [...found.values()]
}

/** Sends `signal` to every pid, ignoring the ones already gone. */
export function signalAll(pids: readonly number[], signal: NodeJS.Signals): void {
  for (const pid of pids) {
    try {
      process.kill(pid, signal)
    } catch {
      // Gone already.
    }
  }
}
