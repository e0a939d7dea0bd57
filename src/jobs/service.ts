/**
 * `ctx.jobs` (the `jobs` row): background jobs of each session, their output, the model's
 * `job_output` / `job_kill` / `job_list` tools and the user's `/jobs` command (docs/jobs.md).
 *
 * - A job belongs to the session whose tool call started it. At most `maxRunning` run at once
 *   per session; one more is refused before anything starts.
 * - When a job ends on its own, the session's agent gets a notice (`agent.inject`: read at its
 *   next step, or with the next prompt when it is idle; no turn starts for it). A job that was
 *   killed, or whose end a `job_output` call was waiting for, sends none.
 * - The agent's disposal and dsh's exit stop every job of the session (SIGTERM to the process
 *   group, SIGKILL after the grace period).
 * - Ids are `<kind>-<n>` per session. The numbering continues from the session's log, so an id
 *   never names two jobs of one session, even across restarts.
 */
import { randomUUID } from 'node:crypto'
import { Context, Service } from 'cordis'
import { emitContained } from '../kernel/index.js'
import type {} from '../agent/api.js'
import type {} from '../commands/api.js'
import type { UserMessage } from '../llm/types.js'
import type { Session } from '../session/api.js'
import { isRunning, JobError, type JobEnd, type JobInfo, type JobRead, type JobsService, type JobStatus, type StartJob } from '../tools/jobs.js'
import { formatJobList, NOTICE_PLUGIN, settlementNotice, statusLine } from './format.js'
import { JobOutput } from './output.js'
import { createJobTools } from './tools.js'

export interface JobsConfig {
  /** Jobs running at once per session (default 8). */
  readonly maxRunning?: number
  /** Unread output kept in memory per job (default 32 KB); all of it goes to a file past that. */
  readonly keepBytes?: number
  /** A job's output file stops growing here (default 256 MB). */
  readonly maxFileBytes?: number
  /** `job_output` with `wait` and no `timeout_ms` waits this long (default 30 s). */
  readonly waitTimeoutMs?: number
  /** The longest `timeout_ms` honoured (default 10 min). */
  readonly maxWaitMs?: number
  /** Ended jobs kept for `job_list` and late reads, per session (default 50). */
  readonly keepEnded?: number
}

export const JOBS_DEFAULTS = {
  maxRunning: 8,
  keepBytes: 32 * 1024,
  maxFileBytes: 256 * 1024 * 1024,
  waitTimeoutMs: 30_000,
  maxWaitMs: 600_000,
  keepEnded: 50,
} as const

interface Job {
  readonly id: string
  readonly kind: string
  readonly label: string
  readonly owner: string
  readonly startedAt: number
  status: JobStatus
  detail?: string
  finishedAt?: number
  readonly output: JobOutput
  readonly controller: AbortController
  /** Resolves when the work has ended and the output is closed. */
  done: Promise<void>
  /** `job_output` calls waiting for the end right now. */
  waiting: number
  readonly notice?: StartJob['notice']
}

interface SessionJobs {
  readonly jobs: Map<string, Job>
  /** Highest number used per kind (from the log at first use, then counted). */
  readonly numbers: Map<string, number>
}

/** The highest `<kind>-<n>` a session's log has given out (a `tool/result` meta `job.id`). */
function loggedNumbers(session: Session): Map<string, number> {
  const numbers = new Map<string, number>()
  for (const event of session.events) {
    if (event.type !== 'tool/result') continue
    const id = ((event.data as { meta?: { job?: { id?: unknown } } }).meta)?.job?.id
    if (typeof id !== 'string') continue
    const match = /^(.+)-(\d+)$/.exec(id)
    if (match === null) continue
    numbers.set(match[1]!, Math.max(numbers.get(match[1]!) ?? 0, Number(match[2])))
  }
  return numbers
}

export class JobsPlugin extends Service implements JobsService {
  static readonly inject = ['tools']
  private readonly sessions = new Map<string, SessionJobs>()
  private readonly limits: Required<JobsConfig>
  /** Added with the first job: on exit only synchronous work runs, so the SIGTERM goes out then. */
  private onExit: (() => void) | undefined

  constructor(ctx: Context, config: JobsConfig = {}) {
    super(ctx, 'jobs')
    this.limits = { ...JOBS_DEFAULTS, ...config }
    for (const tool of createJobTools(() => this, this.limits)) ctx.effect(() => ctx.tools.register(tool))
    ctx.on('agent/disposed', (agent) => {
      this.stopAll(agent.id, 'the agent was closed')
      this.forget(agent.id)
    })
    ctx.effect(() => () => {
      if (this.onExit !== undefined) process.off('exit', this.onExit)
      for (const id of [...this.sessions.keys()]) this.stopAll(id, 'the jobs service stopped')
    }, 'background jobs')
    ctx.inject(['commands'], (inner) => {
      inner.commands.register({
        name: 'jobs',
        description: 'Background jobs of this session; /jobs kill ID stops one',
        argumentHint: '[kill ID]',
        run: ({ agent, args }) => {
          const words = args.trim().split(/\s+/).filter(Boolean)
          if (words.length === 0) return { kind: 'success', text: formatJobList(this.list(agent.id)) }
          if (words[0] === 'kill' && words.length === 2) {
            try {
              const job = this.kill(agent.id, words[1]!, 'stopped by the user')
              return { kind: 'success', text: isRunning(job) ? `Stopping ${job.id}.` : `${job.id} had already ended: ${statusLine(job)}` }
            } catch (error) {
              return { kind: 'error', text: (error as Error).message }
            }
          }
          return { kind: 'error', text: `unknown arguments "${args.trim()}": use /jobs or /jobs kill ID` }
        },
      })
    })
  }

  start(session: Session, spec: StartJob): JobInfo {
    const jobs = this.of(session)
    const running = [...jobs.jobs.values()].filter(isRunning).length
    if (running >= this.limits.maxRunning) {
      throw new JobError(`background job limit reached: ${running} jobs are running in this session (at most ${this.limits.maxRunning}); collect one with job_output or stop one with job_kill, then try again`, 'JOB_LIMIT')
    }
    if (this.onExit === undefined) {
      this.onExit = () => { for (const id of [...this.sessions.keys()]) this.stopAll(id, 'dsh exited') }
      process.once('exit', this.onExit)
    }
    const number = (jobs.numbers.get(spec.kind) ?? 0) + 1
    jobs.numbers.set(spec.kind, number)
    const id = `${spec.kind}-${number}`
    const controller = new AbortController()
    const output = new JobOutput(id, { keepBytes: this.limits.keepBytes, maxFileBytes: this.limits.maxFileBytes }, { session: { id: session.id } })
    const job: Job = { id, kind: spec.kind, label: spec.label, owner: session.id, startedAt: Date.now(), status: 'running', output, controller, done: Promise.resolve(), waiting: 0, ...(spec.notice !== undefined ? { notice: spec.notice } : {}) }
    jobs.jobs.set(id, job)
    let ran: Promise<JobEnd>
    try {
      ran = spec.run({ id, signal: controller.signal, attach: stream => output.attach(stream) })
    } catch (error) {
      ran = Promise.reject(error)
    }
    job.done = ran.then(
      (end) => end,
      (error: unknown): JobEnd => ({ status: 'failed', detail: error instanceof Error ? error.message : String(error) }),
    ).then(async (end) => {
      await output.close().catch(() => undefined)
      this.settle(job, end)
    })
    this.changed(job)
    return this.info(job)
  }

  /** `jobs/changed` for surfaces that show running jobs (the terminal app's status bar). */
  private changed(job: Job): void {
    emitContained(this.ctx, 'jobs/changed', [job.owner, this.info(job)])
  }

  async read(sessionId: string, id: string, options: { wait?: boolean; timeoutMs?: number; signal?: AbortSignal } = {}): Promise<JobRead> {
    const job = this.find(sessionId, id)
    if (options.wait === true && isRunning(job)) {
      const timeoutMs = Math.min(Math.max(0, options.timeoutMs ?? this.limits.waitTimeoutMs), this.limits.maxWaitMs)
      job.waiting++
      let timer: NodeJS.Timeout | undefined
      let onAbort: (() => void) | undefined
      try {
        await Promise.race([
          job.done,
          new Promise<void>(resolve => { timer = setTimeout(resolve, timeoutMs) }),
          new Promise<void>(resolve => {
            onAbort = resolve
            if (options.signal?.aborted === true) resolve()
            else options.signal?.addEventListener('abort', onAbort, { once: true })
          }),
        ])
      } finally {
        job.waiting--
        clearTimeout(timer)
        if (onAbort !== undefined) options.signal?.removeEventListener('abort', onAbort)
      }
    }
    return { text: job.output.read(), job: this.info(job) }
  }

  kill(sessionId: string, id: string, reason?: string): JobInfo {
    const job = this.find(sessionId, id)
    this.stop(job, reason !== undefined && reason.trim() !== '' ? `killed: ${reason.trim()}` : 'killed')
    return this.info(job)
  }

  list(sessionId: string): readonly JobInfo[] {
    return [...this.sessions.get(sessionId)?.jobs.values() ?? []].map(job => this.info(job))
  }

  /** Stops every running job of a session; no notices. */
  private stopAll(sessionId: string, reason: string): void {
    for (const job of this.sessions.get(sessionId)?.jobs.values() ?? []) this.stop(job, `killed: ${reason}`)
  }

  /** Asks a running job to stop (`stopping` until its work has ended); an ended one is left alone. */
  private stop(job: Job, detail: string): void {
    if (job.status !== 'running') return
    job.status = 'stopping'
    job.detail = detail
    job.controller.abort()
    this.changed(job)
  }

  /**
   * Drops what is kept of a session whose agent is gone, once none of its jobs still runs (a
   * server holds many sessions over its life). Its numbering comes back from the log if it is
   * used again.
   */
  private forget(sessionId: string): void {
    const jobs = this.sessions.get(sessionId)
    if (jobs === undefined || [...jobs.jobs.values()].some(isRunning)) return
    if (this.ctx.get('agents')?.get(sessionId) !== undefined) return
    this.sessions.delete(sessionId)
  }

  private of(session: Session): SessionJobs {
    let jobs = this.sessions.get(session.id)
    if (jobs === undefined) this.sessions.set(session.id, jobs = { jobs: new Map(), numbers: loggedNumbers(session) })
    return jobs
  }

  private find(sessionId: string, id: string): Job {
    const job = this.sessions.get(sessionId)?.jobs.get(id)
    if (job !== undefined) return job
    const known = /^.+-\d+$/.test(id) ? ' (jobs started before dsh was restarted are gone: they do not outlive the process)' : ''
    throw new JobError(`no background job "${id}" in this session${known}; job_list shows the jobs there are`, 'UNKNOWN_JOB')
  }

  private info(job: Job): JobInfo {
    const file = job.output.outputFile
    return {
      id: job.id, kind: job.kind, label: job.label, status: job.status, startedAt: job.startedAt,
      outputBytes: job.output.total,
      ...(job.detail !== undefined ? { detail: job.detail } : {}),
      ...(job.finishedAt !== undefined ? { finishedAt: job.finishedAt } : {}),
      ...(file !== undefined ? { outputFile: file } : {}),
    }
  }

  private settle(job: Job, end: JobEnd): void {
    const killed = job.status === 'stopping'
    job.status = killed ? 'killed' : end.status
    if (!killed) {
      if (end.detail !== undefined) job.detail = end.detail
      else delete job.detail
    }
    job.finishedAt = Date.now()
    this.trim(job.owner)
    this.changed(job)
    this.forget(job.owner)
    // Killed on request, or its end is being read right now: the model already knows.
    if (killed || job.waiting > 0) return
    const agent = this.ctx.get('agents')?.get(job.owner)
    if (agent === undefined) return
    // A job may word its own notice (product subagents); else the recorded shape (./format.ts).
    const { text, summary } = job.notice?.(this.info(job)) ?? settlementNotice(job)
    const notice: UserMessage = {
      id: randomUUID(), role: 'user',
      content: [{ type: 'text', text }],
      source: { kind: 'plugin', plugin: NOTICE_PLUGIN, form: 'notice', summary },
    }
    agent.inject(notice)
  }

  /** Keeps the newest `keepEnded` ended jobs of a session. */
  private trim(owner: string): void {
    const jobs = this.sessions.get(owner)?.jobs
    if (jobs === undefined) return
    const ended = [...jobs.values()].filter(job => !isRunning(job))
    for (const job of ended.slice(0, Math.max(0, ended.length - this.limits.keepEnded))) jobs.delete(job.id)
  }
}
