/** Runs suites over root directories, printing one line per result and a summary line. */
import type { ConformanceResult, ConformanceSuite } from './types.js'
import { sessionLogSuite } from './session-logs.js'
import { replaySuite } from './replay-suite.js'
import { protocolSuite } from './protocol-suite.js'

export interface ConformanceSummary {
  readonly passed: number
  readonly failed: number
  readonly skipped: number
  /** 0 when nothing failed, else 1. */
  readonly exitCode: number
}

export interface RunOptions {
  readonly suites?: readonly ConformanceSuite[]
  /** Receives each output line (without newline); default stdout. */
  readonly write?: (line: string) => void
}

export function defaultSuites(): ConformanceSuite[] {
  return [sessionLogSuite(), replaySuite(), protocolSuite()]
}

export function formatResult(result: ConformanceResult): string {
  switch (result.status) {
    case 'pass': return `PASS ${result.path}`
    case 'fail': return `FAIL ${result.path}: ${result.detail ?? 'failed'}`
    case 'skip': return `SKIP ${result.path}: ${result.detail ?? 'skipped'}`
  }
}

export function formatSummary({ passed, failed, skipped }: Pick<ConformanceSummary, 'passed' | 'failed' | 'skipped'>): string {
  return `${passed} passed, ${failed} failed, ${skipped} skipped`
}

export async function runConformance(roots: readonly string[], options: RunOptions = {}): Promise<ConformanceSummary> {
  const write = options.write ?? ((line: string) => { process.stdout.write(`${line}\n`) })
  const suites = options.suites ?? defaultSuites()
  let passed = 0
  let failed = 0
  let skipped = 0
  for (const suite of suites) {
    for await (const result of suite.run(roots)) {
      if (result.status === 'pass') passed++
      else if (result.status === 'fail') failed++
      else skipped++
      write(formatResult(result))
    }
  }
  write(formatSummary({ passed, failed, skipped }))
  return { passed, failed, skipped, exitCode: failed > 0 ? 1 : 0 }
}
