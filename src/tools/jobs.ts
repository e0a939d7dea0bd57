/**
 * The background-job seam (`ctx.jobs`): work a tool starts and returns from at once, such as
 * `bash` with `run_in_background`. The interface lives here, below the tools that start jobs;
 * the service, the `job_output` / `job_kill` / `job_list` tools and `/jobs` are in `src/jobs/`
 * (docs/jobs.md).
 *
 * A job belongs to the session whose tool call started it, and lives as long as that session's
 * agent is loaded in this process: jobs do not survive a restart of dsh.
 */
import type { Readable } from 'node:stream'
import type { Session } from '../session/api.js'

export type JobStatus = 'running' | 'stopping' | 'completed' | 'killed' | 'failed'

/** Still running: not yet ended (a job asked to stop runs until its processes are gone). */
export function isRunning(job: Pick<JobInfo, 'status'>): boolean {
  return job.status === 'running' || job.status === 'stopping'
}

/** What a job is, as `job_list` and `/jobs` show it. */
export interface JobInfo {
  /** `<kind>-<n>`, numbered per session (`bash-1`, `bash-2`...), never reused in a session's log. */
  readonly id: string
  readonly kind: string
  /** What the job does (bash: the call's `description`). */
  readonly label: string
  readonly status: JobStatus
  /** Why it ended as it did (`exit code 2`, `killed: free the slot`...). */
  readonly detail?: string
  readonly startedAt: number
  readonly finishedAt?: number
  /** Bytes of output so far. */
  readonly outputBytes: number
  /** Where all of its output is kept once there is more than the job keeps in memory. */
  readonly outputFile?: string
}

/** How a job's work ended. `killed` is decided by the service (a kill was asked). */
export interface JobEnd {
  readonly status: 'completed' | 'failed'
  readonly detail?: string
}

/** What a job's work gets from the service. */
export interface RunningJob {
  readonly id: string
  /** Aborted by `job_kill`, `/jobs kill`, the agent's disposal and dsh's exit. */
  readonly signal: AbortSignal
  /**
   * Feeds a process stream into the job's output (stdout and stderr interleave, as in a
   * terminal). The stream is paused while the output file cannot keep up.
   */
  attach(stream: Readable): void
}

export interface StartJob {
  readonly kind: string
  readonly label: string
  readonly run: (job: RunningJob) => Promise<JobEnd>
  /** The notice's wording when the job ends on its own (default: the service's). */
  readonly notice?: (job: JobInfo) => { readonly text: string; readonly summary: string }
}

export interface JobRead {
  /** Output since the previous read (with a note when some was dropped from memory). */
  readonly text: string
  readonly job: JobInfo
}

export interface JobsService {
  /** Starts a job for `session`; throws `JobError` (`JOB_LIMIT`) when too many are running. */
  start(session: Session, spec: StartJob): JobInfo
  /** New output since the last read; with `wait`, first waits for the job to end (up to the timeout). */
  read(sessionId: string, id: string, options?: { readonly wait?: boolean; readonly timeoutMs?: number; readonly signal?: AbortSignal }): Promise<JobRead>
  /** Asks a running job to stop; resolves at once with its state (`stopping`, or already ended). */
  kill(sessionId: string, id: string, reason?: string): JobInfo
  list(sessionId: string): readonly JobInfo[]
}

export type JobErrorCode = 'JOB_LIMIT' | 'UNKNOWN_JOB'

export class JobError extends Error {
  override readonly name = 'JobError'
  constructor(message: string, readonly code: JobErrorCode) {
    super(message)
  }
}

declare module 'cordis' {
  interface Context {
    jobs: JobsService
  }
  interface Events {
    /** @mode emit (contained). A job of `sessionId` started, was asked to stop, or ended. */
    'jobs/changed'(sessionId: string, job: JobInfo): void
  }
}
