/** How jobs read as text, for the model's tools and the user's `/jobs`. */
import type { JobInfo } from '../tools/jobs.js'

/** One line per job: id, status (with detail), what it does, and for how long it ran. */
export function formatJobList(jobs: readonly JobInfo[], now = Date.now()): string {
  if (jobs.length === 0) return 'No background jobs in this session.'
  return jobs.map(job => {
    const status = job.detail !== undefined ? `${job.status} (${job.detail})` : job.status
    const seconds = Math.round(((job.finishedAt ?? now) - job.startedAt) / 1000)
    return `${job.id}  ${status}  ${job.label}  ${seconds} s${job.outputFile !== undefined ? `  output: ${job.outputFile}` : ''}`
  }).join('\n')
}

/** The `[status: ...]` line that ends every `job_output` answer. */
export function statusLine(job: Pick<JobInfo, 'status' | 'detail'>): string {
  return `[status: ${job.status}${job.detail !== undefined ? `, ${job.detail}` : ''}]`
}

/** The plugin name a settlement notice carries (`source.plugin`); logs written before it say `jobs`. */
export const NOTICE_PLUGIN = 'tool-jobs'
/** The longest `source.summary` of a notice, in characters, the `…` included. */
export const NOTICE_SUMMARY_CHARS = 120

/**
 * The notice a job that ended on its own sends its session's agent: the text the model reads
 * (`background job ID (KIND: LABEL) finished [status: ...]. Read its output with job_output.`)
 * and the short summary surfaces show (`KIND LABEL [status: ...]`, cut with `…`).
 */
export function settlementNotice(job: Pick<JobInfo, 'id' | 'kind' | 'label' | 'status' | 'detail'>): { text: string; summary: string } {
  const status = statusLine(job)
  return {
    text: `background job ${job.id} (${job.kind}: ${job.label}) finished ${status}. Read its output with job_output.`,
    summary: cutText(`${job.kind} ${job.label} ${status}`, NOTICE_SUMMARY_CHARS),
  }
}

/** `text` in at most `max` characters (code points): past that, its head and `…`. */
export function cutText(text: string, max: number): string {
  const chars = [...text]
  return chars.length <= max ? text : `${chars.slice(0, max - 1).join('')}…`
}
