/**
 * A recording's fixture compaction: the original's test appended a compaction summary while a
 * tool ran (`compactionId: workspace-context-fixture`, no compaction events; agent-instructions).
 * Both suites append the recorded message again when that call executes: the replay suite with a
 * listener in its own context, the protocol suite with a one-file plugin row it writes for the
 * dsh process it starts (test code, never shipped).
 */
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type { UserMessage } from '../llm/types.js'
import type { AppendOptions, SessionEvent } from '../session/types.js'

export const FIXTURE_COMPACTION_ID = 'workspace-context-fixture'

/** The recorded messages, keyed by the call id of the tool/call right before each. */
export function fixtureCompactions(events: readonly SessionEvent[]): Map<string, SessionEvent> {
  const found = new Map<string, SessionEvent>()
  if (events.some(e => e.type.startsWith('compaction/'))) return found
  events.forEach((event, i) => {
    const source = (event.data as { source?: { plugin?: string; compactionId?: string } }).source
    const before = events[i - 1]
    if (event.type !== 'user/message' || source?.compactionId !== FIXTURE_COMPACTION_ID || before?.type !== 'tool/call') return
    found.set((before.data as { callId: string }).callId, event)
  })
  return found
}

/** Whether a message is such a fixture compaction (its source). */
export function isFixtureCompaction(source: { kind: string; compactionId?: string }): boolean {
  return source.compactionId === FIXTURE_COMPACTION_ID
}

/** What `append` gets for a recorded message: its data (a fresh id) and its options. */
export function appendArgs(recorded: SessionEvent): [data: UserMessage, options: AppendOptions] {
  return [{ ...(recorded.data as UserMessage), id: crypto.randomUUID() }, {
    ...(recorded.surfaceOp !== undefined ? { surfaceOp: recorded.surfaceOp } : {}),
    ...(recorded.sourceEventSeqs !== undefined ? { sourceEventSeqs: recorded.sourceEventSeqs } : {}),
  }]
}

/**
 * Writes the plugin the protocol suite loads as a patch row (`name` = the file's path): on
 * `tools/execute` of a recorded call it appends the recorded message, then runs the tool.
 */
export function writeFixtureCompactionPlugin(folder: string, compactions: ReadonlyMap<string, SessionEvent>): string {
  const file = join(folder, 'fixture-compaction.mjs')
  const messages = Object.fromEntries([...compactions].map(([callId, event]) => [callId, appendArgs(event)]))
  writeFileSync(file, [
    `const messages = ${JSON.stringify(messages)}`,
    'export default {',
    "  name: 'replay-fixture-compaction',",
    '  apply(ctx) {',
    "    ctx.on('tools/execute', (execution, context, next) => {",
    '      const recorded = messages[execution.callId]',
    "      if (recorded !== undefined) context.session?.append('user/message', { ...recorded[0], id: crypto.randomUUID() }, recorded[1])",
    '      return next()',
    '    })',
    '  },',
    '}',
    '',
  ].join('\n'))
  return file
}
