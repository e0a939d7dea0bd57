/**
 * Self-extension (docs/extensions.md): the seven `cordis_*` tools. The model defines immutable
 * packages of plugin source under a plugin id, runs one (its host half loads into the calling
 * agent's fiber, `./host.ts`), inspects what it may use (`./inspect.ts`) and what it defined,
 * stops and removes them. Definitions live in this process's memory, per session: a restarted
 * or resumed session finds them gone, is told so, and nothing is ever re-run by itself.
 *
 * Running a host half puts model-written code into the dsh process: under an asking approval
 * policy it is an approval request (`ctx.approval`); under `never` it runs as recorded.
 */
import type { Context } from 'cordis'
import type { Agent } from '../agent/api.js'
import type { ApprovalService } from '../approval/api.js'
import type { Session } from '../session/api.js'
import type { JsonValue } from '../session/types.js'
import type { Tool, ToolContext, ToolOutput } from '../tools/api.js'
import { ToolError } from '../tools/errors.js'
import type { DynamicPackage, DynamicPlugin, DynamicRun } from './api.js'
import { CLIENT_ABSENT, InspectError, inspectList, inspectQuery } from './inspect.js'
import {
  approvalReason, awaitingText, CORDIS_OUTPUT_TYPES, CORDIS_SECTION, CORDIS_SECTION_ORDER, CORDIS_SECTION_TEXT, CORDIS_TOOL_NAMES, CORDIS_TOOLS,
  definedText, differsFromCurrent, lostNotice, packageWithoutPlugin, rejectedText, removedText, runningText, stoppedText,
  unavailableText, unknownPackage, unknownPlugin, updateWithoutCurrent, type CordisToolName,
} from './texts.js'

export interface CordisDynamicConfig {
  /** Limit of the synchronous part of each entry into plugin code (default 5000 ms). */
  readonly vmTimeoutMs?: number
}

type Args = Record<string, unknown>

const PREFIX = /^[a-z]{3,6}$/
const MAX_DIAGNOSTICS = 50
const DEFINE_TEXT = /^Defined ([a-z]{3,6}-\d+)\//
const REMOVED_TEXT = /^Removed dynamic Plugin ([a-z]{3,6}-\d+) /

/** The message of an error from any realm (model code throws its vm's own Error objects). */
export function messageOf(error: unknown): string {
  if (typeof error === 'object' && error !== null && typeof (error as { message?: unknown }).message === 'string') return (error as { message: string }).message
  return String(error)
}

function stackOf(error: unknown): string | undefined {
  const stack = typeof error === 'object' && error !== null ? (error as { stack?: unknown }).stack : undefined
  return typeof stack === 'string' ? stack : undefined
}

function fail(message: string, code = 'CORDIS_FAILED'): never {
  throw new ToolError(message, code)
}

function str(args: Args, key: string, tool: string, optional = false): string | undefined {
  const value = args[key]
  if (value === undefined && optional) return undefined
  if (typeof value !== 'string' || value === '') fail(`${tool}: ${key} must be a non-empty string`, 'INVALID_ARGUMENTS')
  return value
}

const json = (value: unknown) => JSON.stringify(value, null, 2)
const output = (text: string, value: JsonValue, meta?: JsonValue): ToolOutput =>
  ({ content: [{ type: 'text', text }], value, ...(meta !== undefined ? { meta } : {}) })

export class CordisDynamicPlugin {
  static readonly inject = ['tools']

  private readonly plugins = new Map<string, DynamicPlugin>()
  private readonly prefixes = new Map<string, number>()
  private packages = 0
  private runs = 0
  private readonly timeoutMs: number

  constructor(private readonly ctx: Context, config: CordisDynamicConfig = {}) {
    this.timeoutMs = config.vmTimeoutMs ?? 5000
    for (const name of CORDIS_TOOL_NAMES) ctx.effect(() => ctx.tools.register(this.tool(name)))
    ctx.inject(['systemPrompt'], (inner) => {
      inner.systemPrompt.section({ name: CORDIS_SECTION, order: CORDIS_SECTION_ORDER, text: CORDIS_SECTION_TEXT })
    })
    // An agent's fiber took its runs with it: they are stopped, their definitions stay.
    ctx.on('agent/disposed', (agent) => {
      for (const plugin of this.plugins.values()) {
        if (plugin.sessionId !== agent.id || plugin.activeRun === undefined) continue
        plugin.activeRun.status = 'stopped'
        plugin.lastRun = plugin.activeRun
        plugin.activeRun = undefined
      }
    })
    // Unloading the plugin stops every run it started (their fibers are children of the agents').
    ctx.effect(() => async () => {
      const plugins = [...this.plugins.values()]
      this.plugins.clear()
      for (const plugin of plugins) await this.halt(plugin)
    })
  }

  private tool(name: CordisToolName): Tool<Args> {
    const { description, parameters } = CORDIS_TOOLS[name]
    const outputType = CORDIS_OUTPUT_TYPES[name]
    const readOnly = name.startsWith('cordis_inspect_')
    return {
      name, description, parameters,
      ...(outputType !== undefined ? { outputType } : {}),
      parse: (args: unknown) => {
        if (typeof args !== 'object' || args === null || Array.isArray(args)) throw new TypeError('arguments must be a JSON object')
        return args as Args
      },
      isConcurrencySafe: () => readOnly,
      execute: (args, context) => this.execute(name, args, context),
    }
  }

  private execute(name: CordisToolName, args: Args, context: ToolContext): Promise<ToolOutput> | ToolOutput {
    switch (name) {
      case 'cordis_define': return this.define(args, context)
      case 'cordis_run': return this.run(args, context)
      case 'cordis_stop': return this.stop(args, context)
      case 'cordis_undefine': return this.undefine(args, context)
      case 'cordis_inspect_self': return this.inspectSelf(args, context)
      case 'cordis_inspect_list': {
        const value = inspectList()
        return output(json(value), value)
      }
      case 'cordis_inspect_query': return this.query(args, context)
    }
  }

  private sessionId(context: ToolContext): string {
    return context.session?.id ?? ''
  }

  /**
   * Plugin ids this session's log shows defined and not removed (define and undefine results,
   * direct or from a program) that this process does not hold: lost with an earlier process.
   */
  private lost(session: Session | undefined): string[] {
    if (session === undefined) return []
    const ids = new Set<string>()
    for (const event of session.events) {
      let text: string | undefined
      if (event.type === 'tool/result') {
        const part = (event.data as { message?: { content?: { content?: { text?: string }[]; isError?: boolean }[] } }).message?.content?.[0]
        if (part?.isError !== true) text = part?.content?.[0]?.text
      } else if (event.type === 'tool/code-dispatch' && (event.data as { isError?: boolean }).isError !== true) {
        text = ((event.data as { content?: { text?: string }[] }).content ?? [])[0]?.text
      }
      if (text === undefined) continue
      const defined = DEFINE_TEXT.exec(text)
      if (defined !== null) ids.add(defined[1]!)
      const removed = REMOVED_TEXT.exec(text)
      if (removed !== null) ids.delete(removed[1]!)
    }
    return [...ids].filter((id) => this.plugins.get(id)?.sessionId !== session.id).sort()
  }

  private plugin(pluginId: string, context: ToolContext): DynamicPlugin {
    const plugin = this.plugins.get(pluginId)
    if (plugin !== undefined && plugin.sessionId === this.sessionId(context)) return plugin
    const lost = this.lost(context.session).includes(pluginId)
    fail(lost ? `${unknownPlugin(pluginId)}. It was defined earlier in this session; definitions live in process memory and are not restored — define it again.` : unknownPlugin(pluginId), 'UNKNOWN_PLUGIN')
  }

  private define(args: Args, context: ToolContext): Promise<ToolOutput> | ToolOutput {
    const tool = 'cordis_define'
    const target = args.plugin as { kind?: unknown; idPrefix?: unknown; pluginId?: unknown } | undefined
    const name = str(args, 'name', tool)!
    const purpose = str(args, 'purpose', tool)!
    const code = args.code as { host?: unknown; client?: unknown } | undefined
    if (typeof code !== 'object' || code === null || Array.isArray(code)) fail(`${tool}: code must be an object {host?, client?}`, 'INVALID_ARGUMENTS')
    const extra = Object.keys(code).find((key) => key !== 'host' && key !== 'client')
    if (extra !== undefined) fail(`${tool}: code has no field "${extra}"; use code.host and/or code.client`, 'INVALID_ARGUMENTS')
    for (const half of ['host', 'client'] as const) {
      if (code[half] !== undefined && typeof code[half] !== 'string') fail(`${tool}: code.${half} must be a string (a plain JavaScript function body)`, 'INVALID_ARGUMENTS')
    }
    const host = code.host as string | undefined
    const client = code.client as string | undefined
    if (host === undefined && client === undefined) fail(`${tool}: provide at least one of code.host and code.client`, 'INVALID_ARGUMENTS')
    let plugin: DynamicPlugin | undefined
    let pluginId: string
    if (target?.kind === 'new') {
      if (typeof target.idPrefix !== 'string' || !PREFIX.test(target.idPrefix)) fail(`${tool}: plugin.idPrefix must be 3–6 lowercase English letters (a–z), got ${JSON.stringify(target.idPrefix)}`, 'INVALID_ARGUMENTS')
      pluginId = `${target.idPrefix}-${(this.prefixes.get(target.idPrefix) ?? 0) + 1}`
    } else if (target?.kind === 'existing') {
      if (typeof target.pluginId !== 'string') fail(`${tool}: plugin.pluginId must be a string`, 'INVALID_ARGUMENTS')
      plugin = this.plugin(target.pluginId, context)
      pluginId = plugin.pluginId
    } else {
      fail(`${tool}: plugin must be {kind: "new", idPrefix} or {kind: "existing", pluginId}`, 'INVALID_ARGUMENTS')
    }
    const packageId = `pkg-${this.packages + 1}`
    // Define only compiles: a syntax error is the model's to fix, nothing runs.
    return this.compiled(pluginId, packageId, host, client, () => {
      if (plugin === undefined) {
        const prefix = pluginId.slice(0, pluginId.lastIndexOf('-'))
        this.prefixes.set(prefix, (this.prefixes.get(prefix) ?? 0) + 1)
        plugin = { pluginId, sessionId: this.sessionId(context), packages: [] }
        this.plugins.set(pluginId, plugin)
      }
      this.packages++
      const pkg: DynamicPackage = { packageId, name, purpose, ...(host !== undefined ? { host } : {}), ...(client !== undefined ? { client } : {}), diagnostics: [] }
      plugin.packages.push(pkg)
      const value = { pluginId, packageId, name, purpose, hasHostHalf: host !== undefined, hasClientHalf: client !== undefined }
      return output(definedText(pluginId, packageId, name), value, { pluginId, packageId })
    })
  }

  private compiled(pluginId: string, packageId: string, host: string | undefined, client: string | undefined, then: () => ToolOutput): Promise<ToolOutput> | ToolOutput {
    return import('./host.js').then(({ compileCheck }) => {
      for (const [half, source] of [['host', host], ['client', client]] as const) {
        if (source === undefined) continue
        try {
          compileCheck(source, `cordis:${pluginId}/${packageId}/${half}.js`)
        } catch (error) {
          fail(`cordis_define: code.${half} does not compile as a plain JavaScript function body: ${messageOf(error)} (no TypeScript, JSX or import)`, 'INVALID_ARGUMENTS')
        }
      }
      return then()
    })
  }

  private agent(context: ToolContext): Agent {
    const agents = this.ctx.get('agents') as { get(id: string): Agent | undefined } | undefined
    const agent = context.session === undefined ? undefined : agents?.get(context.session.id)
    if (agent === undefined) fail('cordis_run: a host half runs inside a live agent, and this call has none', 'NO_AGENT')
    return agent
  }

  private async run(args: Args, context: ToolContext): Promise<ToolOutput> {
    const tool = 'cordis_run'
    const plugin = this.plugin(str(args, 'pluginId', tool)!, context)
    const packageId = str(args, 'packageId', tool)!
    const mode = args.mode
    if (mode !== 'run' && mode !== 'update') fail(`${tool}: mode must be "run" or "update"`, 'INVALID_ARGUMENTS')
    const pkg = plugin.packages.find((entry) => entry.packageId === packageId) ?? fail(unknownPackage(plugin.pluginId, packageId), 'UNKNOWN_PACKAGE')
    const current = plugin.currentPackageId
    if (mode === 'run' && current !== undefined && current !== packageId) fail(differsFromCurrent(packageId, current), 'PACKAGE_NOT_CURRENT')
    if (mode === 'update' && current === undefined) fail(updateWithoutCurrent(plugin.pluginId), 'NO_CURRENT_PACKAGE')
    const pluginRunId = `run-${++this.runs}`
    plugin.nextPackageId = packageId
    // A restart or an update stops the old run first; a failure does not bring it back.
    await this.halt(plugin)
    const run: DynamicRun = { pluginRunId, packageId, status: 'running', provides: [], tools: [] }
    const ids = { pluginId: plugin.pluginId, packageId, pluginRunId }
    const session = context.session
    if (pkg.host !== undefined && session !== undefined) {
      const approval = this.ctx.get('approval') as ApprovalService | undefined
      if (approval !== undefined && approval.policy(session) === 'ask') {
        const outcome = await approval.request({ session, toolName: tool, callId: context.callId, reason: approvalReason(plugin.pluginId, packageId, pkg.name), arguments: JSON.stringify(args), signal: context.signal })
        if (outcome !== 'allowed-once' && outcome !== 'allowed-session' && outcome !== 'allowed-always') {
          run.status = 'rejected'
          plugin.lastRun = run
          fail(outcome === 'unavailable' ? unavailableText(plugin.pluginId, packageId) : rejectedText(plugin.pluginId, packageId), 'APPROVAL_REJECTED')
        }
      }
    }
    let hostStatus = 'absent'
    if (pkg.host !== undefined) {
      const agent = this.agent(context)
      const { loadHostHalf } = await import('./host.js')
      const note = (level: 'log' | 'error', message: string, stack?: string) => {
        pkg.diagnostics.push({ runId: pluginRunId, level, message, ...(stack !== undefined ? { stack } : {}) })
        if (pkg.diagnostics.length > MAX_DIAGNOSTICS) pkg.diagnostics.shift()
      }
      try {
        const loaded = await loadHostHalf({ source: pkg.host, agentCtx: agent.ctx, label: `${plugin.pluginId}/${packageId}`, timeoutMs: this.timeoutMs, log: note })
        Object.assign(run, { tools: loaded.tools, stop: loaded.stop })
        hostStatus = 'running'
      } catch (error) {
        const message = messageOf(error)
        note('error', message, stackOf(error))
        run.status = 'failed'
        plugin.lastRun = run
        fail(`${plugin.pluginId}/${packageId} failed to start (${pluginRunId}): ${message}. Everything it registered was removed; read its diagnostics with cordis_inspect_self({pluginId, packageId}), then define a corrected Package under the same Plugin.`, 'PLUGIN_FAILED')
      }
    }
    plugin.activeRun = run
    const clientPending = pkg.client !== undefined
    if (!clientPending) {
      plugin.currentPackageId = packageId
      plugin.nextPackageId = undefined
    }
    const status = clientPending ? 'awaiting-approval' : 'running'
    const value = {
      status, ...ids, ...(plugin.currentPackageId !== undefined ? { currentPackageId: plugin.currentPackageId } : {}),
      host: { status: hostStatus, provides: [...run.provides], waitingFor: [] },
      client: clientPending ? { status: 'awaiting-approval', waitingFor: ['browser page'] } : { status: 'absent', waitingFor: [] },
    }
    const text = clientPending ? `${awaitingText(plugin.pluginId, packageId, pluginRunId)}\n${CLIENT_ABSENT}` : runningText(plugin.pluginId, packageId, pluginRunId)
    return output(text, value, ids)
  }

  /** Stops the active run, if any (its fiber and every registration). */
  private async halt(plugin: DynamicPlugin): Promise<boolean> {
    const active = plugin.activeRun
    if (active === undefined) return false
    plugin.activeRun = undefined
    await active.stop?.()
    active.status = 'stopped'
    plugin.lastRun = active
    return true
  }

  private async stop(args: Args, context: ToolContext): Promise<ToolOutput> {
    const plugin = this.plugin(str(args, 'pluginId', 'cordis_stop')!, context)
    await this.halt(plugin)
    return output(stoppedText(plugin.pluginId), { pluginId: plugin.pluginId })
  }

  private async undefine(args: Args, context: ToolContext): Promise<ToolOutput> {
    const plugin = this.plugin(str(args, 'pluginId', 'cordis_undefine')!, context)
    const wasRunning = await this.halt(plugin)
    this.plugins.delete(plugin.pluginId)
    return output(removedText(plugin.pluginId), { pluginId: plugin.pluginId, wasRunning })
  }

  private state(plugin: DynamicPlugin): string {
    if (plugin.activeRun !== undefined) return plugin.activeRun.status === 'running' && plugin.nextPackageId === plugin.activeRun.packageId ? 'awaiting-approval' : 'running'
    return plugin.lastRun?.status ?? 'defined'
  }

  private inspectSelf(args: Args, context: ToolContext): ToolOutput {
    const pluginId = str(args, 'pluginId', 'cordis_inspect_self', true)
    const packageId = str(args, 'packageId', 'cordis_inspect_self', true)
    if (packageId !== undefined && pluginId === undefined) fail(packageWithoutPlugin, 'INVALID_ARGUMENTS')
    const lost = this.lost(context.session)
    const notice = lost.length > 0 ? { notice: lostNotice(lost) } : {}
    let value: Record<string, unknown>
    if (pluginId === undefined) {
      const sessionId = this.sessionId(context)
      const plugins = [...this.plugins.values()].filter((plugin) => plugin.sessionId === sessionId).map((plugin) => ({
        pluginId: plugin.pluginId, name: plugin.packages.at(-1)!.name, state: this.state(plugin), packageCount: plugin.packages.length,
        ...(plugin.currentPackageId !== undefined ? { currentPackageId: plugin.currentPackageId } : {}),
      }))
      value = { mode: 'plugins', plugins, ...notice }
    } else {
      const plugin = this.plugin(pluginId, context)
      if (packageId === undefined) {
        const run = plugin.activeRun
        value = {
          mode: 'plugin', pluginId: plugin.pluginId, name: plugin.packages.at(-1)!.name, packageCount: plugin.packages.length, state: this.state(plugin),
          ...(plugin.currentPackageId !== undefined ? { currentPackageId: plugin.currentPackageId } : {}),
          ...(plugin.nextPackageId !== undefined ? { nextPackageId: plugin.nextPackageId } : {}),
          ...(run !== undefined ? { activeRun: { pluginRunId: run.pluginRunId, packageId: run.packageId } } : {}),
          ...(run === undefined && plugin.lastRun !== undefined ? { lastRun: { pluginRunId: plugin.lastRun.pluginRunId, packageId: plugin.lastRun.packageId, status: plugin.lastRun.status } } : {}),
          packages: plugin.packages.map((pkg) => ({
            packageId: pkg.packageId, name: pkg.name, purpose: pkg.purpose, hasHostHalf: pkg.host !== undefined, hasClientHalf: pkg.client !== undefined,
            isCurrent: pkg.packageId === plugin.currentPackageId, isNext: pkg.packageId === plugin.nextPackageId,
          })),
          ...notice,
        }
      } else {
        const pkg = plugin.packages.find((entry) => entry.packageId === packageId) ?? fail(unknownPackage(plugin.pluginId, packageId), 'UNKNOWN_PACKAGE')
        const run = plugin.activeRun?.packageId === packageId ? plugin.activeRun : undefined
        value = {
          mode: 'package', pluginId: plugin.pluginId, packageId, name: pkg.name, purpose: pkg.purpose,
          isCurrent: packageId === plugin.currentPackageId, isNext: packageId === plugin.nextPackageId,
          source: { ...(pkg.host !== undefined ? { host: pkg.host } : {}), ...(pkg.client !== undefined ? { client: pkg.client } : {}) },
          ...(run !== undefined ? { activeRun: { pluginRunId: run.pluginRunId, tools: [...run.tools] } } : {}),
          diagnostics: pkg.diagnostics.map((entry) => ({ ...entry })),
          ...notice,
        }
      }
    }
    return output(json(value), value as JsonValue)
  }

  private query(args: Args, context: ToolContext): ToolOutput {
    const tool = 'cordis_inspect_query'
    const platform = str(args, 'platform', tool)!
    const provider = str(args, 'provider', tool)!
    const method = str(args, 'method', tool)!
    if (platform === 'client') fail(`${tool}: ${CLIENT_ABSENT}`, 'CLIENT_ABSENT')
    if (platform !== 'host') fail(`${tool}: platform must be "host" or "client"`, 'INVALID_ARGUMENTS')
    let data: JsonValue
    try {
      data = inspectQuery(provider, method, args.input, this.ctx.tools.list(context.scope))
    } catch (error) {
      if (error instanceof InspectError) fail(`${tool}: ${error.message}`, 'INVALID_ARGUMENTS')
      throw error
    }
    const value = { platform, provider, method, data }
    return output(json(value), value)
  }
}
