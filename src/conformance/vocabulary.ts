/**
 * The extra event vocabulary the recorded corpus uses: product plugins (approval, sandbox,
 * hooks, code mode, subagents, goals, workflow, commands, LLM titles) that dsh does not ship
 * yet. Registering them here, with shape checks taken from the recorded data, keeps S-3 strict:
 * any type not listed (and not registered by a loaded plugin) still refuses to load.
 *
 * A type some loaded plugin already registered is left alone, so the owner's validator wins.
 */
import type { Context } from 'cordis'
import type { EventDataValidator } from '../session/types.js'

type Field = 'string' | 'number' | 'boolean' | 'object' | 'array' | 'any'
/** Required fields; a trailing `?` on a name makes it optional. Extra fields are tolerated. */
type Shape = Readonly<Record<string, Field>>

function kindOf(value: unknown): Field {
  if (Array.isArray(value)) return 'array'
  if (value === null) return 'any'
  const type = typeof value
  return type === 'string' || type === 'number' || type === 'boolean' || type === 'object' ? type : 'any'
}

export function shapeValidator(shape: Shape): EventDataValidator {
  const fields = Object.entries(shape).map(([key, field]) => ({ key: key.replace(/\?$/, ''), optional: key.endsWith('?'), field }))
  return (data) => {
    if (data === null || typeof data !== 'object' || Array.isArray(data)) return 'data must be an object'
    const record = data as Record<string, unknown>
    for (const { key, optional, field } of fields) {
      if (!Object.hasOwn(record, key)) {
        if (optional) continue
        return `data.${key} is missing`
      }
      if (field !== 'any' && kindOf(record[key]) !== field) return `data.${key} must be ${field === 'array' ? 'an array' : `a ${field}`}`
    }
    return null
  }
}

/** Owner plugin (for error messages) and data shape of every extra type. */
export const CONFORMANCE_VOCABULARY: Readonly<Record<string, { readonly owner: string; readonly shape: Shape }>> = {
  'approval/policy': { owner: 'approval', shape: { policy: 'string', 'source?': 'string' } },
  'approval/asked': { owner: 'approval', shape: { id: 'string', callId: 'string', toolName: 'string', 'reason?': 'string' } },
  'approval/decided': { owner: 'approval', shape: { id: 'string', outcome: 'string' } },
  'sandbox/mode': { owner: 'sandbox', shape: { mode: 'string', 'source?': 'string' } },
  'permission/preset': { owner: 'permission', shape: { preset: 'string' } },
  'command/run': { owner: 'commands', shape: { commandId: 'string', name: 'string', 'args?': 'string', 'source?': 'object' } },
  'command/done': { owner: 'commands', shape: { commandId: 'string', kind: 'string', 'text?': 'string' } },
  'hook/invoked': { owner: 'hooks', shape: { handlerId: 'string', point: 'string', dialect: 'string', 'matcher?': 'string', 'turn?': 'number' } },
  'hook/result': { owner: 'hooks', shape: { decision: 'string', durationMs: 'number', 'handlerId?': 'string', 'point?': 'string', 'exitCode?': 'number', 'turn?': 'number' } },
  'tool/code-dispatch-start': { owner: 'code-mode', shape: { rootCallId: 'string', parentCallId: 'string', subCallId: 'string', name: 'string', arguments: 'any' } },
  'tool/code-dispatch': { owner: 'code-mode', shape: { rootCallId: 'string', parentCallId: 'string', subCallId: 'string', name: 'string', arguments: 'any', content: 'array', isError: 'boolean' } },
  'subagent/descriptor': { owner: 'subagents', shape: { version: 'number', mode: 'string', provider: 'string', 'label?': 'string' } },
  'plan/mode': { owner: 'plan', shape: { active: 'boolean' } },
  'goal/change': { owner: 'goals', shape: { kind: 'string', operation: 'string', version: 'number', 'goal?': 'any' } },
  'tool-workflow/run-start': { owner: 'workflow', shape: { runId: 'string', name: 'string' } },
  'tool-workflow/agent-start': { owner: 'workflow', shape: { runId: 'string', seq: 'number', childId: 'string', 'label?': 'string', 'phase?': 'string' } },
  'tool-workflow/agent-end': { owner: 'workflow', shape: { runId: 'string', seq: 'number', outcome: 'string' } },
  'tool-workflow/run-end': { owner: 'workflow', shape: { runId: 'string', stopReason: 'string' } },
  'session/title-llm-request': { owner: 'session-title', shape: { titleProvider: 'string', messageSeqs: 'array', messages: 'array', 'system?': 'string' } },
}

/** Registers every CONFORMANCE_VOCABULARY type no loaded plugin owns yet. */
export class ConformanceVocabulary {
  static readonly inject = ['sessions']

  constructor(ctx: Context) {
    for (const [type, { owner, shape }] of Object.entries(CONFORMANCE_VOCABULARY)) {
      if (ctx.sessions.eventType(type)) continue
      ctx.sessions.registerEventType({ type, owner, validate: shapeValidator(shape) })
    }
  }
}
