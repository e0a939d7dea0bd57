/** The conformance runner: suites over directories of recorded data (docs/conformance.md). */
export * from './types.js'
export { runConformance, defaultSuites, formatResult, formatSummary, type ConformanceSummary, type RunOptions } from './runner.js'
export { sessionLogSuite, SessionLogChecker, notASessionLog, type SessionLogSuiteOptions } from './session-logs.js'
export { findFiles, isSessionLogName } from './discover.js'
export { SESSION_LOG_SKIPS, findSkip, type SkipEntry } from './skips.js'
export { ConformanceVocabulary, CONFORMANCE_VOCABULARY, shapeValidator } from './vocabulary.js'
