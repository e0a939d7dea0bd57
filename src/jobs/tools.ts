/**
 * The model's side of background jobs: `job_output`, `job_kill` and `job_list` (docs/jobs.md).
 * Each answers about the calling session's jobs only.
 */
import type { Tool, ToolContext, ToolOutput } from '../tools/api.js'
import { ToolError } from '../tools/errors.js'
import type { JobInfo, JobsService } from '../tools/jobs.js'
import { formatJobList, statusLine } from './format.js'

interface Limits {
  readonly waitTimeoutMs: number
  readonly maxWaitMs: number
}

function sessionOf(context: ToolContext): string {
  const id = context.session?.id
  if (id === undefined) throw new ToolError('background jobs belong to a session, and this call has none', 'NO_SESSION')
  return id
}

/** Structured data for UIs: the job as the tool saw it. */
function jobMeta(job: JobInfo): ToolOutput['meta'] {
  return { job: { ...job } }
}

function text(value: string, job?: JobInfo): ToolOutput {
  return { content: [{ type: 'text', text: value }], ...(job !== undefined ? { meta: jobMeta(job) } : {}) }
}

export function createJobTools(service: () => JobsService, limits: Limits): Tool[] {
  const jobId = { type: 'string', description: 'The job id returned by the tool that started the background work (bash-1...).' }
  const output: Tool<{ job_id: string; wait?: boolean; timeout_ms?: number }> = {
    name: 'job_output',
    description: `Read a background job: the output it printed since your previous read of it, then a \`[status: ...]\` line (running, stopping, completed, failed or killed). Returns at once unless \`wait\` is true, which waits for the job to end, for at most \`timeout_ms\` (default ${limits.waitTimeoutMs} ms, at most ${limits.maxWaitMs} ms); a wait that times out answers [status: running] and leaves the job running.`,
    parameters: {
      type: 'object',
      properties: {
        job_id: jobId,
        wait: { type: 'boolean', description: 'Wait for the job to end (or for the timeout) before answering.' },
        timeout_ms: { type: 'integer', minimum: 0, description: `With wait: the longest wait in milliseconds (default ${limits.waitTimeoutMs}, at most ${limits.maxWaitMs}).` },
      },
      required: ['job_id'],
      additionalProperties: false,
    },
    timeoutMs: limits.maxWaitMs + 30_000,
    isConcurrencySafe: () => true,
    async execute(args, context) {
      const read = await service().read(sessionOf(context), args.job_id, {
        ...(args.wait !== undefined ? { wait: args.wait } : {}),
        ...(args.timeout_ms !== undefined ? { timeoutMs: args.timeout_ms } : {}),
        signal: context.signal,
      })
      const body = read.text === '' ? '(no new output)' : read.text
      return text(`${body}${body.endsWith('\n') ? '' : '\n'}${statusLine(read.job)}`, read.job)
    },
  }
  const kill: Tool<{ job_id: string; reason?: string }> = {
    name: 'job_kill',
    description: 'Stop a running background job by its id: its whole process tree gets SIGTERM, then SIGKILL if it has not ended after a grace period. Returns at once; job_output or job_list then shows it as killed.',
    parameters: {
      type: 'object',
      properties: {
        job_id: jobId,
        reason: { type: 'string', description: 'A short reason, kept with the job.' },
      },
      required: ['job_id'],
      additionalProperties: false,
    },
    execute(args, context) {
      const job = service().kill(sessionOf(context), args.job_id, args.reason)
      if (job.status === 'stopping') return text(`requested cancellation of job ${job.id}`, job)
      return text(`job ${job.id} had already ended: ${statusLine(job)}`, job)
    },
  }
  const list: Tool<Record<string, never>> = {
    name: 'job_list',
    description: 'List the background jobs of this session, running and ended: id, status, what each does, and how long it ran.',
    parameters: { type: 'object', properties: {}, additionalProperties: false },
    isConcurrencySafe: () => true,
    execute(_args, context) {
      const jobs = service().list(sessionOf(context))
      return { content: [{ type: 'text', text: formatJobList(jobs) }], meta: { jobs: jobs.map(job => ({ ...job })) } }
    },
  }
  return [output, kill, list]
}
