/**
 * Running one hook command and decoding what it says (HK-4, HK-10): `sh -c` in its own process
 * group, in the session's cwd, the payload on stdin, a credential-scrubbed environment; the
 * timeout and the turn's abort signal kill the whole group.
 */
import { scrubbedEnvironment } from '../config/credentials.js'
import type { spawn as Spawn } from 'node:child_process'
import type { HookDecision, HookPoint } from './api.js'

export interface RunHookOptions {
  readonly command: string
  readonly cwd: string
  readonly stdin: string
  readonly timeoutMs: number
  readonly signal?: AbortSignal
  /** Added to the scrubbed environment. */
  readonly env?: Readonly<Record<string, string>>
  /** Cap on collected stdout/stderr (each); the rest is dropped. */
  readonly maxOutputBytes?: number
}

export interface HookRun {
  /** null when the process did not exit normally (killed, failed to start). */
  readonly exitCode: number | null
  readonly stdout: string
  readonly stderr: string
  /** Why it did not exit normally: `timeout`, `aborted` or a spawn error message. */
  readonly failure?: string
}

/** The process environment without credentials and other secrets (one rule for every child dsh starts). */
export function scrubbedEnv(extra: Readonly<Record<string, string>> = {}): Record<string, string> {
  return scrubbedEnvironment(process.env, extra)
}

function killGroup(pid: number | undefined): void {
  if (pid === undefined) return
  try {
    process.kill(-pid, 'SIGKILL')
  } catch {
    // Already gone.
  }
}

/** node:child_process loads on the first process: a run that starts none does not pay for it. */
let spawnOnce: typeof Spawn | undefined
async function spawner(): Promise<typeof Spawn> {
  return spawnOnce ??= (await import('node:child_process')).spawn
}

export async function runHookCommand(options: RunHookOptions): Promise<HookRun> {
  const limit = options.maxOutputBytes ?? 1024 * 1024
  const spawn = await spawner()
  return new Promise((resolve) => {
    if (options.signal?.aborted) {
      resolve({ exitCode: null, stdout: '', stderr: '', failure: 'aborted' })
      return
    }
    const child = spawn('/bin/sh', ['-c', options.command], {
      cwd: options.cwd,
      detached: true,
      env: scrubbedEnv(options.env),
      stdio: ['pipe', 'pipe', 'pipe'],
    })
    const out: Buffer[] = []
    const err: Buffer[] = []
    let outBytes = 0
    let errBytes = 0
    let failure: string | undefined
    child.stdout.on('data', (chunk: Buffer) => { if (outBytes < limit) { out.push(chunk); outBytes += chunk.length } })
    child.stderr.on('data', (chunk: Buffer) => { if (errBytes < limit) { err.push(chunk); errBytes += chunk.length } })
    // A hook that exits without reading stdin must not fail the run with EPIPE.
    child.stdin.on('error', () => undefined)
    child.stdin.end(options.stdin)
    const timer = setTimeout(() => { failure ??= 'timeout'; killGroup(child.pid) }, options.timeoutMs)
    const onAbort = () => { failure ??= 'aborted'; killGroup(child.pid) }
    options.signal?.addEventListener('abort', onAbort, { once: true })
    let settled = false
    const finish = (exitCode: number | null) => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      options.signal?.removeEventListener('abort', onAbort)
      resolve({
        exitCode: failure === undefined ? exitCode : null,
        stdout: Buffer.concat(out).toString('utf8'),
        stderr: Buffer.concat(err).toString('utf8'),
        ...(failure !== undefined ? { failure } : {}),
      })
    }
    child.on('error', (error) => { failure ??= `could not start: ${error.message}`; finish(null) })
    child.on('close', (code) => finish(code))
  })
}

/** What one hook run means, before merging (HK-4). */
export interface DecodedHook {
  readonly decision: HookDecision
  readonly reason?: string
  readonly context?: string
  readonly systemMessage?: string
  /** Parsed and logged but not honoured. */
  readonly updatedInput?: unknown
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

/**
 * Exit 2: block with stderr. Exit 0: the JSON protocol on stdout (both dialects also take plain
 * stdout as context for SessionStart/UserPromptSubmit). Anything else: pass, never block.
 */
export function decodeHookRun(run: HookRun, point: HookPoint, dialect: 'claude-code' | 'codex'): DecodedHook {
  if (run.exitCode === 2) {
    const reason = run.stderr.trim()
    return { decision: 'block', ...(reason !== '' ? { reason } : {}) }
  }
  if (run.exitCode !== 0) return { decision: 'pass' }
  const text = run.stdout.trim()
  if (text === '') return { decision: 'pass' }
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch {
    json = undefined
  }
  if (!isRecord(json)) {
    // Plain stdout of these two is context, in both dialects (Claude Code adds it as Codex does, #44.3).
    if (point === 'SessionStart' || point === 'UserPromptSubmit') return { decision: 'pass', context: text }
    return { decision: 'pass' }
  }
  let decision: HookDecision = 'pass'
  let reason: string | undefined
  let context: string | undefined
  const specific = json.hookSpecificOutput
  if (isRecord(specific) && (specific.hookEventName === undefined || specific.hookEventName === point)) {
    const permission = specific.permissionDecision
    if (permission === 'allow' || permission === 'deny' || permission === 'ask') {
      decision = permission
      if (typeof specific.permissionDecisionReason === 'string' && specific.permissionDecisionReason !== '') reason = specific.permissionDecisionReason
    }
    if (typeof specific.additionalContext === 'string' && specific.additionalContext !== '') context = specific.additionalContext
  }
  if (decision === 'pass' && (json.decision === 'block' || json.decision === 'approve')) {
    decision = json.decision
    if (typeof json.reason === 'string' && json.reason !== '') reason = json.reason
  }
  if (decision === 'pass' && json.continue === false) {
    decision = 'stop'
    if (typeof json.stopReason === 'string' && json.stopReason !== '') reason = json.stopReason
  }
  return {
    decision,
    ...(reason !== undefined ? { reason } : {}),
    ...(context !== undefined ? { context } : {}),
    ...(typeof json.systemMessage === 'string' ? { systemMessage: json.systemMessage } : {}),
    ...(json.updatedInput !== undefined ? { updatedInput: json.updatedInput } : {}),
  }
}

/** Restrictiveness for merging several hooks on one point: deny/block > ask > allow/approve > pass. */
function rank(decision: HookDecision): number {
  switch (decision) {
    case 'block': case 'deny': case 'stop': return 3
    case 'ask': return 2
    case 'allow': case 'approve': return 1
    default: return 0
  }
}

export interface MergedHooks {
  readonly decision: HookDecision
  /** Reasons of the hooks that gave the winning decision, joined with a blank line. */
  readonly reason?: string
  /** Every context, in order, joined with a blank line. */
  readonly context?: string
}

/** Most restrictive wins; reasons of the winning rank and all contexts are joined in order. */
export function mergeHooks(results: readonly DecodedHook[]): MergedHooks {
  let top: HookDecision = 'pass'
  for (const result of results) if (rank(result.decision) > rank(top)) top = result.decision
  const reasons = results.filter(result => rank(result.decision) === rank(top) && rank(top) > 0 && result.reason !== undefined).map(result => result.reason!)
  const contexts = results.filter(result => result.context !== undefined).map(result => result.context!)
  return {
    decision: top,
    ...(reasons.length > 0 ? { reason: reasons.join('\n\n') } : {}),
    ...(contexts.length > 0 ? { context: contexts.join('\n\n') } : {}),
  }
}
