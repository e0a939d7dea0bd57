/**
 * The replay suite: for each recorded scenario whose behaviour dsh implements, run a fresh
 * session with the replay adapter (the recorded model calls) and the real built-in tools in a
 * temporary copy of the scenario's `workspace/`, feed the recorded user prompts (and the cancel
 * steps of `input.json`), then compare the new log with the recorded one on the core projection
 * (docs/conformance.md, "Replay suite"). Scenarios needing a capability dsh lacks are SKIP,
 * naming it; a mismatch prints the first difference.
 */
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, watch, type FSWatcher } from 'node:fs'
import { findScenarioDirs } from './discover.js'
import { tmpdir } from 'node:os'
import { basename, join, relative } from 'node:path'
import { Context } from 'cordis'
import { AgentsServicePlugin, LoopInvariantPlugin, ReactLoopPlugin } from '../agent/index.js'
import { LlmServicePlugin } from '../llm/index.js'
import { LlmRetryPlugin } from '../retry/index.js'
import { SessionTitlePlugin, TITLE_REQUEST_EVENT } from '../title/index.js'
import { applyOverride, recordedRoute, ReplayAdapter, replayModelInfo, scriptFromEvents, type ReplayEntry } from '../replay/index.js'
import type { ContentBlock, TokenUsage, UserMessage } from '../llm/types.js'
import { storeInlineImages } from '../sdk/images.js'
import { toContentBlocks } from '../acp/server.js'
import { parseSessionFile } from '../session/codec.js'
import { interruptedTurnClosers, SessionsServicePlugin, TOOL_OUTCOME_UNKNOWN } from '../session/index.js'
import type { SessionEvent, SessionHeader } from '../session/types.js'
import { BuiltinToolsPlugin } from '../tools/builtin/index.js'
import { JobsPlugin } from '../jobs/service.js'
import { PtyPlugin, PTY_TOOL_NAMES } from '../pty/index.js'
import { ReadImageToolPlugin } from '../images/read-image.js'
import { CompactionPlugin } from '../compaction/index.js'
import { ToolsPlugin } from '../tools/index.js'
import { HooksPlugin, type HookFileSource } from '../hooks/index.js'
import { ApprovalPlugin, APPROVAL_POLICY_CONTEXT, SANDBOX_POLICY_CONTEXT, type ApprovalPolicy } from '../approval/index.js'
import { SystemPromptPlugin } from '../prompt/index.js'
import { isSandboxMode, landlockRunner, LANDLOCK_PARTIAL_NOTICE, SandboxPlugin, type SandboxMode, type SandboxRunner } from '../sandbox/index.js'
import { forkProvider, spawnProvider, SubagentsPlugin, SubagentToolsPlugin, DEFAULT_TOOL_ROWS, type SubagentToolRow } from '../subagents/index.js'
import type { ConformanceResult, ConformanceSuite } from './types.js'
import { BUILTIN_TOOLS, CAPABILITIES, COMPARED, CORDIS_TOOL_NAMES, MASKED, recordedPresentation, RUN_CODE, SUPPORTED_OPS } from './replay-rules.js'
import { appendArgs, fixtureCompactions } from './fixture-compaction.js'
import { stepEfforts } from './step-efforts.js'
import type { ReasoningEffort } from '../llm/types.js'

const REASONING_EFFORTS: readonly ReasoningEffort[] = ['low', 'medium', 'high', 'max']
import { recreateLspSubjects, recreateOmittedInstructions, recreateOmittedScripts, recreateReadFiles, restoreInstructionSymlinks, recreateOmittedSkills, recreateSampledTree, workspaceHookFiles } from './workspace.js'
import { SkillsPlugin } from '../skills/index.js'
import { QuestionToolPlugin } from '../questions/index.js'
import { GoalsPlugin } from '../goals/index.js'
import { WebFetchToolPlugin } from '../tools/builtin/web-fetch.js'
import { SessionEventReadToolPlugin } from '../tools/builtin/session-event-read.js'
import { fetchedOrigins, startPageServer, type PageServer } from './page-server.js'
import { CodeModePlugin } from '../code-mode/index.js'
import { WorkflowPlugin } from '../workflow/index.js'
import { CordisDynamicPlugin } from '../cordis-dynamic/index.js'
import { LspPlugin } from '../lsp/index.js'
import { WorkspaceInstructionsPlugin } from '../instructions/index.js'
import { isJobNotice, isProductTool, productPlugins, recordedProductRows, type ProductRows } from './product-subagents.js'
import { firstDifference, isCodeModeMessage, isCompactionMessage, isDelegationMessage, isGoalMessage, isHookMessage, isInstructionsMessage, isRuntimeContextSnapshot, isSkillCatalog, project, snapshotSections } from './replay-project.js'

export { isRuntimeContextSnapshot, project } from './replay-project.js'

/**
 * Delegation tool rows per scenario: the shipped rows (continuable `subagent`, foreground
 * `subagent_fork`, maxDepth 1) unless the recording's composition overlaid them (the original's
 * compositions are not part of the corpus; the overlay is named in its INDEX.md description).
 */
const DELEGATION_ROWS: Readonly<Record<string, readonly SubagentToolRow[]>> = {
  'subagent-depth-two-rejection': DEFAULT_TOOL_ROWS.map(row => row.provider === 'spawn' ? { ...row, maxDepth: 2 } : row),
}

/** The SDK composition delegates in the foreground (its recorded child is one-shot). */
const SDK_TOOL_ROWS: readonly SubagentToolRow[] = DEFAULT_TOOL_ROWS.map(row => ({ ...row, backgroundMode: 'one-shot' as const }))

export interface ReplaySuiteOptions {
  /** Only scenario directories whose path contains this string. */
  readonly filter?: string
}

/**
 * A recorded child log. A child log without any turn (its run failed right after the session
 * was published) needs test-only injection (docs/conformance.md): its session is closed as soon
 * as it is created, so starting its agent fails.
 */
interface ChildPlan {
  readonly file: string
  readonly header: SessionHeader
  readonly events: readonly SessionEvent[]
  readonly script: readonly ReplayEntry[]
  readonly failTurns: ReadonlyMap<number, string>
  readonly failPublished: boolean
  /** Model chunks alone (a Ralph round's script): its session is not compared. */
  readonly scriptOnly: boolean
}

interface Scenario {
  readonly dir: string
  readonly log: string
}

/**
 * Scenario directories: an `examples/` directory holding a recorded `session.jsonl`, or a resume
 * scenario (a seeded log continued by the runtime, scripted by `replay.jsonl`).
 */
function findScenarios(root: string): Scenario[] {
  if (!statSync(root).isDirectory()) return []
  return findScenarioDirs<Scenario>(root, (dir, has) =>
    has('session.jsonl') ? { dir, log: join(dir, 'session.jsonl') }
      : has('session.expected.jsonl') && has('replay.jsonl') ? { dir, log: join(dir, 'session.expected.jsonl') }
        // A compared log alone (headless-profile): it is its own replay script.
        : has('session.expected.jsonl') ? { dir, log: join(dir, 'session.expected.jsonl') }
          : undefined)
}

export function replaySuite(options: ReplaySuiteOptions = {}): ConformanceSuite {
  return {
    name: 'replay',
    async *run(roots) {
      for (const root of roots) {
        for (const scenario of findScenarios(root)) {
          if (options.filter !== undefined && !scenario.dir.includes(options.filter)) continue
          const path = relative(process.cwd(), scenario.dir) || scenario.dir
          yield await runScenario(scenario, path)
        }
      }
    },
  }
}

/** One step of a recorded driver script (`input.json`). */
interface DriverStep { readonly op: string; readonly text?: string; readonly content?: unknown; readonly waitForFile?: { readonly path?: unknown } }

interface Plan {
  readonly header: SessionHeader
  readonly events: readonly SessionEvent[]
  /** A crashed log to resume from (before repair), and whether the seed closes with session/end-seed. */
  readonly seed?: { readonly crashed: readonly SessionEvent[]; readonly endSeed: boolean }
  readonly prompts: readonly UserMessage[]
  /** Per prompt with stored images: the driver's content with the images inline (stored by the replay). */
  readonly inlineContent: ReadonlyMap<number, readonly ContentBlock[]>
  /** Per prompt: cancel when its model call hangs. */
  readonly cancels: ReadonlySet<number>
  /**
   * Per cancelled prompt: the file (relative to the workspace) whose appearance is the cancel
   * point too: a tool of the turn writes it, so the turn can be cancelled while tools run.
   */
  readonly cancelFiles: ReadonlyMap<number, string>
  readonly script: readonly ReplayEntry[]
  /** Model calls outside the loop (compaction summaries), from the recorded compaction/summary events. */
  readonly auxiliary: readonly ReplayEntry[]
  readonly compaction: boolean
  readonly route: { provider: string; model: string }
  readonly cwd: string | undefined
  /** Hook files of the workspace, loaded as the original ACP composition did (`./hooks.json`, `./codex-hooks.json`). */
  readonly hooks: readonly HookFileSource[]
  /** The recording had the skills plugin (a catalog message or a skill call). */
  readonly skills: boolean
  /** The recording has goal events or goal tools. */
  readonly goals: boolean
  /** How the recording presented tools, where it ran programs (`run_code`). */
  readonly codeMode?: 'code' | 'both'
  /** Origins the recorded `web_fetch` calls fetch from: a local page server answers for them. */
  readonly fetched: readonly string[]
  /**
   * A test fixture's compaction while a tool ran (`compactionId: workspace-context-fixture`, no
   * compaction events): the recorded message, appended again when that call executes.
   */
  readonly fixtureCompactions: ReadonlyMap<string, SessionEvent>
  /** The recorded effort of each step of a turn whose steps asked with different efforts (./step-efforts.ts). */
  readonly stepEfforts: ReadonlyMap<string, string | undefined>
  /** The recording had the workspace-instructions plugin: its project markers (from the baseline identity). */
  readonly instructions?: { readonly projectMarkers: readonly string[] }
  /** Recorded child logs (`session.N.jsonl`, N = creation order) and their model scripts. */
  readonly children: readonly ChildPlan[]
  readonly delegationRows: readonly SubagentToolRow[]
  /**
   * The recording delivered a settlement notice to an idle parent (`next-turn`): continuable
   * children then wait at their step boundary until the parent is idle (the recorder's fence).
   */
  readonly fenceChildren: boolean
  /** The recorded deployment's permission knobs (from its runtime-context sections) and approval answers. */
  readonly permissions?: Permissions
  /** The product-subagent tools of the recorded composition (`./product-subagents.ts`). */
  readonly products?: ProductRows
}

interface Permissions {
  readonly mode: SandboxMode
  readonly policy: ApprovalPolicy
  /** input.json `permissionAnswers`, in order (`allow_once` allows; anything else rejects). */
  readonly answers: readonly { kind: string }[]
  /** A test-only runner for scenarios that record a runner the machine cannot reproduce. */
  readonly runner?: SandboxRunner
}

const KNOB_EVENTS = new Set(['sandbox/mode', 'approval/policy', 'permission/preset'])

/** The deployment default the recording ran with, read back from its first snapshot's sections. */
export function recordedPermissions(events: readonly SessionEvent[]): { mode: SandboxMode; policy: ApprovalPolicy } | undefined {
  for (const event of events) {
    if (event.type !== 'user/message' || !isRuntimeContextSnapshot(event.data as UserMessage)) continue
    const sections = snapshotSections(event.data as UserMessage)
    const sandbox = sections.find(s => s.name === SANDBOX_POLICY_CONTEXT)?.text.match(/^Current DSH file policy: ([a-z-]+)\./)?.[1]
    const approval = sections.find(s => s.name === APPROVAL_POLICY_CONTEXT)?.text
    if (!isSandboxMode(sandbox) || approval === undefined) return undefined
    return { mode: sandbox, policy: approval.startsWith('Approval policy: ask.') ? 'ask' : 'never' }
  }
  return undefined
}

/**
 * partial-landlock-child-failure records a Landlock launcher on an older kernel ABI: a test
 * launcher prints the same notice and runs the command (the notice alone is no runner failure).
 */
export function recordedRunner(dir: string): { runner: SandboxRunner; command: readonly string[] } | undefined {
  if (basename(dir) !== 'partial-landlock-child-failure') return undefined
  const command = ['sh', '-c', `echo "${LANDLOCK_PARTIAL_NOTICE}" >&2; shift 5; exec "$@"`, 'landlock-run']
  return { runner: landlockRunner(command, { enforcement: 'partial' }), command }
}

/** Why the scenario cannot run here, or the plan to run it. */
function plan(scenario: Scenario): string | Plan {
  const dir = scenario.dir
  const files = readdirSync(dir)
  const childFiles = files.filter(name => /^session\.\d+\.jsonl$/.test(name))
    .sort((a, b) => Number(a.split('.')[1]) - Number(b.split('.')[1]))
  const children: Plan['children'][number][] = []
  for (const file of childFiles) {
    const child = parseSessionFile(readFileSync(join(dir, file), 'utf8'))
    const own = child.events.slice(child.header.seedLength ?? 0)
    const problem = unsupported(own)
    if (problem !== undefined) return `${problem} in ${file}`
    // A turn that ended with an error before its first step failed its durability checkpoint:
    // the replay injects that failure at the turn's first pre-step (test-only, docs/conformance.md).
    const failTurns = new Map<number, string>()
    let stepped = false
    for (const event of own) {
      if (event.type === 'turn/start') stepped = false
      else if (event.type === 'step/start') stepped = true
      else if (event.type === 'turn/end' && !stepped) {
        const ended = event.data as { turn: number; reason: { kind: string; error?: { message: string } } }
        if (ended.reason.kind === 'error' && ended.reason.error !== undefined) failTurns.set(ended.turn, ended.reason.error.message)
      }
    }
    // A child log of model chunks alone is a replay script (a Ralph round's), not a causal log: nothing to compare.
    const scriptOnly = !own.some(event => event.type === 'turn/start') && own.some(event => event.type === 'assistant/chunk')
    const failPublished = !scriptOnly && !own.some(event => event.type === 'turn/start')
    children.push({ file, header: child.header, events: child.events, script: scriptFromEvents(own), failTurns, failPublished, scriptOnly })
  }
  let log = scenario.log
  let parsed = parseSessionFile(readFileSync(log, 'utf8'))
  // A header-only session.jsonl beside session.expected.jsonl (override-driven): that one is compared.
  if (!parsed.events.some(e => e.type === 'turn/start') && files.includes('session.expected.jsonl') && files.includes('replay.override.json')) {
    log = join(dir, 'session.expected.jsonl')
    parsed = parseSessionFile(readFileSync(log, 'utf8'))
  }
  // A header-only session.jsonl of a headless run recorded as its stream: the stream's events are compared.
  let streamRoute: { provider: string; model: string } | undefined
  if (!parsed.events.some(e => e.type === 'turn/start') && files.includes('stream-json.expected.jsonl') && files.includes('replay.override.json')) {
    const lines = readFileSync(join(dir, 'stream-json.expected.jsonl'), 'utf8').split('\n').filter(line => line.trim() !== '').map(line => JSON.parse(line) as { type?: string; event?: SessionEvent })
    parsed = { ...parsed, events: lines.filter(line => line.type === 'session_event' && line.event !== undefined).map(line => line.event!) }
    const header = parsed.events.find(e => e.type === 'request/header')?.data as { header?: { config?: { provider: string; model: string } } } | undefined
    streamRoute = header?.header?.config
  }
  const events = parsed.events
  if (!events.some(e => e.type === 'turn/start')) return 'no recorded turn (header-only or protocol-only log)'
  // A seeded log: everything before session/end-seed was there before this runtime started.
  const endSeed = events.findIndex(e => e.type === 'session/end-seed')
  const seedLength = endSeed < 0 ? 0 : endSeed + 1
  let seed: Plan['seed']
  if (endSeed >= 0) {
    let crashed = endSeed
    while (crashed > 0 && isRepairCloser(events[crashed - 1]!)) crashed--
    seed = { crashed: events.slice(0, crashed), endSeed: true }
  }
  const problem = unsupported(events.slice(seedLength))
  if (problem !== undefined) return problem
  let ops: DriverStep[] = []
  let answers: { kind: string }[] = []
  if (files.includes('input.json')) {
    const input = JSON.parse(readFileSync(join(dir, 'input.json'), 'utf8')) as { steps: DriverStep[]; permissionAnswers?: { kind: string }[] }
    ops = input.steps
    answers = input.permissionAnswers ?? []
    const unsupported = ops.find(step => !SUPPORTED_OPS.has(step.op))
    if (unsupported !== undefined) return `missing capability: driver op ${unsupported.op}`
  }
  // The recorded prompts: user-sourced messages inserted into the inbox.
  const prompts: UserMessage[] = []
  for (const event of events.slice(seedLength)) {
    if (event.type !== 'agent/inbox/spliced') continue
    for (const message of (event.data as { inserted: UserMessage[] }).inserted) if (message.source.kind === 'user') prompts.push(message)
  }
  const promptOps = ops.filter(step => step.op.startsWith('prompt'))
  // A prompt whose recorded images reference the attachment store is sent as the driver sent it
  // (inline ACP image blocks), so the replay stores the images and must reference them alike.
  const inlineContent = new Map<number, ContentBlock[]>()
  for (const [i, prompt] of prompts.entries()) {
    if (!prompt.content.some(block => block.type === 'image' && 'attachment' in block)) continue
    const step = promptOps[i]
    if (step?.op !== 'promptContent' || !Array.isArray(step.content)) return 'missing capability: image attachments (the recorded image block references an attachment store, and the driver script has no inline image to store)'
    inlineContent.set(i, toContentBlocks(step.content as Parameters<typeof toContentBlocks>[0]))
  }
  const cancels = new Set<number>()
  const cancelFiles = new Map<number, string>()
  promptOps.forEach((step, i) => {
    if (step.op !== 'promptAndCancel') return
    cancels.add(i)
    const path = step.waitForFile?.path
    if (typeof path === 'string') cancelFiles.set(i, path)
  })
  // A bare `cancel` (goal rounds): cancel the turn that hangs after the last prompt.
  let prompted = -1
  for (const step of ops) {
    if (step.op.startsWith('prompt')) prompted++
    else if (step.op === 'cancel' && prompted >= 0) {
      cancels.add(prompted)
      const path = step.waitForFile?.path
      if (typeof path === 'string') cancelFiles.set(prompted, path)
    }
  }
  const replayLog = join(dir, 'replay.jsonl')
  let script = existsSync(replayLog) ? scriptFromEvents(parseSessionFile(readFileSync(replayLog, 'utf8')).events) : scriptFromEvents(events.slice(seedLength))
  const overridePath = join(dir, 'replay.override.json')
  if (existsSync(overridePath)) {
    const derived = script
    script = applyOverride(script, JSON.parse(readFileSync(overridePath, 'utf8')))
    // A hang without chunks of its own streams the recorded prefix of the cancelled attempt.
    script = script.map((entry, i) => entry.kind === 'hang' && entry.chunks === undefined && derived[i] !== undefined
      ? { ...entry, chunks: derived[i]!.kind === 'throw' ? [] : derived[i]!.chunks ?? [] } : entry)
  }
  const route = streamRoute ?? recordedRoute(readFileSync(log, 'utf8')) ?? { provider: 'replay', model: 'replay' }
  const auxiliary: ReplayEntry[] = []
  for (const [index, event] of events.entries()) {
    if (event.type === TITLE_REQUEST_EVENT) {
      // The title call's answer: the model title recorded after it, else (no title: the call
      // failed) the recorded mock's answer to every call, its first response (a tool call).
      const titled = events.slice(index).find(later => later.type === 'session/title' && (later.data as { source: { kind: string } }).source.kind === 'provider')
      const title = (titled?.data as { title?: string } | undefined)?.title
      auxiliary.push(title !== undefined
        ? { kind: 'chunks', chunks: [{ type: 'text-delta', index: 0, text: title }, { type: 'finish', reason: { kind: 'stop' } }] }
        : script[0] ?? { kind: 'chunks', chunks: [{ type: 'finish', reason: { kind: 'error', message: 'no recorded title' } as never }] })
      continue
    }
    if (event.type !== 'compaction/summary') continue
    const data = event.data as { summary: { type: string; text?: string }[]; rawOutput?: { type: string; text?: string }[]; usage?: TokenUsage }
    const text = (data.rawOutput ?? data.summary).map(block => block.text ?? '').join('')
    auxiliary.push({ kind: 'chunks', chunks: [
      { type: 'text-delta', index: 0, text },
      ...(data.usage !== undefined ? [{ type: 'usage', usage: data.usage } as const] : []),
      { type: 'finish', reason: { kind: 'stop' } },
    ] })
  }
  const compaction = events.some(e => e.type.startsWith('compaction/'))
  const goals = events.some(e => e.type === 'goal/change' || (e.type === 'tool/call' && /_goal$/.test((e.data as { name: string }).name)))
  const hooks = workspaceHookFiles(join(dir, 'workspace'))
  const skills = events.some(e => (e.type === 'user/message' && isSkillCatalog(e.data as UserMessage)) || (e.type === 'tool/call' && (e.data as { name: string }).name === 'skill'))
  const fenceChildren = events.some(event => event.type === 'agent/inbox/spliced'
    && (event.data as { target: string; inserted: UserMessage[] }).target === 'next-turn'
    && (event.data as { inserted: UserMessage[] }).inserted.some(message => message.source.kind === ('subagent-settled' as never)))
  const delegationRows = DELEGATION_ROWS[basename(dir)] ?? (dir.includes('jsonrpc-agent') || dir.includes('python-sdk-single-exe') ? SDK_TOOL_ROWS : DEFAULT_TOOL_ROWS)
  // The permission plugins run where the recording depends on them: a confining or asking
  // default, or knob events in the log. A danger-full-access + never recording (most of the
  // corpus) behaves as if they were absent and is replayed without them.
  const recordedKnobs = recordedPermissions(events)
  // A hook's `ask` (HK-6) reaches the approval seam even under danger-full-access + never.
  const knobs = recordedKnobs !== undefined && (recordedKnobs.mode !== 'danger-full-access' || recordedKnobs.policy !== 'never' || events.some(event => KNOB_EVENTS.has(event.type) || event.type === 'approval/asked'))
    ? recordedKnobs : undefined
  const runner = recordedRunner(dir)?.runner
  const permissions: Permissions | undefined = knobs === undefined ? undefined : { ...knobs, answers, ...(runner !== undefined ? { runner } : {}) }
  const products = recordedProductRows(dir, events)
  return {
    ...(products !== undefined ? { products } : {}),
    header: parsed.header, events, ...(seed !== undefined ? { seed } : {}), prompts, inlineContent, cancels, cancelFiles, script, auxiliary, compaction, route, cwd: parsed.header.cwd,
    children, delegationRows, fenceChildren, hooks, skills, goals, ...(calls(events, RUN_CODE) ? { codeMode: recordedPresentation(dir, events) } : {}), fetched: fetchedOrigins(events), fixtureCompactions: fixtureCompactions(events), stepEfforts: stepEfforts(events), ...recordedInstructions(events), ...(permissions !== undefined ? { permissions } : {}),
  }
}

/**
 * An injected checkpoint failure ends the turn as dsh words a failed pre-step (its own code, the
 * hook named); compare it as the recorded failure carrying the injected message.
 */
function unwrapInjected(events: readonly SessionEvent[], failTurns: ReadonlyMap<number, string>): readonly SessionEvent[] {
  if (failTurns.size === 0) return events
  return events.map(event => {
    if (event.type !== 'turn/end') return event
    const data = event.data as { turn: number; reason: { kind: string; error?: { code: string; message: string } } }
    const message = failTurns.get(data.turn)
    if (message === undefined || data.reason.kind !== 'error' || data.reason.error?.code !== 'PRE_STEP_FAILED' || !data.reason.error.message.endsWith(`: ${message}`)) return event
    return { ...event, data: { turn: data.turn, reason: { kind: 'error', error: { message, code: 'UNKNOWN' } } } } as SessionEvent
  })
}

/** The first recorded event naming something the suite cannot replay, as a SKIP reason. */
function unsupported(events: readonly SessionEvent[]): string | undefined {
  const dynamic = calls(events, 'cordis_run')
  for (const [index, event] of events.entries()) {
    if (MASKED.has(event.type)) continue
    const lacking = CAPABILITIES.find(([prefix]) => event.type.startsWith(prefix))
    if (lacking !== undefined) return `missing capability: ${lacking[1]} (recorded ${event.type})`
    if (!COMPARED.has(event.type) && !MASKED.has(event.type)) return `missing capability: event ${event.type}`
    if (event.type === 'tool/call' || event.type === 'tool/code-dispatch-start') {
      const name = (event.data as { name: string }).name
      // A tool a running model-written plugin registered (cordis_run before it) is the recording's own.
      if (!BUILTIN_TOOLS.has(name) && !isProductTool(name) && !(dynamic && calls(events.slice(0, index), 'cordis_run'))) return `missing capability: tool ${name}`
    }
    if (event.type === 'user/message' && isInstructionsMessage(event.data as UserMessage)) continue
    if (event.type === 'user/message' && (event.data as UserMessage).source.kind !== 'user' && !isRuntimeContextSnapshot(event.data as UserMessage) && !isCompactionMessage(event.data as UserMessage) && !isDelegationMessage(event.data as UserMessage) && !isHookMessage(event.data as UserMessage) && !isSkillCatalog(event.data as UserMessage) && !isGoalMessage(event.data as UserMessage) && !isCodeModeMessage(event.data as UserMessage) && !isJobNotice(event.data as UserMessage)) {
      const source = (event.data as UserMessage).source as { kind: string; plugin?: string }
      return `missing capability: plugin-authored messages (source ${source.plugin ?? source.kind})`
    }
  }
  return undefined
}

/** The project markers of the recorded instructions plugin (its baseline identity), when it ran. */
function recordedInstructions(events: readonly SessionEvent[]): { instructions?: { projectMarkers: readonly string[] } } {
  const messages = events.filter(e => e.type === 'user/message' && isInstructionsMessage(e.data as UserMessage)).map(e => e.data as UserMessage)
  if (messages.length === 0) return {}
  for (const message of messages) {
    const identity = (message.source as { baselineIdentity?: unknown }).baselineIdentity
    if (typeof identity !== 'string') continue
    try {
      const markers = (JSON.parse(identity) as { projectRootMarkers?: unknown }).projectRootMarkers
      if (Array.isArray(markers) && markers.every(m => typeof m === 'string')) return { instructions: { projectMarkers: markers as string[] } }
    } catch {
      // Not the recorded shape: the default markers.
    }
  }
  return { instructions: { projectMarkers: ['.git'] } }
}

/** The closers crash repair appends (C-2, C-3): interrupted tool results, step/end, turn/end interrupted. */
function isRepairCloser(event: SessionEvent): boolean {
  const data = event.data as { reason?: { kind?: string }; error?: { code?: string } }
  if (event.type === 'turn/end') return data.reason?.kind === 'interrupted'
  if (event.type === 'step/end') return true
  return event.type === 'tool/result' && (data.error?.code === TOOL_OUTCOME_UNKNOWN || data.error?.code === 'TOOL_NOT_STARTED')
}

async function runScenario(scenario: Scenario, path: string): Promise<ConformanceResult> {
  let planned: string | Plan
  try {
    planned = plan(scenario)
  } catch (error) {
    return { suite: 'replay', status: 'fail', path, detail: `cannot read the scenario: ${error instanceof Error ? error.message : String(error)}` }
  }
  if (typeof planned === 'string') return { suite: 'replay', status: 'skip', path, detail: planned }
  const work = mkdtempSync(join(tmpdir(), 'dsh-replay-'))
  const ctx = new Context()
  try {
    const workspace = join(scenario.dir, 'workspace')
    if (existsSync(workspace)) cpSync(workspace, work, { recursive: true })
    recreateOmittedScripts(work)
    recreateSampledTree(work, basename(scenario.dir))
    recreateOmittedSkills(work, planned.events)
    restoreInstructionSymlinks(work)
    recreateOmittedInstructions(work, planned.events)
    recreateReadFiles(work, planned.events)
    recreateLspSubjects(work, planned.events)
    const events = await replay(ctx, planned, work)
    const difference = firstDifference(project(planned.events, planned.header.cwd, planned.permissions !== undefined), project(events.log, work, planned.permissions !== undefined))
    if (difference !== undefined) return { suite: 'replay', status: 'fail', path, detail: difference }
    if (events.children.length !== planned.children.length) {
      return { suite: 'replay', status: 'fail', path, detail: `${planned.children.length} child log(s) recorded, ${events.children.length} child session(s) created` }
    }
    for (const [i, child] of planned.children.entries()) {
      if (child.scriptOnly) continue
      const childDifference = firstDifference(project(child.events), project(unwrapInjected(events.children[i]!, child.failTurns)))
      if (childDifference !== undefined) return { suite: 'replay', status: 'fail', path, detail: `${child.file}: ${childDifference}` }
    }
    const leftover = events.leftover.filter(entry => entry.remaining > 0)
    if (leftover.length > 0) {
      return { suite: 'replay', status: 'fail', path, detail: `${leftover[0]!.remaining} recorded model call(s) left over` }
    }
    return { suite: 'replay', status: 'pass', path }
  } catch (error) {
    return { suite: 'replay', status: 'fail', path, detail: error instanceof Error ? error.message : String(error) }
  } finally {
    rmSync(work, { recursive: true, force: true })
  }
}

interface Replayed {
  readonly log: readonly SessionEvent[]
  /** Child sessions in creation order. */
  readonly children: readonly (readonly SessionEvent[])[]
  readonly leftover: { remaining: number }[]
}

/** The recording calls the tool `name`, directly or from a program (its composition loaded it). */
function calls(events: readonly SessionEvent[], name: string): boolean {
  return events.some(e => (e.type === 'tool/call' || e.type === 'tool/code-dispatch-start') && (e.data as { name: string }).name === name)
}


async function replay(ctx: Context, plan: Plan, cwd: string): Promise<Replayed> {
  let hung: (() => void) | undefined
  // Child N's script is bound to the N-th child session when it is created (ids are random).
  const sessions: Record<string, readonly ReplayEntry[]> = {}
  // The recorded web_fetch calls reach a local page server (tools/builtin/web-fetch `fetch`).
  const pages: PageServer | undefined = plan.fetched.length > 0 || calls(plan.events, 'web_fetch')
    ? await startPageServer(plan.fetched) : undefined
  const adapter = new ReplayAdapter({
    provider: plan.route.provider,
    sessions,
    default: plan.script,
    auxiliary: plan.auxiliary,
    cwdOf: () => cwd,
    onHang: () => hung?.(),
  })
  const fibers = [
    ctx.plugin(SessionsServicePlugin),
    ctx.plugin(LlmServicePlugin),
    ctx.plugin(ToolsPlugin),
    ctx.plugin(LoopInvariantPlugin),
    ctx.plugin(ReactLoopPlugin),
    ctx.plugin(AgentsServicePlugin, { loop: { provider: plan.route.provider, model: plan.route.model } }),
    ctx.plugin(LlmRetryPlugin, { sleep: async () => {} }),
    // The recorded permission knobs: approvals, the sandbox and the knob runtime contexts.
    ...(plan.permissions !== undefined ? [
      ctx.plugin(SystemPromptPlugin),
      ctx.plugin(ApprovalPlugin, { mode: plan.permissions.mode, policy: plan.permissions.policy }),
      ctx.plugin(SandboxPlugin, plan.permissions.runner !== undefined ? { runner: plan.permissions.runner, runners: [] } : {}),
    ] : []),
    ctx.plugin(BuiltinToolsPlugin),
    ...(pages !== undefined ? [ctx.plugin(WebFetchToolPlugin, { fetch: pages.fetch })] : []),
    ...(calls(plan.events, 'session_event_read') ? [ctx.plugin(SessionEventReadToolPlugin)] : []),
    // Background jobs only where the recording used them (the tools change every request's list).
    ...(['job_output', 'job_kill', 'job_list'].some(name => calls(plan.events, name)) ? [ctx.plugin(JobsPlugin)] : []),
    ...(PTY_TOOL_NAMES.some(name => calls(plan.events, name)) ? [ctx.plugin(PtyPlugin)] : []),
    ...productPlugins(ctx, plan.products),
    // Offered to every agent, as the recordings had it (a text-only route then refuses the call).
    ...(calls(plan.events, 'read_image') ? [ctx.plugin(ReadImageToolPlugin, { always: true })] : []),
    ...(plan.instructions !== undefined ? [ctx.plugin(WorkspaceInstructionsPlugin, { projectMarkers: plan.instructions.projectMarkers })] : []),
    ...(plan.compaction ? [ctx.plugin(CompactionPlugin)] : []),
    ...(plan.hooks.length > 0 ? [ctx.plugin(HooksPlugin, { cwd, files: plan.hooks, discover: false })] : []),
    // Only the workspace's skills: no user or home roots.
    ...(plan.skills ? [ctx.plugin(SkillsPlugin, { cwd, agentsHome: join(cwd, '.no-agents-home'), claudeHome: join(cwd, '.no-claude-home') })] : []),
    ctx.plugin(SubagentsPlugin),
    ctx.plugin(SubagentToolsPlugin, { tools: plan.delegationRows }),
    ctx.plugin(QuestionToolPlugin),
    ...(plan.goals ? [ctx.plugin(GoalsPlugin)] : []),
    // Model titles where the recording asked for one (the original's base bundle, headless-profile).
    ...(plan.events.some(event => event.type === TITLE_REQUEST_EVENT) ? [ctx.plugin(SessionTitlePlugin)] : []),
    ...(calls(plan.events, 'workflow') || calls(plan.events, 'ralph') ? [ctx.plugin(WorkflowPlugin)] : []),
    // Code mode as recorded; programs run in a worker (the recordings ran unconfined).
    ...(plan.codeMode !== undefined ? [ctx.plugin(CodeModePlugin, { mode: plan.codeMode, runtime: 'worker' })] : []),
    ...(CORDIS_TOOL_NAMES.some(name => calls(plan.events, name)) ? [ctx.plugin(CordisDynamicPlugin)] : []),
    ...(calls(plan.events, 'lsp') ? [ctx.plugin(LspPlugin)] : []),
  ]
  const children: { events: readonly SessionEvent[] }[] = []
  ctx.on('session/created', (session) => {
    if (session.header.parentSession === undefined) return
    const recorded = plan.children[children.length]
    // No recorded child for it: an empty script, so its first call fails loudly.
    sessions[session.id] = recorded?.script ?? []
    children.push(session)
  })
  if (plan.fenceChildren) {
    ctx.on('agent/pre-step', async (payload, next) => {
      const parentId = payload.session.header.parentSession
      const first = payload.session.events[0]
      const continuable = first?.type === 'subagent/descriptor' && (first.data as { mode?: string }).mode === 'continuable'
      if (parentId !== undefined && continuable) await ctx.agents.get(parentId)?.whenIdle()
      return next()
    })
  }
  try {
    for (const fiber of fibers) await fiber.await()
    ctx.llm.register({ adapter, models: [replayModelInfo(plan.route.provider, plan.route.model, plan.stepEfforts.size > 0 ? { reasoningEfforts: REASONING_EFFORTS } : {})] })
    if (plan.permissions !== undefined) {
      // The recorded client's answers, in order; none left is a cancelled prompt.
      const answers = [...plan.permissions.answers]
      ctx.approval.answerer(() => {
        const answer = answers.shift()
        return answer === undefined ? 'cancelled' : answer.kind === 'allow_once' ? 'allowed-once' : 'rejected'
      })
    }
    // The recording's per-step effort policy (headless-profile), as a request-config listener.
    if (plan.stepEfforts.size > 0) {
      ctx.on('agent/request-config', (payload, next) => {
        const key = `${payload.turn}:${payload.step}`
        if (!plan.stepEfforts.has(key)) return next()
        const { reasoningEffort: _own, ...config } = next()
        const recorded = plan.stepEfforts.get(key)
        // `off` (or none) asks without thinking, as the recorded adapter maps it.
        return REASONING_EFFORTS.includes(recorded as never) ? { ...config, reasoningEffort: recorded as ReasoningEffort } : { ...config, thinking: false }
      })
    }
    // Test-only: the recording's fixture compaction, appended again as its tool call executes.
    if (plan.fixtureCompactions.size > 0) {
      ctx.on('tools/execute', (execution, context, next) => {
        const recorded = plan.fixtureCompactions.get(execution.callId)
        if (recorded !== undefined) {
          context.session?.append('user/message', ...appendArgs(recorded))
        }
        return next()
      })
    }
    // Children get the recorded ids in creation order: model arguments name them (send_message).
    let created = 0
    let current: ChildPlan | undefined
    const recordedId = () => (current = plan.children[created++])?.header.id
    // A recorded failed checkpoint: the child's turn fails at its first pre-step with the message.
    const failing = new Map<string, ChildPlan>()
    ctx.on('session/created', (session) => { if (current !== undefined && current.failTurns.size > 0) failing.set(session.id, current) })
    ctx.on('agent/pre-step', async (payload, next) => {
      const message = payload.step === 1 ? failing.get(payload.session.id)?.failTurns.get(payload.turn) : undefined
      if (message !== undefined) throw new Error(message)
      return next()
    })
    for (const provider of [spawnProvider(ctx, { id: recordedId }), forkProvider(ctx, { id: recordedId })]) {
      ctx.subagents.provider({
        name: provider.name,
        createSession(request) {
          const session = provider.createSession(request)
          if (current?.failPublished === true) ctx.sessions.close(session.id)
          return session
        },
      })
    }
    const result = await drive(ctx, plan, cwd, adapter, (resolve) => { hung = resolve })
    return { ...result, children: children.map(child => [...child.events]) }
  } finally {
    for (const fiber of fibers.reverse()) await fiber.dispose()
    await pages?.close()
  }
}

/** A scenario that does not settle in this time fails instead of hanging the run. */
const SCENARIO_TIMEOUT_MS = 60_000

async function drive(
  ctx: Context, plan: Plan, cwd: string, adapter: ReplayAdapter, onHang: (resolve: () => void) => void,
): Promise<{ log: readonly SessionEvent[]; leftover: { remaining: number }[] }> {
  let sessionId: string | undefined
  if (plan.seed !== undefined) {
    // Cold load of the crashed log: hydrate, then the repair closers (C-1..C-4), then the seed marker.
    const header: SessionHeader = { ...plan.header, id: 'replay-resume', cwd }
    const crashed = plan.seed.crashed
    const session = ctx.sessions.hydrate(header, [...crashed, ...interruptedTurnClosers(crashed)])
    if (plan.seed.endSeed) session.append('session/end-seed', {})
    sessionId = session.id
  }
  const agent = ctx.agents.create(sessionId !== undefined ? { sessionId } : { cwd })
  // Knob switches recorded before the first turn (a user picking a preset) are input: replay them.
  const firstTurn = plan.events.findIndex(event => event.type === 'turn/start')
  for (const event of plan.events.slice(plan.seed !== undefined ? plan.seed.crashed.length : 0, firstTurn < 0 ? 0 : firstTurn)) {
    if (KNOB_EVENTS.has(event.type)) agent.session.append(event.type, event.data)
  }
  try {
    for (let i = 0; i < plan.prompts.length; i++) {
      const prompt = plan.prompts[i]!
      const file = plan.cancelFiles.get(i)
      const appeared = file !== undefined ? fileAppears(cwd, file) : undefined
      const hang = plan.cancels.has(i)
        ? Promise.race([new Promise<void>(resolve => onHang(resolve)), ...(appeared !== undefined ? [appeared.promise] : [])])
        : undefined
      const inline = plan.inlineContent.get(i)
      agent.followup(inline === undefined ? prompt : { ...prompt, content: await storeInlineImages(ctx, agent.session.id, inline) })
      if (hang !== undefined) {
        try {
          const what = file !== undefined ? `a hanging model call, or ${file} written by a tool` : 'a hanging model call'
          await settle(hang, () => agent.cancel(), `prompt ${i + 1}: the recorded cancel point (${what}) never came`)
        } finally {
          appeared?.close()
        }
        agent.cancel()
      }
      await settle(ctx.subagents.whenQuiet(agent.id), () => agent.cancel(), `prompt ${i + 1}: the turn did not finish (a recorded hang without a cancel step?)`)
    }
    return { log: agent.session.events, leftover: adapter.leftover() }
  } finally {
    await agent.dispose()
  }
}

/** Resolves once `path` (relative to `root`) exists; watches the folder instead of polling. */
function fileAppears(root: string, path: string): { promise: Promise<void>; close(): void } {
  const target = join(root, path)
  let watcher: FSWatcher | undefined
  const promise = new Promise<void>((resolve) => {
    const check = () => { if (existsSync(target)) resolve() }
    watcher = watch(root, { recursive: true }, check)
    check()
  })
  return { promise, close: () => watcher?.close() }
}

async function settle(work: Promise<void>, giveUp: () => void, message: string): Promise<void> {
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<'timeout'>(resolve => { timer = setTimeout(() => resolve('timeout'), SCENARIO_TIMEOUT_MS) })
  try {
    if (await Promise.race([work.then(() => 'done' as const), timeout]) === 'timeout') {
      giveUp()
      throw new Error(`${message}; gave up after ${SCENARIO_TIMEOUT_MS / 1000} s`)
    }
  } finally {
    clearTimeout(timer)
  }
}

// ---- the core projection ----
