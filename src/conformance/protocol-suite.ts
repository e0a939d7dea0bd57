/**
 * The protocol suite: drives the real `dsh --profile acp` / `dsh --profile sdk` processes with
 * each recorded scenario's input (the replay adapter, swapped in by a patch on the `model` row,
 * supplies the recorded model calls) and compares what they print with the recorded transcripts
 * (`stdout.expected.jsonl` for ACP; `notifications.expected.jsonl` + `result.expected.json` for
 * the SDK), normalised as the corpus INDEX.md describes. What is masked, and why, is listed in
 * docs/protocols.md ("Conformance").
 */
import { builtIsFresh } from './build-freshness.js'
import { conformanceJobs, orderedPool } from './ordered.js'
import { spawn } from 'node:child_process'
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, watch, writeFileSync } from 'node:fs'
import { findScenarioDirs } from './discover.js'
import { tmpdir } from 'node:os'
import { basename, dirname, join, relative } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { applyOverride, recordedRoute, scriptFromEvents, type ReplayEntry } from '../replay/index.js'
import type { UserMessage } from '../llm/types.js'
import { parseSessionFile } from '../session/codec.js'
import type { SessionEvent } from '../session/types.js'
import { DshClient, type Notification } from '../sdk/client.js'
import { JsonRpcPeer, LineSplitter } from '../sdk/jsonrpc.js'
import { isRuntimeContextSnapshot, recordedPermissions, recordedRunner } from './replay-suite.js'
import type { HookFileSource } from '../hooks/api.js'
import { fetchedOrigins, startRecordedPageServers } from './page-server.js'
import type { ConformanceResult, ConformanceSuite } from './types.js'
import { CORDIS_TOOL_NAMES, recordedPresentation, RUN_CODE } from './replay-rules.js'
import { CODE_MODE_PLUGIN } from '../code-mode/index.js'
import { PTY_TOOL_NAMES } from '../pty/schemas.js'
import { AGENT_INSTRUCTIONS_SOURCE } from '../instructions/index.js'
import { fixtureCompactions, isFixtureCompaction, writeFixtureCompactionPlugin } from './fixture-compaction.js'
import { recreateLspSubjects, recreateOmittedScripts, recreateOmittedSkills, recreateSampledTree, workspaceHookFiles } from './workspace.js'
import { isJobNotice, isProductTool, productPatchRows, recordedProductRows, type ProductRows } from './product-subagents.js'

const SUITE = 'protocol'
const BUILTIN_TOOLS = new Set(['bash', 'read', 'write', 'edit', 'glob', 'grep', 'todo_write', 'skill', 'web_fetch', 'session_event_read', 'subagent', 'subagent_fork', 'send_message', 'interrupt_agent', 'list_agents', 'ask_user_question', 'create_goal', 'get_goal', 'update_goal', 'job_output', 'job_kill', 'job_list', 'read_image', 'run_code', 'workflow', 'ralph', 'lsp', ...CORDIS_TOOL_NAMES, ...PTY_TOOL_NAMES])
const SUPPORTED_OPS = new Set(['initialize', 'newSession', 'prompt', 'promptExpectError', 'promptAndCancel', 'waitForTurnEnd', 'promptContent',
  // Settlement and goal timing: waits on what the process writes (its session logs, its frames), never sleeps.
  'promptAndWaitForAgentMessage', 'waitForSubagentTurnEnd', 'waitForTurnStart', 'cancel', 'waitForEventAfterTurnEnd'])

/** PRODUCT scenarios run when every tag is one of these (the sandbox and approval product). */
const SUPPORTED_PRODUCT_TAGS = new Set(['sandbox', 'approval', 'fs', 'bash', 'todo'])

/** Event-type prefixes of a recorded log that name a capability dsh lacks. */
const CAPABILITIES: readonly [prefix: string, capability: string][] = [
  ['subagent/', 'subagents'],
  ['job/', 'background jobs'],
  ['workspace/', 'workspace instructions'],
]

/** INDEX.md tags of PRODUCT scenarios whose plugins dsh has; a PRODUCT scenario runs when all its tags are here. */
const PRODUCT_TAGS = new Set(['hooks', 'bash', 'protocol', 'todo', 'skill', 'goal', 'cancel', 'web-fetch', 'spill', 'session-query', 'jobs', 'code-mode', 'image', 'workspace-instructions', 'workflow', 'subagent', 'cordis', 'lsp', 'pty', 'subagent-product'])

/** Messages of delegation dsh writes itself (settlement notices, reports, relayed turns). */
const DELEGATION_SOURCES = new Set(['subagent-settled', 'subagent-report', 'coordinator'])

/** Plugin-authored messages dsh writes itself (hook output). */
const HOOK_PLUGINS = new Set(['hooks-claude-code', 'hooks-codex'])

const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/gi

type Kind = 'acp' | 'sdk' | 'headless'

interface Scenario {
  readonly dir: string
  readonly kind: Kind
}

/** A session log holding its header line alone. */
function headerOnly(path: string): boolean {
  return readFileSync(path, 'utf8').trim().split('\n').length === 1
}

/** ACP scenarios record `stdout.expected.jsonl`; SDK scenarios `notifications.expected.jsonl`. */
function findScenarios(root: string): Scenario[] {
  return findScenarioDirs<Scenario>(root, (dir, has) =>
    has('stdout.expected.jsonl') ? { dir, kind: 'acp' } : has('notifications.expected.jsonl') ? { dir, kind: 'sdk' }
      // Headless runs recorded only as their stream (override-driven, no session log): run from input.json.
      // A header-only session.jsonl beside it (a Ralph run: the children's scripts are session.N.jsonl) counts as none.
      : has('stream-json.expected.jsonl') && has('input.json') && has('replay.override.json') && (!has('session.jsonl') || headerOnly(join(dir, 'session.jsonl'))) && !has('parent.override.json') ? { dir, kind: 'headless' }
        : undefined,
  { descend: true })
}

export interface ProtocolSuiteOptions {
  /** Only scenario directories whose path contains this string. */
  readonly filter?: string
}

export function protocolSuite(options: ProtocolSuiteOptions = {}): ConformanceSuite {
  return {
    name: SUITE,
    async *run(roots) {
      const scenarios = roots.flatMap(root => findScenarios(root)).filter(scenario => options.filter === undefined || scenario.dir.includes(options.filter))
      // Each scenario is its own dsh process in its own folders: several run at once, reported in order.
      yield* orderedPool(scenarios, conformanceJobs(), scenario => {
        // The subject is the transcript checked (the replay suite reports the same folders).
        const transcript = join(scenario.dir, scenario.kind === 'acp' ? 'stdout.expected.jsonl' : scenario.kind === 'sdk' ? 'notifications.expected.jsonl' : 'stream-json.expected.jsonl')
        return runScenario(scenario, relative(process.cwd(), transcript) || transcript)
      })
    },
  }
}

interface Step {
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

interface Plan {
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
function plan(scenario: Scenario): string | Plan {
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
    const input = files.includes('input.json') ? JSON.parse(readFileSync(join(dir, 'input.json'), 'utf8')) as { steps: Step[] } : { steps: [] }
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
  let steps: Step[] = []
  let permissionAnswers: { kind: string }[] = []
  if (files.includes('input.json')) {
    const input = JSON.parse(readFileSync(join(dir, 'input.json'), 'utf8')) as { steps: Step[]; permissionAnswers?: { kind: string }[] }
    steps = input.steps
    permissionAnswers = input.permissionAnswers ?? []
    const unsupported = steps.find(step => !SUPPORTED_OPS.has(step.op))
    if (unsupported !== undefined) return `missing capability: driver op ${unsupported.op}`
  } else if (scenario.kind === 'acp') return 'no input.json driver script'
  // A header-only session.jsonl (override-driven): the compared session.expected.jsonl holds the recorded chunks.
  const expectedLog = join(dir, 'session.expected.jsonl')
  const recorded = !events.some(event => event.type === 'turn/start') && existsSync(expectedLog) ? parseSessionFile(readFileSync(expectedLog, 'utf8')).events : events
  let script = scriptFromEvents(recorded)
  const overridePath = join(dir, 'replay.override.json')
  if (existsSync(overridePath)) {
    const derived = script
    script = applyOverride(script, JSON.parse(readFileSync(overridePath, 'utf8')))
    // A hang without chunks of its own streams the recorded prefix of the cancelled attempt.
    script = script.map((entry, i) => entry.kind === 'hang' && entry.chunks === undefined && derived[i] !== undefined
      ? { ...entry, chunks: derived[i]!.kind === 'throw' ? [] : derived[i]!.chunks ?? [] } : entry)
  }
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

/**
 * The dsh command: the compiled launcher; from sources, the built launcher when dist/ is fresh
 * (each scenario starts a process, and loading the sources through tsx costs ~1.5 s a start),
 * else the sources through tsx.
 */
/** A scenario's temp folders: `cwd` (a copy of the recorded workspace, when there is one) and `home`. */
function scenarioFolders(prefix: string, dir: string): { work: string; cwd: string; home: string } {
  const work = mkdtempSync(join(tmpdir(), prefix))
  const cwd = join(work, 'cwd')
  const home = join(work, 'home')
  mkdirSync(cwd)
  mkdirSync(home)
  const workspace = join(dir, 'workspace')
  if (existsSync(workspace)) cpSync(workspace, cwd, { recursive: true })
  return { work, cwd, home }
}

let command: [string, ...string[]] | undefined
function dshCommand(): [string, ...string[]] {
  return command ??= chooseDshCommand()
}

function chooseDshCommand(): [string, ...string[]] {
  const here = fileURLToPath(import.meta.url)
  const root = join(dirname(here), '..', '..')
  if (!here.endsWith('.ts') || builtIsFresh(root)) return [process.execPath, join(root, 'bin', 'dsh.js')]
  process.stderr.write('conformance: dist/ is older than src/, so each scenario loads the sources through tsx (slow); `npm run build` first for the fast path\n')
  const main = pathToFileURL(join(dirname(here), '..', 'cli', 'main.ts')).href
  const tsx = import.meta.resolve('tsx')
  const code = `const { main } = await import(${JSON.stringify(main)}); process.exit(await main(process.argv.slice(1)))`
  return [process.execPath, '--import', tsx, '--input-type=module', '-e', code, '--']
}

/** The patch layer: the replay adapter in place of the model row; no runtime-context plugin when the recording had none. */
function writePatch(plan: Plan, folder: string, kind: Kind): string {
  const rows: unknown[] = [{
    id: 'model',
    name: 'llm-replay',
    config: {
      script: plan.script, provider: plan.route.provider, models: [plan.route.model],
      ...plan.children.length > 0 && { sessions: Object.fromEntries(plan.children.map(child => [child.id, child.script])) },
      ...plan.fenceChildren && { fenceContinuableChildren: true },
    },
  }]
  if (plan.children.length > 0) rows.push({ id: 'subagents', config: { childIds: plan.children.map(child => child.id) } })
  // The recording's composition overlay (INDEX.md: grandchild rejected at maxDepth 2).
  if (plan.maxDepth !== undefined) {
    rows.push({ id: 'subagent-tools', config: { tools: [
      { provider: 'spawn', toolName: 'subagent', backgroundMode: 'continuable', maxDepth: plan.maxDepth },
      { provider: 'fork', toolName: 'subagent_fork', backgroundMode: 'one-shot', maxDepth: 1 },
    ] } })
  }
  // The recorded route (an image prompt was routed to a vision model, for instance).
  rows.push({ id: 'agents', config: { loop: plan.route } })
  if (!plan.runtimeContext) rows.push({ id: 'runtime-contexts', disabled: true }, { id: 'approval', config: { runtimeContexts: false } })
  if (plan.runnerCommand !== undefined) rows.push({ id: 'sandbox', config: { runnerCommand: plan.runnerCommand, runners: [] } })
  // No retry waits: the recorded retries replay at once.
  rows.push({ id: 'llm-retry', config: { baseDelayMs: 1, maxDelayMs: 1 } })
  // The recorded composition's hook files (the launch folder is the scenario workspace).
  rows.push({ id: 'hooks', config: { files: plan.hooks, discover: false } })
  // Only the workspace's skills (no `~/.agents/skills` of whoever runs the suite).
  rows.push({ id: 'skills', config: { agentsHome: join(folder, 'no-agents-home'), claudeHome: join(folder, 'no-claude-home') } })
  // Nor whoever runs the suite's ~/.claude/CLAUDE.md.
  rows.push({ id: 'instructions', config: { claudeHome: join(folder, 'no-claude-home') } })
  // The recording's composition had web_fetch (off in the shipped profiles).
  if (plan.fetched.length > 0) rows.push({ insert: [{ id: 'replay-web-fetch', name: 'tool-web-fetch' }] })
  if (plan.events.some(e => e.type === 'tool/call' && (e.data as { name: string }).name === 'session_event_read')) {
    rows.push({ insert: [{ id: 'replay-session-event-read', name: 'tool-session-event-read' }] })
  }
  if (plan.fixtureCompactions.size > 0) rows.push({ insert: [{ id: 'replay-fixture-compaction', name: writeFixtureCompactionPlugin(folder, plan.fixtureCompactions) }] })
  // The recording's composition had the lsp tool (its row is off in the shipped bundle).
  if (plan.events.some(e => e.type === 'tool/call' && (e.data as { name: string }).name === 'lsp')) rows.push({ id: 'lsp', disabled: false })
  if (plan.products !== undefined) rows.push(...productPatchRows(plan.products, folder))
  // The recorded transcripts show the original's frames: the ACP server's compatibility mode.
  if (kind === 'acp') rows.push({ id: 'app', config: { updates: 'recorded' } })
  const file = join(folder, 'replay.patch.yml')
  writeFileSync(file, JSON.stringify(rows))
  return file
}

/** Resolves once `path` exists or `stop` settles; the watcher is closed either way. */
function waitForFile(path: string, stop: Promise<unknown>): Promise<void> {
  return new Promise(resolve => {
    const watcher = watch(dirname(path), () => { if (existsSync(path)) done() })
    const done = () => {
      watcher.close()
      resolve()
    }
    void stop.then(done, done)
    if (existsSync(path)) done()
  })
}

async function runScenario(scenario: Scenario, path: string): Promise<ConformanceResult> {
  if (scenario.kind === 'headless') return runHeadlessScenario(scenario, path)
  let planned: string | Plan
  try {
    planned = plan(scenario)
  } catch (error) {
    return { suite: SUITE, status: 'fail', path, detail: `cannot read the scenario: ${error instanceof Error ? error.message : String(error)}` }
  }
  if (typeof planned === 'string') return { suite: SUITE, status: 'skip', path, detail: planned }
  const { work, cwd, home } = scenarioFolders('dsh-protocol-', scenario.dir)
  try {
    recreateOmittedScripts(cwd)
    recreateSampledTree(cwd, basename(scenario.dir))
    recreateOmittedSkills(cwd, planned.events)
    recreateLspSubjects(cwd, planned.events)
    const patch = writePatch(planned, work, scenario.kind)
    const env: Record<string, string | undefined> = {
      DSH_HOME: home, DEEPSEEK_API_KEY: undefined, DEEPSEEK_BASE_URL: undefined, DSH_MODEL: undefined,
      // The recorded deployment's permission mode (danger-full-access implies policy never).
      DSH_PERMISSION_MODE: planned.permissionMode,
      DSH_TOOLS_MODE: planned.toolsMode,
      DSH_CORDIS_TOOLS: planned.cordis === true ? '1' : undefined,
      // The original's network: confined commands share the host's (recorded prompts stay equal).
      DSH_NETWORK: 'full',
    }
    // The fetched pages, on the recorded ports (the dsh process fetches the recorded URLs).
    const pages = await startRecordedPageServers(planned.fetched)
    let difference: string | undefined
    try {
      difference = scenario.kind !== 'sdk'
        ? await runAcp(scenario, planned, { cwd, patch, env })
        : await runSdk(scenario, planned, { cwd, patch, env })
    } finally {
      await pages.close()
    }
    if (difference !== undefined) return { suite: SUITE, status: 'fail', path, detail: difference }
    return { suite: SUITE, status: 'pass', path }
  } catch (error) {
    return { suite: SUITE, status: 'fail', path, detail: error instanceof Error ? error.message : String(error) }
  } finally {
    rmSync(work, { recursive: true, force: true })
  }
}

interface Run {
  readonly cwd: string
  readonly patch: string
  readonly env: Readonly<Record<string, string | undefined>>
}

function childEnv(env: Run['env']): Record<string, string> {
  const out: Record<string, string> = {}
  for (const [key, value] of Object.entries({ ...process.env, ...env })) if (value !== undefined) out[key] = value
  return out
}

// ---- ACP ----

async function runAcp(scenario: Scenario, plan: Plan, run: Run): Promise<string | undefined> {
  const [command, ...args] = dshCommand()
  const child = spawn(command, [...args, '--profile', 'acp', '--patch', run.patch], { cwd: run.cwd, env: childEnv(run.env), stdio: ['pipe', 'pipe', 'pipe'] })
  let stderr = ''
  child.stderr.setEncoding('utf8').on('data', (text: string) => { stderr += text })
  const exited = new Promise<number | null>(resolve => child.on('close', code => resolve(code)))
  const answers = [...plan.permissionAnswers]
  const peer = new JsonRpcPeer({
    input: child.stdout,
    output: child.stdin,
    methods: {
      'session/request_permission': {
        params: { safeParse: (value: unknown) => ({ success: true, data: value }) } as never,
        run: () => {
          const answer = answers.shift()
          if (answer === undefined) return { outcome: { outcome: 'cancelled' } }
          return { outcome: { outcome: 'selected', optionId: answer.kind === 'allow_once' ? 'allow-once' : 'reject-once' } }
        },
      },
    },
  })
  // The peer numbers its requests 0, 1, 2... in the order they are sent.
  let sent = 0
  const request = <T = unknown>(method: string, params: unknown): Promise<T> => {
    sent++
    return peer.request<T>(method, params)
  }
  const lines: string[] = []
  const splitter = new LineSplitter()
  // Waiters on the frames the agent writes (promptAndWaitForAgentMessage).
  const frameWaiters = new Set<() => void>()
  child.stdout.on('data', (text: string | Buffer) => {
    lines.push(...splitter.push(String(text)))
    for (const check of [...frameWaiters]) check()
  })
  let sessionId: string | undefined
  /** Prompts sent without waiting for their answer; awaited before EOF. */
  const outstanding: Promise<unknown>[] = []
  /** Request ids of prompts the driver did not wait for (their answer's position is timing). */
  const floating = new Set<unknown>()
  const logs = new SessionLogs(join(run.env.DSH_HOME!, 'sessions'), Promise.race([exited, peer.closed]))
  const childId = (n: number | undefined) => plan.children[(n ?? 1) - 1]?.id ?? (() => { throw new Error(`waitForSubagentTurnEnd: no recorded child ${n}`) })()
  try {
    for (const step of plan.steps) {
      switch (step.op) {
        case 'promptAndWaitForAgentMessage': {
          const want = step.waitForText ?? ''
          const seen = () => lines.some(line => line.includes('agent_message_chunk') && agentText(line).includes(want))
          floating.add(sent)
          outstanding.push(request('session/prompt', { sessionId, prompt: [{ type: 'text', text: step.text }] }).catch(() => undefined))
          await new Promise<void>((resolve, reject) => {
            const check = () => {
              if (!seen()) return
              frameWaiters.delete(check)
              resolve()
            }
            frameWaiters.add(check)
            void Promise.race([exited, peer.closed]).then(() => { frameWaiters.delete(check); reject(new Error(`promptAndWaitForAgentMessage: the agent never wrote "${want}"`)) })
            check()
          })
          break
        }
        case 'waitForSubagentTurnEnd':
          await logs.waitFor(childId(step.child), events => turnEnds(events) >= (step.minimumTurn ?? 1), `child ${step.child ?? 1} turn ${step.minimumTurn ?? 1} end`)
          break
        case 'waitForTurnStart':
          await logs.waitFor(sessionId!, events => turnStarts(events) >= (step.minimumTurn ?? 1), `turn ${step.minimumTurn ?? 1} start`)
          break
        case 'cancel':
          if (step.waitForFile !== undefined) await waitForFile(join(run.cwd, step.waitForFile.path), Promise.race([exited, peer.closed]))
          peer.notify('session/cancel', { sessionId })
          break
        case 'waitForEventAfterTurnEnd': {
          const type = step.type ?? ''
          await logs.waitFor(sessionId!, events => {
            const end = events.findLastIndex(event => event.type === 'turn/end')
            return end >= 0 && events.slice(end + 1).some(event => event.type === type)
          }, `${type} after a turn end`)
          break
        }
        case 'initialize':
          await request('initialize', { protocolVersion: 1, clientCapabilities: { fs: { readTextFile: false, writeTextFile: false } } })
          break
        case 'newSession':
          sessionId = (await request<{ sessionId: string }>('session/new', { cwd: run.cwd, mcpServers: [] })).sessionId
          break
        case 'prompt':
        case 'promptExpectError':
        case 'promptContent': {
          const prompt = step.op === 'promptContent' ? step.content : [{ type: 'text', text: step.text }]
          const answered = request('session/prompt', { sessionId, prompt })
          if (step.op === 'promptExpectError') await answered.then(() => { throw new Error('the prompt was expected to fail but succeeded') }, () => undefined)
          else await answered
          break
        }
        case 'promptAndCancel': {
          const answered = request('session/prompt', { sessionId, prompt: [{ type: 'text', text: step.text }] })
          // The ready file, unless the prompt ends (or the server dies) first: never wait forever.
          if (step.waitForFile !== undefined) await waitForFile(join(run.cwd, step.waitForFile.path), Promise.race([answered, exited]))
          peer.notify('session/cancel', { sessionId })
          await answered
          break
        }
        case 'waitForTurnEnd':
          // Every started turn has ended (a no-op after an awaited prompt).
          await logs.waitFor(sessionId!, events => turnStarts(events) > 0 && turnEnds(events) >= turnStarts(events), 'turn end')
          break
      }
    }
    await Promise.all(outstanding)
  } catch (error) {
    child.kill('SIGKILL')
    throw new Error(`${error instanceof Error ? error.message : String(error)}${stderr ? `; stderr: ${stderr.trim().split('\n').slice(-3).join(' | ')}` : ''}`)
  }
  child.stdin.end()
  const code = await exited
  if (code !== 0) return `dsh --profile acp exited ${code}: ${stderr.trim().split('\n').slice(-3).join(' | ')}`
  const expected = readJsonLines(join(scenario.dir, 'stdout.expected.jsonl'))
  // The original advertised no slash commands: dsh's `available_commands_update` frames are masked.
  const frames = (lines.map(line => JSON.parse(line)) as Record<string, unknown>[]).filter(frame => !isCommandsUpdate(frame))
  const actual = normaliseAcp(frames, { sessionId, cwd: run.cwd })
  // Answers to prompts the driver did not wait for: their position is timing (below). Ids as renumbered.
  const answerIds = new Map<unknown, number>()
  for (const frame of frames) if (!('method' in frame) && 'id' in frame && !answerIds.has(frame.id)) answerIds.set(frame.id, answerIds.size + 1)
  const floatingIds = new Set([...floating].map(raw => answerIds.get(raw)).filter(id => id !== undefined))
  return firstDifference(floatAnswers(expected.map(maskAcp) as Record<string, unknown>[], floatingIds), floatAnswers(actual.map(maskAcp) as Record<string, unknown>[], floatingIds))
}

/**
 * The answer to a prompt the driver did not wait for (promptAndWaitForAgentMessage) is sent when
 * the agent first goes idle, which in the original raced its background children and goal rounds
 * (a report or notice landing first made the prompt cover one more turn). Its position among the
 * `session/update` frames that follow is therefore timing: on both sides it is compared just
 * before the next frame that is not a `session/update` (the next answer or request) or at the end.
 */
export function floatAnswers(frames: readonly Record<string, unknown>[], ids: ReadonlySet<unknown>): Record<string, unknown>[] {
  const out = [...frames]
  for (let i = out.length - 1; i >= 0; i--) {
    const frame = out[i]!
    if ('method' in frame || !ids.has(frame.id)) continue
    let j = i
    while (j + 1 < out.length && out[j + 1]!.method === 'session/update') j++
    out.splice(i, 1)
    out.splice(j, 0, frame)
  }
  return out
}

/** Text of an `agent_message_chunk` frame line ('' otherwise). */
function agentText(line: string): string {
  try {
    const frame = JSON.parse(line) as { params?: { update?: { sessionUpdate?: string; content?: { text?: unknown } } } }
    const text = frame.params?.update?.content?.text
    return frame.params?.update?.sessionUpdate === 'agent_message_chunk' && typeof text === 'string' ? text : ''
  } catch {
    return ''
  }
}

const turnStarts = (events: readonly { type: string }[]) => events.filter(event => event.type === 'turn/start').length
const turnEnds = (events: readonly { type: string }[]) => events.filter(event => event.type === 'turn/end').length

/** The session logs a dsh process writes under `$DSH_HOME/sessions`, read as they grow (watched, not polled). */
class SessionLogs {
  private readonly files = new Map<string, string>()

  constructor(private readonly root: string, private readonly gone: Promise<unknown>) {
    mkdirSync(root, { recursive: true })
  }

  /** The events of session `id` written so far (lines that do not parse yet are skipped). */
  events(id: string): { type: string }[] {
    const file = this.locate(id)
    if (file === undefined) return []
    const out: { type: string }[] = []
    for (const line of readFileSync(file, 'utf8').split('\n')) {
      if (!line.includes('"type"')) continue
      try {
        const row = JSON.parse(line) as { type?: unknown }
        if (typeof row.type === 'string' && row.type !== 'session') out.push(row as { type: string })
      } catch { /* a line being written */ }
    }
    return out
  }

  private locate(id: string): string | undefined {
    const known = this.files.get(id)
    if (known !== undefined) return known
    for (const name of readdirSync(this.root, { recursive: true }).map(String)) {
      if (basename(name) !== 'session.jsonl') continue
      const file = join(this.root, name)
      const first = readFileSync(file, 'utf8').split('\n', 1)[0] ?? ''
      try {
        if ((JSON.parse(first) as { id?: unknown }).id === id) {
          this.files.set(id, file)
          return file
        }
      } catch { /* a header being written */ }
    }
    return undefined
  }

  /** Resolves once `test` holds for the log of `id`; fails when the process ends or after the deadline. */
  waitFor(id: string, test: (events: readonly { type: string }[]) => boolean, what: string): Promise<void> {
    return new Promise((resolve, reject) => {
      let done = false
      const finish = (error?: Error) => {
        if (done) return
        done = true
        watcher.close()
        clearTimeout(deadline)
        if (error === undefined) resolve()
        else reject(error)
      }
      const check = () => {
        if (done) return
        try {
          if (test(this.events(id))) finish()
        } catch (error) {
          finish(error instanceof Error ? error : new Error(String(error)))
        }
      }
      const watcher = watch(this.root, { recursive: true }, check)
      const deadline = setTimeout(() => finish(new Error(`waited ${WAIT_DEADLINE_MS / 1000} s for ${what} in session ${id}`)), WAIT_DEADLINE_MS)
      void this.gone.then(() => { check(); finish(new Error(`dsh ended before ${what} in session ${id}`)) })
      check()
    })
  }
}

/** A scenario whose awaited state never comes fails instead of hanging the run. */
const WAIT_DEADLINE_MS = 60_000

function isCommandsUpdate(frame: Record<string, unknown>): boolean {
  const params = frame.params as { update?: { sessionUpdate?: unknown } } | undefined
  return frame.method === 'session/update' && params?.update?.sessionUpdate === 'available_commands_update'
}

function readJsonLines(file: string): unknown[] {
  return readFileSync(file, 'utf8').split('\n').filter(line => line.trim() !== '').map(line => JSON.parse(line))
}

/** Replaces the session id, the cwd and every UUID in every string. */
function placeholders(value: unknown, known: { sessionId?: string; cwd: string }): unknown {
  if (typeof value === 'string') {
    let text = value
    if (known.sessionId !== undefined) text = text.split(known.sessionId).join('{{sessionId}}')
    text = text.split(known.cwd).join('{{cwd}}')
    return text.replace(UUID, '{{sessionId}}')
  }
  if (Array.isArray(value)) return value.map(item => placeholders(item, known))
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, placeholders(item, known)]))
  }
  return value
}

/** INDEX.md: ids renumbered 1, 2, 3 in first-seen order (answers and agent requests counted apart). */
export function normaliseAcp(frames: readonly Record<string, unknown>[], known: { sessionId?: string; cwd: string }): Record<string, unknown>[] {
  const answers = new Map<unknown, number>()
  const requests = new Map<unknown, number>()
  return frames.map(frame => {
    const out = placeholders(frame, known) as Record<string, unknown>
    if (!('id' in frame)) return out
    const ids = 'method' in frame ? requests : answers
    if (!ids.has(frame.id)) ids.set(frame.id, ids.size + 1)
    return { ...out, id: ids.get(frame.id) }
  })
}

/**
 * In the `initialize` answer: the product identity (the original names itself
 * `deepseek-harness-acp`, we are `dsh`) and `promptCapabilities.image`, which follows the model
 * catalogue (the replay catalogue entry accepts images for every recorded model).
 */
function maskAcp(frame: unknown): unknown {
  const f = frame as { result?: { agentInfo?: unknown; agentCapabilities?: { promptCapabilities?: Record<string, unknown> } } }
  if (f.result?.agentInfo === undefined) return frame
  const capabilities = f.result.agentCapabilities
  const prompt = capabilities?.promptCapabilities
  return {
    ...f,
    result: {
      ...f.result,
      agentInfo: '{{agentInfo}}',
      ...(prompt !== undefined ? { agentCapabilities: { ...capabilities, promptCapabilities: { ...prompt, image: '{{image}}' } } } : {}),
    },
  }
}

// ---- SDK ----

async function runSdk(scenario: Scenario, plan: Plan, run: Run): Promise<string | undefined> {
  const prompt = plan.events.find(event => event.type === 'agent/inbox/spliced')
  const first = (prompt?.data as { inserted?: UserMessage[] } | undefined)?.inserted?.[0]
  if (first === undefined) return 'the recorded log has no prompt'
  const client = await DshClient.start({
    command: [...dshCommand(), '--profile', 'sdk', '--patch', run.patch] as [string, ...string[]],
    cwd: run.cwd,
    env: run.env,
    initialize: { cwd: run.cwd, provider: plan.route.provider, model: plan.route.model },
  })
  let result
  try {
    result = await client.run(first.content, { sessionId: plan.header.id })
  } finally {
    const closed = await client.close()
    if (closed.via !== 'eof' || closed.code !== 0) throw new Error(`dsh --profile sdk did not exit cleanly on EOF (${closed.via}, code ${closed.code}): ${client.stderr.trim().split('\n').slice(-3).join(' | ')}`)
  }
  const known = { sessionId: plan.header.id, cwd: run.cwd }
  const expected = readJsonLines(join(scenario.dir, 'notifications.expected.jsonl'))
  // Titles are dropped per session: by the live session id here, by seq continuity in the recording (ids are placeholders there).
  const actual = withoutTitles(result.notifications.map(normaliseNotification), byParamsSession).map(n => maskSdk(placeholders(n, known)))
  const difference = firstDifference(withoutTitles(expected.map(maskSdk), bySeqContinuity()), actual)
  if (difference !== undefined) return `notifications: ${difference}`
  const expectedResult = JSON.parse(readFileSync(join(scenario.dir, 'result.expected.json'), 'utf8')) as unknown
  const actualResult = placeholders({ sessionId: result.sessionId, finalResponse: result.finalResponse }, known)
  const resultDifference = firstDifference([expectedResult], [actualResult])
  return resultDifference === undefined ? undefined : `result: ${resultDifference}`
}

/** The recorded notifications are `{method, params}` with event times 0. */
function normaliseNotification(notification: Notification): unknown {
  if (notification.method !== 'session.event') return { method: notification.method, params: notification.params }
  const event = notification.params.event as SessionEvent
  return { method: notification.method, params: { ...notification.params, event: { ...event, time: 0 } } }
}

/**
 * Product text and product-owned fields: the request header's system prompt and tool schemas
 * (placeholders in the recording), the header config beyond the route, and the context window
 * of `request/context` (a catalogue detail: the replay catalogue entry has one, the original's
 * route reported none), and `tool/result.meta` (an additive dsh field the original never wrote).
 */
export function maskSdk(value: unknown): unknown {
  const n = value as { method?: string; params?: { event?: SessionEvent } }
  const event = n.params?.event
  if (event === undefined) return value
  if (event.type === 'tool/result' && isRecord(event.data) && 'meta' in event.data) {
    // `tool/result.meta` (structured data for UIs: exit codes, diffs, counts) is a documented
    // additive extension of dsh: masked for every tool, never per scenario.
    const { meta: _meta, ...data } = event.data
    return { ...n, params: { ...n.params, event: { ...event, data } } }
  }
  if (event.type === 'user/message' && isRuntimeContextSnapshot(event.data as UserMessage)) {
    // The snapshot's wording and plugin name are product text; its sections (what the runtime
    // tells the model: here a child's `subagent:delegation`) are compared.
    const message = event.data as UserMessage & { source: { sections?: { name: string; text: string }[] } }
    const masked = { ...message, content: '{{runtimeContext}}', source: { kind: message.source.kind, sections: message.source.sections?.map(section => ({ name: section.name, text: section.text })) } }
    return { ...n, params: { ...n.params, event: { ...event, data: masked } } }
  }
  if (event.type === 'request/header') {
    const data = event.data as { header: { config: { provider: string; model: string } }; reason: string }
    const masked = { ...data, header: { config: { provider: data.header.config.provider, model: data.header.config.model }, system: '{{system}}', tools: '{{tools}}' } }
    return { ...n, params: { ...n.params, event: { ...event, data: masked } } }
  }
  if (event.type === 'request/context') {
    const { contextWindow: _window, ...data } = event.data as { contextWindow?: number }
    return { ...n, params: { ...n.params, event: { ...event, data } } }
  }
  return value
}

/**
 * Drops `session/title` events and renumbers the remaining seqs (and `sourceEventSeqs`) to stay
 * contiguous: the title is product text, and our title plugin appends it one microtask after the
 * prompt (after `request/header`), where the original appended it before.
 */
function withoutTitles(notifications: readonly unknown[], sessionOf: (n: SessionNotification) => string = () => ''): unknown[] {
  const all = notifications as SessionNotification[]
  const keys = all.map(n => (n.params.event !== undefined ? sessionOf(n) : ''))
  const kept = all.map((n, i) => [n, keys[i]!] as const).filter(([n]) => n.params.event?.type !== 'session/title')
  // Per session (a delegating run interleaves its children's events): old seq -> new seq.
  const seqs = new Map<string, Map<number, number>>()
  for (const [n, key] of kept) {
    if (n.params.event === undefined) continue
    const own = seqs.get(key) ?? new Map<number, number>()
    seqs.set(key, own)
    own.set(n.params.event.seq, own.size)
  }
  return kept.map(([n, key]) => {
    const event = n.params.event
    if (event === undefined) return n
    const own = seqs.get(key)!
    const renumbered = { ...event, seq: own.get(event.seq)! }
    if (event.sourceEventSeqs !== undefined) renumbered.sourceEventSeqs = event.sourceEventSeqs.map(seq => own.get(seq) ?? -1)
    return { ...n, params: { ...n.params, event: renumbered } }
  })
}

type SessionNotification = { method: string; params: { sessionId?: string; event?: SessionEvent & { sourceEventSeqs?: number[] } } }

/** The live run: events carry their session's own id. */
function byParamsSession(n: SessionNotification): string {
  return n.params.sessionId ?? ''
}

/**
 * The recording (every id is a placeholder): an event belongs to the session whose next seq it
 * is; a seq-0 event opens a new session's stream (a child starts at 0). Each session's seqs are
 * contiguous, so this assigns every event of a run whose sessions are at different positions.
 */
function bySeqContinuity(): (n: SessionNotification) => string {
  const next: number[] = []
  return (n) => {
    const seq = n.params.event!.seq
    let stream = seq === 0 ? -1 : next.lastIndexOf(seq)
    if (stream < 0) {
      stream = next.length
      next.push(0)
    }
    next[stream] = seq + 1
    return String(stream)
  }
}

// ---- comparison ----

function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value).filter(([, item]) => item !== undefined).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    return `{${entries.map(([key, item]) => `${JSON.stringify(key)}:${canonical(item)}`).join(',')}}`
  }
  return JSON.stringify(value)
}

function firstDifference(expected: readonly unknown[], actual: readonly unknown[]): string | undefined {
  const n = Math.max(expected.length, actual.length)
  for (let i = 0; i < n; i++) {
    const a = i < expected.length ? canonical(expected[i]) : undefined
    const b = i < actual.length ? canonical(actual[i]) : undefined
    if (a !== b) return `first difference at line ${i + 1}: expected ${clip(a ?? '(end)')}, got ${clip(b ?? '(end)')}`
  }
  return undefined
}

function clip(text: string): string {
  return text.length > 300 ? `${text.slice(0, 300)}...` : text
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

// ---- headless stream-json ----

/**
 * A headless run recorded only as its `--output stream-json` stream (override-driven): the
 * replay script is `replay.override.json`, the task the one `prompt` of `input.json`, the route
 * the stream's first `request/header`; stdout is compared line by line, normalised like the SDK
 * notifications (ids and the cwd as placeholders, event times 0, titles dropped with seqs
 * renumbered, the request header's product text and `tool/result.meta` masked, goal times 0).
 */
async function runHeadlessScenario(scenario: Scenario, path: string): Promise<ConformanceResult> {
  const dir = scenario.dir
  let steps: Step[]
  let expected: Record<string, unknown>[]
  let script: ReplayEntry[]
  try {
    steps = (JSON.parse(readFileSync(join(dir, 'input.json'), 'utf8')) as { steps: Step[] }).steps
    expected = readJsonLines(join(dir, 'stream-json.expected.jsonl')) as Record<string, unknown>[]
    script = applyOverride([], JSON.parse(readFileSync(join(dir, 'replay.override.json'), 'utf8')))
  } catch (error) {
    return { suite: SUITE, status: 'fail', path, detail: `cannot read the scenario: ${error instanceof Error ? error.message : String(error)}` }
  }
  if (steps.length !== 1 || steps[0]!.op !== 'prompt' || typeof steps[0]!.text !== 'string') return { suite: SUITE, status: 'skip', path, detail: 'missing capability: a headless driver script other than one prompt' }
  const events = expected.filter(line => line.type === 'session_event').map(line => line.event as SessionEvent)
  const lacking = events.map(event => event.type === 'tool/call' ? (event.data as { name: string }).name : undefined).find(name => name !== undefined && !BUILTIN_TOOLS.has(name))
  if (lacking !== undefined) return { suite: SUITE, status: 'skip', path, detail: `missing capability: tool ${lacking}` }
  const header = events.find(event => event.type === 'request/header')?.data as { header: { config: { provider: string; model: string } } } | undefined
  const route = header?.header.config ?? { provider: 'replay', model: 'replay' }
  const runtimeContext = events.some(event => event.type === 'user/message' && isRuntimeContextSnapshot(event.data as UserMessage))
  // Children's model calls, in creation order, from their logs (session.N.jsonl).
  const children = readdirSync(dir).filter(name => /^session\.\d+\.jsonl$/.test(name))
    .sort((x, y) => Number(x.split('.')[1]) - Number(y.split('.')[1]))
    .map(file => {
      const child = parseSessionFile(readFileSync(join(dir, file), 'utf8'))
      return { id: child.header.id, script: scriptFromEvents(child.events) }
    })
  const { work, cwd, home } = scenarioFolders('dsh-headless-', dir)
  try {
    const plan = {
      events, header: { id: '' }, steps, permissionAnswers: [], script, route: { provider: route.provider, model: route.model }, runtimeContext,
      hooks: [], children, fenceChildren: false, fetched: [], fixtureCompactions: fixtureCompactions(events),
    } satisfies Plan
    const patch = writePatch(plan, work, 'headless')
    const [command, ...args] = dshCommand()
    const child = spawn(command, [...args, '--profile', 'headless', '--patch', patch, '--output', 'stream-json', '--', steps[0]!.text!], {
      cwd, env: childEnv({ DSH_HOME: home, DEEPSEEK_API_KEY: undefined, DEEPSEEK_BASE_URL: undefined, DSH_MODEL: undefined, DSH_NETWORK: 'full' }), stdio: ['ignore', 'pipe', 'pipe'],
    })
    let stdout = ''
    let stderr = ''
    child.stdout.setEncoding('utf8').on('data', (text: string) => { stdout += text })
    child.stderr.setEncoding('utf8').on('data', (text: string) => { stderr += text })
    const code = await new Promise<number | null>(resolve => child.on('close', resolve))
    const lines = stdout.split('\n').filter(line => line.trim() !== '').map(line => JSON.parse(line) as Record<string, unknown>)
    const sessionId = lines.find(line => typeof line.sessionId === 'string')?.sessionId as string | undefined
    if (code !== 0 && lines.length === 0) return { suite: SUITE, status: 'fail', path, detail: `dsh --profile headless exited ${code}: ${stderr.trim().split('\n').slice(-3).join(' | ')}` }
    const difference = firstDifference(normaliseStream(expected, { cwd: '{{cwd}}' }), normaliseStream(lines, { ...sessionId !== undefined && { sessionId }, cwd }))
    if (difference !== undefined) return { suite: SUITE, status: 'fail', path, detail: difference }
    return { suite: SUITE, status: 'pass', path }
  } catch (error) {
    return { suite: SUITE, status: 'fail', path, detail: error instanceof Error ? error.message : String(error) }
  } finally {
    rmSync(work, { recursive: true, force: true })
  }
}

/** Stream-json lines in the SDK notification shape, normalised and masked the same way, then back. */
function normaliseStream(lines: readonly Record<string, unknown>[], known: { sessionId?: string; cwd: string }): unknown[] {
  const wrapped = lines.map(line => line.type === 'session_event'
    ? { method: 'session.event', params: { sessionId: line.sessionId, event: goalTimes({ ...(line.event as SessionEvent), time: 0 }) } }
    : { method: String(line.type), params: line })
  return withoutTitles(wrapped.map(n => maskSdk(placeholders(n, known))))
}

/** `goal/change` times are placeholders (0) in the recordings. */
function goalTimes(event: SessionEvent): SessionEvent {
  if (event.type !== 'goal/change') return event
  const data = event.data as Record<string, unknown>
  return { ...event, data: { ...data, ...'createdAt' in data && { createdAt: 0 }, ...'updatedAt' in data && { updatedAt: 0 } } } as SessionEvent
}
