/**
 * The conformance run is a list of suites; each yields one result per thing it checked. The
 * runner prints them and a single summary line, so replay or protocol suites can join the same
 * run later by adding to the list.
 */
export type ConformanceStatus = 'pass' | 'fail' | 'skip'

export interface ConformanceResult {
  readonly suite: string
  readonly status: ConformanceStatus
  /** The file (or other subject) checked, as found under the given roots. */
  readonly path: string
  /** For fail: the first problem; for skip: the reason. */
  readonly detail?: string
}

export interface ConformanceSuite {
  readonly name: string
  /** Yields results in a stable order for the given root directories. */
  run(roots: readonly string[]): AsyncIterable<ConformanceResult>
}
