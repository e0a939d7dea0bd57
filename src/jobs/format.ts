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
