/**
 * The guard of the stdio servers' process groups, for a dsh that is killed outright (SIGKILL,
 * the OOM killer), when neither `close()` nor the exit hook runs. One small shell process per dsh
 * process, started with the first stdio server in a process group of its own: dsh tells it each
 * group it starts (`+PID`) and each one it has stopped (`-PID`) on the guard's stdin. When that
 * input ends, because dsh is gone however it ended, the guard sends SIGKILL to every group it
 * still holds, and exits. After an orderly exit it holds none.
 */
import { spawn, type ChildProcess } from 'node:child_process'

const SCRIPT = `groups=' '
while read -r line; do
  case $line in
    +*) groups="$groups\${line#+} " ;;
    -*) id=\${line#-}
        case $groups in *" $id "*) groups="\${groups%% $id *} \${groups#* $id }" ;; esac ;;
  esac
done
for group in $groups; do kill -s KILL -- "-$group" 2>/dev/null; done
`

let guard: ChildProcess | undefined
let failed = false

function start(): ChildProcess | undefined {
  if (guard !== undefined || failed) return guard
  try {
    guard = spawn('/bin/sh', ['-c', SCRIPT], { detached: true, stdio: ['pipe', 'ignore', 'ignore'], env: { PATH: process.env.PATH ?? '/usr/bin:/bin' } })
  } catch {
    failed = true
    return undefined
  }
  guard.once('error', () => { failed = true; guard = undefined })
  guard.once('exit', () => { guard = undefined })
  guard.stdin!.on('error', () => {})
  // The guard must not keep dsh running: neither it nor the pipe to it holds the event loop.
  guard.unref()
  ;(guard.stdin as unknown as { unref?: () => void }).unref?.()
  return guard
}

/** Tells the guard that group `pid` runs (`running` true) or was stopped. No-op without process groups. */
export function guardGroup(pid: number, running = true): void {
  if (process.platform === 'win32') return
  const process_ = running ? start() : guard
  process_?.stdin?.write(`${running ? '+' : '-'}${pid}\n`)
}
