/**
 * The host Inspect providers (`cordis_inspect_list`, `cordis_inspect_query`): read-only answers
 * about what a host half can use, from the catalogue in `./api.ts` and the calling agent's tool
 * list. There is no Client platform here (no browser page on ACP, headless or SDK).
 */
import type { JsonValue } from '../session/types.js'
import type { Tool } from '../tools/api.js'
import { BUILTINS, EVENTS, SERVICES, type ServiceDoc } from './api.js'

const NAME_INPUT = (key: string, what: string) => ({
  type: 'object', additionalProperties: false,
  properties: { [key]: { type: 'string', description: `Exact ${what}; omit it for the compact directory.` } },
})

/** Host providers, as `cordis_inspect_list` reports them. */
export const PROVIDERS = [
  {
    platform: 'host', provider: 'Service',
    purpose: 'Services a host half can use through ctx.get(key) or inject: [key], with their exact methods.',
    methods: [{ name: 'listService', description: 'Without input: every service with its method signatures. With {service}: its contract (access expressions, methods, parameters, returns).', inputSchema: NAME_INPUT('service', 'service key'), outputSchema: { type: 'object', description: '{mode: "directory", services} or {mode: "service", service, referencedTypes}' } }],
  },
  {
    platform: 'host', provider: 'Event',
    purpose: 'Events a host half can listen to with ctx.on(name, listener), with their dispatch modes.',
    methods: [{ name: 'listEvents', description: 'Without input: every event with its mode and signature. With {event}: its contract.', inputSchema: NAME_INPUT('event', 'event name'), outputSchema: { type: 'object', description: '{mode: "directory", events} or {mode: "event", event, referencedTypes}' } }],
  },
  {
    platform: 'host', provider: 'Builtin',
    purpose: 'Globals and ctx members of the host half scope (harness.defineTool, ctx.on, timers, console) and what is absent.',
    methods: [{ name: 'listBuiltins', description: 'Every builtin with its signature and description; {name} for one.', inputSchema: NAME_INPUT('name', 'builtin name'), outputSchema: { type: 'object', description: '{mode: "builtins", builtins}' } }],
  },
  {
    platform: 'host', provider: 'Tool',
    purpose: 'Model tools the calling agent sees now (a host half may register more with ctx.tools.register).',
    methods: [{ name: 'listTools', description: 'Without input: tool names with the first sentence of their descriptions. With {tool}: its full schema.', inputSchema: NAME_INPUT('tool', 'tool name'), outputSchema: { type: 'object', description: '{mode: "directory", tools} or {mode: "tool", tool}' } }],
  },
] as const

export const CLIENT_ABSENT = 'No browser page is connected to this dsh process (ACP, headless and SDK surfaces have none): there are no Client providers, and a Client half cannot start here.'

export function inspectList(): JsonValue {
  return { providers: PROVIDERS as unknown as JsonValue, client: { status: 'absent', note: CLIENT_ABSENT } }
}

export class InspectError extends Error {}

function serviceContract(service: ServiceDoc): JsonValue {
  return {
    key: service.key,
    description: service.description,
    access: {
      optional: { expression: `ctx.get(${JSON.stringify(service.key)})`, requiresUndefinedCheck: true },
      hardDependency: { inject: [service.key], expression: `ctx.${service.key}` },
    },
    methods: service.methods.map((method) => ({ ...method, parameters: method.parameters.map((p) => ({ ...p })) })),
  }
}

function firstSentence(text: string): string {
  const match = /^(.*?[.!?])(\s|$)/s.exec(text)
  return (match?.[1] ?? text).slice(0, 240)
}

function field(input: unknown, key: string): string | undefined {
  if (input === undefined || input === null) return undefined
  if (typeof input !== 'object' || Array.isArray(input)) throw new InspectError(`input must be an object like {"${key}": "..."} or omitted`)
  const value = (input as Record<string, unknown>)[key]
  const extra = Object.keys(input).find((name) => name !== key)
  if (extra !== undefined) throw new InspectError(`input has no field "${extra}"; this method takes only {"${key}"}`)
  if (value === undefined) return undefined
  if (typeof value !== 'string') throw new InspectError(`input.${key} must be a string`)
  return value
}

/** The `data` of one query; throws `InspectError` with a readable message. */
export function inspectQuery(provider: string, method: string, input: unknown, tools: readonly Tool[]): JsonValue {
  const known = PROVIDERS.find((entry) => entry.provider === provider)
  if (known === undefined) throw new InspectError(`no host provider "${provider}"; providers: ${PROVIDERS.map((p) => p.provider).join(', ')} (cordis_inspect_list)`)
  if (!known.methods.some((entry) => entry.name === method)) throw new InspectError(`provider ${provider} has no method "${method}"; it has ${known.methods.map((m) => m.name).join(', ')}`)
  switch (provider) {
    case 'Service': {
      const key = field(input, 'service')
      if (key === undefined) return { mode: 'directory', services: SERVICES.map((s) => ({ key: s.key, description: s.description, methods: s.methods.map((m) => m.signature) })) }
      const service = SERVICES.find((s) => s.key === key)
      if (service === undefined) throw new InspectError(`no service "${key}" is available to dynamic plugins; available: ${SERVICES.map((s) => s.key).join(', ')}`)
      return { mode: 'service', service: serviceContract(service), referencedTypes: [] }
    }
    case 'Event': {
      const name = field(input, 'event')
      if (name === undefined) return { mode: 'directory', events: EVENTS.map((e) => ({ name: e.name, mode: e.mode, signature: e.signature })) }
      const event = EVENTS.find((e) => e.name === name)
      if (event === undefined) throw new InspectError(`event "${name}" is not available to dynamic plugins; available: ${EVENTS.map((e) => e.name).join(', ')}`)
      return { mode: 'event', event: { name: event.name, description: event.description, mode: event.mode, signature: event.signature, parameters: event.parameters.map((p) => ({ ...p })) }, referencedTypes: [] }
    }
    case 'Builtin': {
      const name = field(input, 'name')
      const builtins = name === undefined ? BUILTINS : BUILTINS.filter((b) => b.name === name)
      if (builtins.length === 0) throw new InspectError(`no builtin "${name}"; builtins: ${BUILTINS.map((b) => b.name).join(', ')}`)
      return { mode: 'builtins', builtins: builtins.map((b) => ({ ...b })) }
    }
    default: {
      const name = field(input, 'tool')
      if (name === undefined) return { mode: 'directory', tools: tools.map((t) => ({ name: t.name, description: firstSentence(t.description) })) }
      const tool = tools.find((t) => t.name === name)
      if (tool === undefined) throw new InspectError(`this agent sees no tool "${name}"`)
      return { mode: 'tool', tool: JSON.parse(JSON.stringify({ name: tool.name, description: tool.description, parameters: tool.parameters })) as JsonValue }
    }
  }
}
