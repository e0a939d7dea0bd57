/**
 * OS runners that confine a command's file writes (SB-2, SB-3, SB-4), and the chain that picks
 * the first one that works on this machine, probed once per process.
 *
 * A runner turns `(mode, root)` into an argv prefix placed before `bash -c <command>`, and reads
 * a finished run's stderr in its own dialect: runner failure first (the runner itself could not
 * set up: the command never ran), then denial (the command ran and hit the fence).
 */
import type { spawn as Spawn } from 'node:child_process'
import { realpathSync } from 'node:fs'
import { isUnder } from './fence.js'
import type { SandboxMode } from './modes.js'
import { constants as fsConstants } from 'node:fs'
import { NET_BRIDGE_PROGRAM } from './net-bridge.pl.js'
import { INSIDE_SOCKET, PROXY_PORT, type NetworkPlan } from './network.js'
import { KERNEL_READ_ONLY, type ProtectedMounts } from './protected.js'
import { hiddenArgs } from './secrets.js'

export type ConfinedMode = Exclude<SandboxMode, 'danger-full-access'>

export interface SandboxRunner {
  readonly name: string
  /** `full`, or `partial` when the kernel enforces less than asked (reported, not hidden). */
  readonly enforcement?: 'full' | 'partial'
  /**
   * `mounts`: the protected paths inside the writable root (`./protected.ts`), made read-only.
   * A runner that cannot express them leaves them writable (docs/security.md says which).
   */
  argv(mode: ConfinedMode, root: string, mounts?: ProtectedMounts, network?: NetworkPlan): readonly string[]
  /**
   * Whether `argv` honours a network plan (a network namespace of its own, the gate's socket and
   * bridge). A runner without it cannot run a command under `allowlist` or `none`: callers refuse.
   */
  readonly confinesNetwork?: boolean
  /** SB-3: the runner failed (checked before `denied`). A notice line alone never proves it. */
  failed(exitCode: number | null, stderr: string): boolean
  /** SB-4: a failed run whose stderr carries this runner's denial signature. */
  denied(exitCode: number | null, stderr: string): boolean
  /**
   * Set when one process started under `argv(mode, root)` may start many commands (a shell
   * host, `./shell-host.ts`): the runner puts everything it starts in one pid namespace that ends
   * with dsh. `privateTmp(mode, root)`: /tmp is the sandbox's own (nothing but the sandbox
   * writes it), so it may be emptied between commands.
   */
  readonly hostable?: { privateTmp(mode: ConfinedMode, root: string): boolean }
}

const lines = (text: string) => text.split(/\r?\n/)

function realTmp(): string {
  try {
    return realpathSync('/tmp')
  } catch {
    return '/tmp'
  }
}

/**
 * bubblewrap: read-only bind of `/`; workspace-write adds a private /tmp and a writable root, with
 * the protected paths inside it mounted over themselves (`.git` folders, and the folders that hold
 * nested ones, writable first, so they cannot be renamed away; `.git/config`, `.git/hooks`,
 * `.claude`, a `.git` file... read-only, at any depth the scan reaches); the folders dsh made
 * writable for the one command (`mounts.writable`, every confined mode) go before those; the
 * secrets of the deny-read list are covered after all binds (`./secrets.ts`). /dev and /proc come after the root, so
 * a root that covers them (`/`) cannot bring the host's; then the kernel's settings go read-only:
 * root may write `/proc/sys` by ownership alone, capabilities dropped or not.
 * Run by root, bwrap keeps root's capabilities in the sandbox unless told to drop them, and
 * CAP_SYS_ADMIN there remounts the read-only bind writable: `--cap-drop ALL` then. (Run by
 * anyone else it drops them itself; the flag is only for root, as setuid builds refuse it.)
 */
export function bwrapRunner(command = 'bwrap'): SandboxRunner {
  const asRoot = process.getuid?.() === 0
  const privateTmp = (mode: ConfinedMode, root: string) => mode === 'workspace-write' && !isUnder('/tmp', [root]) && !isUnder(realTmp(), [root])
  return {
    name: 'bwrap',
    enforcement: 'full',
    confinesNetwork: true,
    // workspace-write mounts a fresh tmpfs on /tmp, unless the writable root covers /tmp: then
    // /tmp is the real one, seen through the root's bind, and must never be emptied.
    hostable: { privateTmp },
    argv: (mode, root, mounts, network) => [
      command, '--ro-bind', '/', '/',
      ...(mode === 'workspace-write' ? ['--tmpfs', '/tmp', '--bind', root, root] : []),
      // After the private /tmp (a folder there would be covered), before the protected paths.
      ...(mounts?.writable ?? []).flatMap(path => ['--bind', path, path]),
      ...(mode === 'workspace-write' ? [
        ...(mounts?.pinned ?? []).flatMap(path => ['--bind-try', path, path]),
        ...(mounts?.readOnly ?? []).flatMap(path => ['--ro-bind-try', path, path]),
      ] : []),
      // Secrets, after every bind that would show them; a private /tmp shows nothing of the real one.
      ...hiddenArgs(mounts?.hidden, path => privateTmp(mode, root) && isUnder(path, ['/tmp', realTmp()]) && !isUnder(path, [root])),
      '--dev', '/dev',
      // A network namespace of its own (loopback only); under allowlist the gate's socket and
      // the bridge as pid 1 (`./net-bridge.pl.ts`).
      ...(network === undefined ? [] : ['--unshare-net']),
      ...(network?.mode === 'allowlist' ? ['--ro-bind', network.socket, INSIDE_SOCKET, '--as-pid-1'] : []),
      '--unshare-pid', '--proc', '/proc',
      ...KERNEL_READ_ONLY.flatMap(path => ['--ro-bind-try', path, path]),
      '--die-with-parent',
      ...(asRoot ? ['--cap-drop', 'ALL'] : []),
      '--',
      ...(network?.mode === 'allowlist' ? bridgeArgv(network.perl) : []),
    ],
    failed: (_exit, stderr) => lines(stderr).some(line => line.includes('bwrap: ') || line.startsWith(BRIDGE_FAILURE)),
    // A rename onto (or of) a protected path's mount point fails busy: `git config` replaces
    // .git/config that way.
    denied: (exit, stderr) => exit !== 0 && /read-only file system|device or resource busy/i.test(stderr),
  }
}

/** The first words of the bridge's own failure (it could not listen: the command never ran). */
const BRIDGE_FAILURE = 'dsh network bridge: '
/** MIPS numbers socket types its own way. */
const SOCK_STREAM = process.arch.startsWith('mips') ? 2 : 1

/** The bridge's argv, placed before the command inside the sandbox. */
export function bridgeArgv(perl: string): readonly string[] {
  return [perl, '-e', NET_BRIDGE_PROGRAM, INSIDE_SOCKET, String(PROXY_PORT), String(SOCK_STREAM), String(fsConstants.O_NONBLOCK), '--']
}

export const LANDLOCK_PARTIAL_NOTICE = 'landlock-run: partial enforcement (older Landlock ABI)'

/**
 * A Landlock launcher (`landlock-run`-style: exit 125 and a `landlock-run: ` line on its own
 * failure; the partial-ABI notice line is informational). `launcher` is its argv; the mode and
 * root follow as `--mode <mode> --root <root> --`.
 */
export function landlockRunner(launcher: readonly string[], options: { enforcement?: 'full' | 'partial' } = {}): SandboxRunner {
  return {
    name: 'landlock',
    enforcement: options.enforcement ?? 'full',
    argv: (mode, root) => [...launcher, '--mode', mode, '--root', root, '--'],
    failed: (exit, stderr) => exit === 125 && lines(stderr).filter(line => line !== LANDLOCK_PARTIAL_NOTICE).some(line => line.includes('landlock-run: ')),
    denied: (exit, stderr) => exit !== 0 && /permission denied/i.test(stderr),
  }
}

/** A configured runner command (`runnerCommand`), e.g. a site wrapper; same argv tail as Landlock. */
export function commandRunner(options: { name?: string; command: readonly string[]; failureSignatures?: readonly string[]; denialSignature?: string }): SandboxRunner {
  const denial = new RegExp(escape(options.denialSignature ?? 'read-only file system'), 'i')
  return {
    name: options.name ?? 'command',
    enforcement: 'full',
    argv: (mode, root) => [...options.command, '--mode', mode, '--root', root, '--'],
    failed: (_exit, stderr) => (options.failureSignatures ?? []).some(signature => stderr.includes(signature)),
    denied: (exit, stderr) => exit !== 0 && denial.test(stderr),
  }
}

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
}

export interface ProbeResult {
  readonly runner?: SandboxRunner
  /** Why each candidate was passed over (shown in SANDBOX_UNAVAILABLE). */
  readonly problems: readonly string[]
}

/**
 * What would make a runner work, read from the probe's problems (shown where a job could not
 * start for want of one): bubblewrap missing, or present but refused its namespaces.
 */
export function runnerRemedy(problems: readonly string[]): string {
  if (problems.some(problem => /^bwrap: .*\bENOENT\b/.test(problem))) {
    return 'bubblewrap is not installed: install the bubblewrap package (apt install bubblewrap, dnf install bubblewrap, pacman -S bubblewrap)'
  }
  if (problems.some(problem => problem.startsWith('bwrap: '))) {
    return 'bubblewrap cannot create its namespaces here: allow unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1; on Ubuntu kernel.apparmor_restrict_unprivileged_userns=0)'
  }
  return 'configure a sandbox runner that works on this machine (docs/security.md)'
}

/**
 * `spawn`, with node:child_process loaded on the first process: a run that starts none does not
 * pay for it. Shared by the runner probe and the bash tool.
 */
let spawnOnce: typeof Spawn | undefined
export async function spawner(): Promise<typeof Spawn> {
  return spawnOnce ??= (await import('node:child_process')).spawn
}

/** Runs `true` under the read-only profile; resolves to a problem text or undefined when it works. */
export async function probeRunner(runner: SandboxRunner, options: { root: string; timeoutMs: number; shell?: string }): Promise<string | undefined> {
  const spawn = await spawner()
  return new Promise(resolve => {
    const argv = [...runner.argv('read-only', options.root), options.shell ?? 'bash', '-c', 'true']
    let stderr = ''
    let settled = false
    const done = (problem: string | undefined) => { if (!settled) { settled = true; clearTimeout(timer); resolve(problem) } }
    const child = spawn(argv[0]!, argv.slice(1), { stdio: ['ignore', 'ignore', 'pipe'] })
    const timer = setTimeout(() => { child.kill('SIGKILL'); done(`${runner.name}: probe timed out after ${options.timeoutMs} ms`) }, options.timeoutMs)
    child.stderr!.on('data', (chunk: Buffer) => { if (stderr.length < 4096) stderr += chunk.toString('utf8') })
    child.once('error', error => done(`${runner.name}: ${error.message}`))
    child.once('close', code => {
      if (code === 0 && !runner.failed(code, stderr)) done(undefined)
      else done(`${runner.name}: probe exited ${code}${stderr.trim() === '' ? '' : `: ${stderr.trim().split('\n')[0]}`}`)
    })
  })
}

const probes = new Map<string, Promise<ProbeResult>>()

/** Whether the chain `key` has been probed (or is being probed) in this process. */
export function probed(key: string): boolean {
  return probes.has(key)
}

/**
 * Records `runner` as the chain's working runner without a probe of its own: something that
 * proves as much as the probe ran under it (a shell host came up inside it). No-op once probed.
 */
export function provenRunner(key: string, runner: SandboxRunner): void {
  if (!probes.has(key)) probes.set(key, Promise.resolve({ runner, problems: [] }))
}

/**
 * The first runner of `chain` whose probe passes, probed once per process per chain (`key`).
 * Nothing works ⇒ no runner, with the reasons: callers fail closed (SB-3).
 */
export function probeChain(key: string, chain: readonly SandboxRunner[], options: { timeoutMs: number; root?: string }): Promise<ProbeResult> {
  let probe = probes.get(key)
  if (probe === undefined) {
    probe = (async () => {
      const problems: string[] = []
      for (const runner of chain) {
        const problem = await probeRunner(runner, { root: options.root ?? '/', timeoutMs: options.timeoutMs })
        if (problem === undefined) return { runner, problems }
        problems.push(problem)
      }
      if (chain.length === 0) problems.push('no sandbox runner is configured')
      return { problems }
    })()
    probes.set(key, probe)
  }
  return probe
}
