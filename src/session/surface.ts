/**
 * The surface: the ordered seqs of the currently model-visible events (S-6..S-11). Appends are
 * O(1) (array push + map insert); a replace splices a range and reindexes the tail, O(n), and
 * bumps `replaceGeneration` so derived caches know to rebuild.
 */
import type { Message } from '../llm/types.js'
import { isReplace } from './invariants.js'
import { SessionRuleError, type SessionEvent } from './types.js'

/** S-11: the one-event projection. */
export function deriveEventMessage(event: SessionEvent): Message | null {
  switch (event.type) {
    case 'user/message':
      return event.data as Message
    case 'assistant/message': {
      // A content-less assistant message (e.g. usage-only max-tokens step) never reaches the model.
      const message = (event.data as { message: Message }).message
      return message.content.length === 0 ? null : message
    }
    case 'tool/result':
      return (event.data as { message: Message }).message
    default:
      return null
  }
}

export type SurfacePlan =
  | { readonly kind: 'append'; readonly seq: number }
  | { readonly kind: 'replace'; readonly seq: number; readonly startIndex: number; readonly endIndex: number }

export class SurfaceManager {
  private readonly seqs: number[] = []
  /** seq -> index in `seqs`, for O(1) membership and order checks. */
  private readonly index = new Map<number, number>()
  private generation = 0

  get replaceGeneration(): number {
    return this.generation
  }

  get length(): number {
    return this.seqs.length
  }

  seqAt(index: number): number {
    return this.seqs[index]
  }

  has(seq: number): boolean {
    return this.index.has(seq)
  }

  /** A copy of the current surface. */
  snapshot(): number[] {
    return this.seqs.slice()
  }

  /**
   * S-8/S-9 for an enveloped candidate (S-6/S-7 already checked). Returns what `commit` must do,
   * or null for events that never enter the surface. Never mutates (S-10).
   */
  validate(candidate: SessionEvent, eventAt: (seq: number) => SessionEvent): SurfacePlan | null {
    const op = candidate.surfaceOp
    if (op === undefined) return null
    if (!isReplace(candidate)) return { kind: 'append', seq: candidate.seq }
    const { start, end } = op as { start: number; end: number }
    const seq = candidate.seq
    const startIndex = this.index.get(start)
    const endIndex = this.index.get(end)
    if (startIndex === undefined) throw new SessionRuleError('S-8', seq, `replace start ${start} is not on the current surface`)
    if (endIndex === undefined) throw new SessionRuleError('S-8', seq, `replace end ${end} is not on the current surface`)
    if (startIndex > endIndex) throw new SessionRuleError('S-8', seq, `replace start ${start} comes after end ${end} in surface order`)
    const sources = new Set(candidate.sourceEventSeqs ?? [])
    for (let i = startIndex; i <= endIndex; i++) {
      if (!sources.has(this.seqs[i])) {
        throw new SessionRuleError('S-8', seq, `shadowed node ${this.seqs[i]} is missing from sourceEventSeqs`)
      }
    }
    if (candidate.type === 'tool/result') {
      if (startIndex !== endIndex) {
        throw new SessionRuleError('S-9', seq, `a replacing tool/result must shadow exactly one node, not ${endIndex - startIndex + 1}`)
      }
      const shadowed = eventAt(start)
      if (shadowed.type !== 'tool/result') {
        throw new SessionRuleError('S-9', seq, `a replacing tool/result must shadow a tool/result, not the ${shadowed.type} at seq ${start}`)
      }
      const difference = firstDifference(withoutResultContent(shadowed.data), withoutResultContent(candidate.data), 'data')
      if (difference) {
        throw new SessionRuleError('S-9', seq, `a replacing tool/result may change only the result content; ${difference} differs from seq ${start}`)
      }
    }
    return { kind: 'replace', seq, startIndex, endIndex }
  }

  commit(plan: SurfacePlan): void {
    if (plan.kind === 'append') {
      this.index.set(plan.seq, this.seqs.length)
      this.seqs.push(plan.seq)
      return
    }
    const removed = this.seqs.splice(plan.startIndex, plan.endIndex - plan.startIndex + 1, plan.seq)
    for (const seq of removed) this.index.delete(seq)
    for (let i = plan.startIndex; i < this.seqs.length; i++) this.index.set(this.seqs[i], i)
    this.generation++
  }
}

/** tool/result data with the result block's `content` blanked, for the S-9 comparison. */
function withoutResultContent(data: unknown): unknown {
  const d = data as { message: { content: readonly Record<string, unknown>[] } }
  const [block, ...rest] = d.message.content
  return { ...d, message: { ...d.message, content: [{ ...block, content: null }, ...rest] } }
}

/** The path of the first difference between two JSON values, or null when deep-equal. */
export function firstDifference(a: unknown, b: unknown, path: string): string | null {
  if (a === b) return null
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null || Array.isArray(a) !== Array.isArray(b)) return path
  if (Array.isArray(a)) {
    const bb = b as unknown[]
    if (a.length !== bb.length) return `${path}.length`
    for (let i = 0; i < a.length; i++) {
      const d = firstDifference(a[i], bb[i], `${path}[${i}]`)
      if (d) return d
    }
    return null
  }
  const ao = a as Record<string, unknown>
  const bo = b as Record<string, unknown>
  for (const key of new Set([...Object.keys(ao), ...Object.keys(bo)])) {
    if (Object.hasOwn(ao, key) !== Object.hasOwn(bo, key)) return `${path}.${key}`
    const d = firstDifference(ao[key], bo[key], `${path}.${key}`)
    if (d) return d
  }
  return null
}
