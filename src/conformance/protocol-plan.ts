/**
 * The protocol suite's scenarios and plans: which recorded folders it drives (ACP, SDK, headless
 * streams), what a scenario needs that dsh lacks (a skip, with the reason), and the plan a run
 * follows: the recorded model calls, children, hooks, route and composition facts.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { findScenarioDirs } from './discover.js'
import { basename, dirname, join, relative } from 'node:path'
import { recordedRoute, scriptFromEvents, type ReplayEntry } from '../replay/index.js'
import type { UserMessage } from '../llm/types.js'
import { parseSessionFile } from '../session/codec.js'
import type { SessionEvent } from '../session/types.js'
import { isRuntimeContextSnapshot } from './replay-project.js'
import { driverScript, recordedPermissions, recordedRunner, withOverride } from './replay-plan.js'
import type { HookFileSource } from '../hooks/api.js'
import { fetchedOrigins } from './page-server.js'
import { BUILTIN_TOOLS, CAPABILITIES as REPLAY_CAPABILITIES, CORDIS_TOOL_NAMES, DELEGATION_SOURCES, HOOK_PLUGINS, pwshMissing, recordedPresentation, RUN_CODE } from './replay-rules.js'
import { CODE_MODE_PLUGIN } from '../code-mode/index.js'
import { AGENT_INSTRUCTIONS_SOURCE } from '../instructions/index.js'
import { fixtureCompactions, isFixtureCompaction } from './fixture-compaction.js'
import { workspaceHookFiles } from './workspace.js'
import { isJobNotice, isProductTool, recordedProductRows, type ProductRows } from './product-subagents.js'

/** PRODUCT scenarios run when every tag is one of these (the sandbox and approval product). */
const SUPPORTED_PRODUCT_TAGS = new Set(['sandbox', 'approval', 'fs', 'bash', 'todo'])

/** Event-type prefixes of a recorded log that name a capability dsh lacks (child logs are not driven here). */
const CAPABILITIES: readonly [prefix: string, capability: string][] = [['subagent/', 'subagents'], ...REPLAY_CAPABILITIES]

/** INDEX.md tags of PRODUCT scenarios whose plugins dsh has; a PRODUCT scenario runs when all its tags are here. */
const PRODUCT_TAGS = new Set(['hooks', 'bash', 'protocol', 'todo', 'skill', 'goal', 'cancel', 'web-fetch', 'spill', 'session-query', 'jobs', 'code-mode', 'image', 'workspace-instructions', 'workflow', 'subagent', 'cordis', 'lsp', 'pty', 'subagent-product', 'pwsh'])

export type Kind = 'acp' | 'sdk' | 'headless'

export interface Scenario {
  readonly dir: string
  readonly kind: Kind
}

/** A session log holding its header line alone. */
function headerOnly(path: string): boolean {
  return readFileSync(path, 'utf8').trim().split('\n').length === 1
}

/** ACP scenarios record `stdout.expected.jsonl`; SDK scenarios `notifications.expected.jsonl`. */
export function findScenarios(root: string): Scenario[] {
  return findScenarioDirs<Scenario>(root, (dir, has) =>
    has('stdout.expected.jsonl') ? { dir, kind: 'acp' } : has('notifications.expected.jsonl') ? { dir, kind: 'sdk' }
      // Headless runs recorded only as their stream (override-driven, no session log): run from input.json.
      // A header-only session.jsonl beside it (a Ralph run: the children's scripts are session.N.jsonl) counts as none.
      : has('stream-json.expected.jsonl') && has('input.json') && has('replay.override.json') && (!has('session.jsonl') || headerOnly(join(dir, 'session.jsonl'))) && !has('parent.override.json') ? { dir, kind: 'headless' }
        : undefined,
  { descend: true })
}

export interface Step {
  readonly op: string
  readonly text?: string
  readonly content?: readonly unknown[]
  readonly waitForFile?: { readonly path: string }
  /** promptAndWaitForAgentMessage: the text an `agent_message_chunk` must contain. */
  readonly waitForText?: string
  /** waitForSubagentTurnEnd: the child's number (creation order, 1-based). */
  readonly child?: number
  readonly minimumTurn?: number
  /** waitForEventAfterTurnEnd: the event type. */
  readonly type?: string
}

export interface Plan {
  readonly events: readonly SessionEvent[]
  readonly header: { readonly id: string }
  readonly steps: readonly Step[]
  readonly permissionAnswers: readonly { kind: string }[]
  readonly script: readonly ReplayEntry[]
  readonly route: { provider: string; model: string }
  /** The recorded composition had the runtime-context plugin (its snapshot message is in the log). */
  readonly runtimeContext: boolean
  readonly hooks: readonly HookFileSource[]
  /** Origins the recorded `web_fetch` calls fetch from (the web_fetch row is loaded; a page server answers). */
  readonly fetched: readonly string[]
  /** The recorded deployment's sandbox mode (from its snapshot), passed as DSH_PERMISSION_MODE. */
  readonly permissionMode?: string
  /** How the recording presented tools where it ran programs (`run_code`), passed as DSH_TOOLS_MODE. */
  readonly toolsMode?: 'code' | 'both'
  /** The recording called a `cordis_*` tool (directly or from a program): DSH_CORDIS_TOOLS=1. */
  readonly cordis?: boolean
  /** A test-only runner command for a runner this machine cannot reproduce. */
  readonly runnerCommand?: readonly string[]
  /** Recorded child sessions (ids and model scripts), in creation order. */
  readonly children: readonly { readonly id: string; readonly script: readonly ReplayEntry[] }[]
  readonly maxDepth?: number
  /** The recording delivered a settlement notice to an idle parent: continuable children wait for it (the recorder's fence). */
  readonly fenceChildren: boolean
  /** The recording's fixture compactions (./fixture-compaction.ts), by call id. */
  readonly fixtureCompactions: ReadonlyMap<string, SessionEvent>
  /** The product-subagent tools of the recorded composition (`./product-subagents.ts`). */
  readonly products?: ProductRows
}

/** Corpus classes by scenario path (INDEX.md tables: `| \`path\` | CLASS | tags | ...`), per corpus root. */
const indexes = new Map<string, Map<string, { cls: string; tags: string }>>()

/** The INDEX.md row of a scenario inside a corpus (found in an ancestor folder), if any. */
function indexRow(dir: string): { cls: string; tags: string } | undefined {
  for (let root = dirname(dir); root !== dirname(root); root = dirname(root)) {
    const file = join(root, 'INDEX.md')
    if (!existsSync(file)) continue
    let rows = indexes.get(root)
    if (rows === undefined) {
      rows = new Map()
      for (const match of readFileSync(file, 'utf8').matchAll(/^\| `([^`]+)` \| ([A-Z]+) \| ([^|]*) \|/gm)) rows.set(match[1]!, { cls: match[2]!, tags: match[3]!.trim() })
      indexes.set(root, rows)
    }
    return rows.get(relative(root, dir).split(/[\\/]/).join('/'))
  }
  return undefined
}

/** Why the scenario cannot run here, or its plan. */
export function plan(scenario: Scenario): string | Plan {
  const dir = scenario.dir
  const files = readdirSync(dir)
  if (files.includes('behavior.json')) return 'synthetic fake-agent self-test of the original harness (no runtime to compare)'
  const row = indexRow(dir)
  if (row?.cls === 'PRODUCT' && !row.tags.split(',').every(tag => (SUPPORTED_PRODUCT_TAGS.has(tag.trim()) || PRODUCT_TAGS.has(tag.trim())))) return `missing capability: product plugins (INDEX.md class PRODUCT, tags ${row.tags})`
  // Delegation transcripts whose driver only prompts (foreground children): each child's recorded
  // model calls are served under its recorded id, which the subagents row hands out in order.
  const childFiles = files.filter(name => /^session\.\d+\.jsonl$/.test(name)).sort((x, y) => Number(x.split('.')[1]) - Number(y.split('.')[1]))
  const children: { id: string; script: ReplayEntry[] }[] = []
  if (row?.cls === 'DELEGATION' || childFiles.length > 0) {
    if (childFiles.length === 0) return `missing capability: delegation (INDEX.md class DELEGATION, tags ${row?.tags ?? ''})`
    for (const file of childFiles) {
      const child = parseSessionFile(readFileSync(join(dir, file), 'utf8'))
      children.push({ id: child.header.id, script: scriptFromEvents(child.events.slice(child.header.seedLength ?? 0)) })
    }
  }
  if (!files.includes('session.jsonl')) return 'no recorded session.jsonl to take the model calls from'
  const text = readFileSync(join(dir, 'session.jsonl'), 'utf8')
  const parsed = parseSessionFile(text)
  const events = parsed.events
  const noPwsh = pwshMissing(events)
  if (noPwsh !== undefined) return noPwsh
  for (const event of events) {
    const lacking = CAPABILITIES.find(([prefix]) => event.type.startsWith(prefix))
    if (lacking !== undefined) return `missing capability: ${lacking[1]} (recorded ${event.type})`
    if (event.type === 'tool/call' || event.type === 'tool/code-dispatch-start') {
      const name = (event.data as { name: string }).name
      if (!BUILTIN_TOOLS.has(name) && !isProductTool(name)) return `missing capability: tool ${name}`
    }
    if (event.type === 'user/message') {
      const message = event.data as UserMessage
      const source = message.source as { kind: string; plugin?: string }
      if (message.source.kind !== 'user' && source.kind !== 'skill-catalog' && !DELEGATION_SOURCES.has(source.kind) && !isRuntimeContextSnapshot(message) && !(source.plugin !== undefined && (HOOK_PLUGINS.has(source.plugin) || source.plugin === CODE_MODE_PLUGIN)) && source.kind !== AGENT_INSTRUCTIONS_SOURCE && !isFixtureCompaction(source) && !isJobNotice(message)) {
        return `missing capability: plugin-authored messages (source ${source.plugin ?? source.kind})`
      }
    }
  }
  const driver = driverScript<Step>(dir, files)
  if (typeof driver === 'string') return driver
  if (driver === undefined && scenario.kind === 'acp') return 'no input.json driver script'
  const { steps, answers: permissionAnswers } = driver ?? { steps: [], answers: [] }
  // A header-only session.jsonl (override-driven): the compared session.expected.jsonl holds the recorded chunks.
  const expectedLog = join(dir, 'session.expected.jsonl')
  const recorded = !events.some(event => event.type === 'turn/start') && existsSync(expectedLog) ? parseSessionFile(readFileSync(expectedLog, 'utf8')).events : events
  const script = withOverride(dir, scriptFromEvents(recorded))
  const route = recordedRoute(text) ?? { provider: 'replay', model: 'replay' }
  const runtimeContext = events.some(event => event.type === 'user/message' && isRuntimeContextSnapshot(event.data as UserMessage))
  const hooks = workspaceHookFiles(join(dir, 'workspace'))
  const permissions = recordedPermissions(events)
  const runner = recordedRunner(dir)
  const fenceChildren = events.some(event => event.type === 'agent/inbox/spliced'
    && (event.data as { target: string }).target === 'next-turn'
    && (event.data as { inserted: UserMessage[] }).inserted.some(message => (message.source.kind as string) === 'subagent-settled'))
  const products = recordedProductRows(dir, events)
  return {
    ...(products !== undefined ? { products } : {}),
    events, header: parsed.header, steps, permissionAnswers, script, route, runtimeContext, children, hooks, fenceChildren, fetched: fetchedOrigins(events), fixtureCompactions: fixtureCompactions(events),
    cordis: events.some(event => (event.type === 'tool/call' || event.type === 'tool/code-dispatch-start') && (CORDIS_TOOL_NAMES as readonly string[]).includes((event.data as { name: string }).name)),
    ...(permissions !== undefined ? { permissionMode: permissions.mode } : {}),
    ...(events.some(event => event.type === 'tool/call' && (event.data as { name: string }).name === RUN_CODE) ? { toolsMode: recordedPresentation(dir, events) } : {}),
    ...(runner !== undefined ? { runnerCommand: runner.command } : {}),
    ...(basename(dir) === 'subagent-depth-two-rejection' ? { maxDepth: 2 } : {}),
  }
}
