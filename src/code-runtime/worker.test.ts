import { describeCodeRuntime } from './runtime.conformance.js'
import { workerCodeRuntime } from './worker.js'

describeCodeRuntime('worker thread', workerCodeRuntime)
