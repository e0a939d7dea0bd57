/**
 * Self-extension (`cordis_*`, docs/extensions.md): the shapes of dynamic plugins and their
 * packages, and the catalogue the Inspect providers answer from. A host half sees a façade, not
 * dsh's services: the catalogue describes exactly what that façade offers (the service methods,
 * the events it may listen to, the globals), so what Inspect says is what plugin code can call.
 *
 * The events' dispatch modes are the `@mode` tags of their declarations in `src/tools/api.ts`
 * and `src/agent/api.ts` (a test reads those files and fails when a mode here drifts).
 */
import type { JsonValue } from '../session/types.js'

/** One immutable version of a plugin's source. */
export interface DynamicPackage {
  readonly packageId: string
  readonly name: string
  readonly purpose: string
  readonly host?: string
  readonly client?: string
  /** Load failures and console output of its runs, newest last (bounded). */
  readonly diagnostics: { readonly runId: string; readonly level: 'log' | 'error'; readonly message: string; readonly stack?: string }[]
}

export type RunStatus = 'running' | 'failed' | 'rejected' | 'stopped'

/** One activation attempt (`run-<n>`). */
export interface DynamicRun {
  readonly pluginRunId: string
  readonly packageId: string
  status: RunStatus
  /** Services the host half provides (none: the façade has no `provide`). */
  readonly provides: readonly string[]
  /** Tools the host half registered while it runs. */
  readonly tools: string[]
  /** Disposes the run's fiber (every registration, listener and timer). */
  stop?: () => Promise<void>
}

export interface DynamicPlugin {
  readonly pluginId: string
  /** The session that defined it (inspect and run see only their own session's plugins). */
  readonly sessionId: string
  readonly packages: DynamicPackage[]
  currentPackageId?: string
  nextPackageId?: string
  activeRun?: DynamicRun
  lastRun?: DynamicRun
}

/** A method of a façade service, as Inspect reports it. */
export interface MethodDoc {
  readonly signature: string
  readonly description: string
  readonly parameters: readonly { readonly name: string; readonly description: string }[]
  readonly returns: string
}

export interface ServiceDoc {
  readonly key: string
  readonly description: string
  readonly methods: readonly MethodDoc[]
}

export interface EventDoc {
  readonly name: string
  readonly description: string
  /** Cordis dispatch mode: how listeners' results combine. */
  readonly mode: 'emit' | 'waterfall' | 'serial'
  readonly signature: string
  readonly parameters: readonly { readonly name: string; readonly description: string }[]
}

export interface BuiltinDoc {
  readonly name: string
  readonly signature: string
  readonly description: string
}

const SCOPED = 'Scope-filtered dispatch: a dynamic plugin listens through its agent\'s context, so it receives only that agent\'s (and its subagents\') dispatches.'

/** Services a host half can reach through `ctx.get(key)` or `inject: [key]`. */
export const SERVICES: readonly ServiceDoc[] = [
  {
    key: 'tools',
    description: 'The calling agent\'s view of the tool registry. Tools registered here are visible to this agent (and its subagents) only, join its next model request, and leave when the plugin is stopped or undefined.',
    methods: [
      {
        signature: 'register(definition: DynamicToolDefinition): () => void',
        description: 'Register a model tool for this agent. The definition is what harness.defineTool returns (or the same plain object). A name another tool of this agent already has fails. The registration belongs to the plugin\'s fiber: stop, update and undefine remove it.',
        parameters: [{ name: 'definition', description: '{name, description, parameters, execute(args, call), output?: {render(args, value)}}; see Builtin.listBuiltins harness.defineTool.' }],
        returns: 'the disposer that unregisters the tool.',
      },
      {
        signature: 'list(): string[]',
        description: 'Names of the tools this agent sees now (built-in, MCP and dynamic), sorted.',
        parameters: [],
        returns: 'a fresh array of names.',
      },
      {
        signature: 'schema(name: string): {name, description, parameters} | undefined',
        description: 'The model-facing schema of one visible tool (a deep copy).',
        parameters: [{ name: 'name', description: 'the tool name as listed.' }],
        returns: 'the schema, or undefined when this agent sees no such tool.',
      },
    ],
  },
]

/** Events a host half may listen to with `ctx.on(name, listener)`; any other name is refused. */
export const EVENTS: readonly EventDoc[] = [
  {
    name: 'tools/pre-execute', mode: 'waterfall',
    description: `Policy before a tool call runs. Return \`next()\` to pass, \`{kind:'deny', reason, message?}\` to refuse (message is the whole error text), or \`{kind:'ask', reason}\` to ask the user through approval (fails closed without it). ${SCOPED}`,
    signature: "'tools/pre-execute'(execution: {callId, name, arguments}, next: () => Promise<PreExecuteDecision>): Promise<PreExecuteDecision>",
    parameters: [{ name: 'execution', description: 'the pending call: callId, tool name and the raw argument string (JSON).' }, { name: 'next', description: 'the rest of the chain; its decision is the default.' }],
  },
  {
    name: 'tools/post-execute', mode: 'waterfall',
    description: `Rewrite a finished result before it is committed: return \`next()\` or a record {content, isError, meta?}. ${SCOPED}`,
    signature: "'tools/post-execute'(execution: {callId, name, arguments}, record: {content, isError, meta?}, next: () => Promise<record>): Promise<record>",
    parameters: [{ name: 'execution', description: 'the call.' }, { name: 'record', description: 'the result as it stands.' }],
  },
  {
    name: 'tools/result', mode: 'emit',
    description: `A tool result was committed (observe only; a throwing listener is logged and ignored). ${SCOPED}`,
    signature: "'tools/result'(execution: {callId, name, arguments}, record: {content, isError, meta?}): void",
    parameters: [{ name: 'execution', description: 'the call.' }, { name: 'record', description: 'the committed result.' }],
  },
  {
    name: 'agent/status', mode: 'emit',
    description: `The agent's public status changed (\`running\` while a turn is open, else \`idle\`). ${SCOPED}`,
    signature: "'agent/status'(agent: {id}, status: 'idle' | 'running'): void",
    parameters: [{ name: 'agent', description: 'the agent; read only agent.id.' }, { name: 'status', description: 'the new status.' }],
  },
  {
    name: 'agent/turn-end', mode: 'emit',
    description: `A turn closed (its turn/end is in the log). ${SCOPED}`,
    signature: "'agent/turn-end'(agent: {id}, turn: number, reason: {kind}): void",
    parameters: [{ name: 'agent', description: 'the agent; read only agent.id.' }, { name: 'turn', description: 'the turn number.' }, { name: 'reason', description: 'why it ended (completed, aborted, error, ...).' }],
  },
  {
    name: 'agent/turn-stopping', mode: 'serial',
    description: `The turn would end with nothing queued; \`payload.steer(text)\` queues input and the turn goes on. Return nothing. ${SCOPED}`,
    signature: "'agent/turn-stopping'(payload: {turn: number, steer(input: string): void}): Promise<void>",
    parameters: [{ name: 'payload', description: 'the turn number and steer().' }],
  },
]

/** The globals and `ctx` members of a host half. */
export const BUILTINS: readonly BuiltinDoc[] = [
  { name: 'harness.defineTool', signature: 'harness.defineTool(definition: {name, description, parameters, execute(args, call), output?: {schema?, render?(args, value)}}): DynamicToolDefinition', description: 'Check and freeze a tool definition. `parameters` is a JSON Schema object ({type:"object", properties, required}) or a compact map {field: {type, description?, required?}}. `execute` returns the value a run_code program receives (JSON); the model sees `output.render(args, value)` blocks ([{type:"text", text}]) when given, else the value as text (strings as they are, anything else as 2-space JSON). A throw becomes an error result.' },
  { name: 'harness.registerTool', signature: 'harness.registerTool(ctx, definition): () => void', description: 'Same as ctx.tools.register(definition), without declaring the tools service.' },
  { name: 'harness.handle', signature: 'harness.handle(method: string, handler: (args: JsonValue) => JsonValue): () => void', description: 'A Package-private JSON method for the Client half. dsh surfaces without a browser page (ACP, headless, SDK) never call it.' },
  { name: 'ctx.on', signature: 'ctx.on(event: string, listener): () => void', description: 'Listen to one of the events Event.listEvents lists; other names throw. Removed with the plugin.' },
  { name: 'ctx.effect', signature: 'ctx.effect(setup: () => () => void): () => void', description: 'Run setup now; the disposer it returns runs when the plugin stops.' },
  { name: 'ctx.get', signature: 'ctx.get(key: string): Service | undefined', description: 'An optional service (see Service.listService); undefined for any other key.' },
  { name: 'ctx.setTimeout', signature: 'ctx.setTimeout(callback: () => void, ms: number): () => void', description: 'A timer owned by the plugin (cleared when it stops). The global setTimeout is absent.' },
  { name: 'ctx.setInterval', signature: 'ctx.setInterval(callback: () => void, ms: number): () => void', description: 'A repeating timer owned by the plugin (cleared when it stops).' },
  { name: 'console.log / console.error', signature: 'console.log(...values): void', description: 'Recorded in the Package diagnostics (cordis_inspect_self with pluginId and packageId), not printed.' },
  { name: 'absent', signature: 'require, import, process, Buffer, fetch, setTimeout, setInterval', description: 'Not available: reading one throws an error naming the replacement. The code runs in the dsh process in a separate global scope; this prevents accidents, it is not a security boundary.' },
]

/** The value of `cordis_run`. */
export interface RunValue {
  readonly status: string
  readonly pluginId: string
  readonly packageId: string
  readonly pluginRunId: string
  readonly currentPackageId?: string
  readonly host: { readonly status: string; readonly provides: readonly string[]; readonly waitingFor: readonly string[]; readonly error?: string }
  readonly client: { readonly status: string; readonly waitingFor: readonly string[] }
  readonly [key: string]: JsonValue | undefined
}
