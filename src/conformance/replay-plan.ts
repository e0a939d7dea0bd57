/**
 * The replay suite's plans: which recorded folders it replays, what a recording needs that dsh
 * lacks (a skip, with the reason), and what a replay follows: the recorded prompts and driver
 * steps, model calls, children, permission knobs, sandbox runner, composition facts.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { findScenarioDirs } from './discover.js'
import { basename, join } from 'node:path'
import { TITLE_REQUEST_EVENT } from '../title/index.js'
import { applyOverride, recordedRoute, scriptFromEvents, type ReplayEntry } from '../replay/index.js'
import type { ContentBlock, TokenUsage, UserMessage } from '../llm/types.js'
import { toContentBlocks } from '../acp/server.js'
import { parseSessionFile } from '../session/codec.js'
import { TOOL_OUTCOME_UNKNOWN } from '../session/index.js'
import type { SessionEvent, SessionHeader } from '../session/types.js'
import { type HookFileSource } from '../hooks/index.js'
import { APPROVAL_POLICY_CONTEXT, SANDBOX_POLICY_CONTEXT, type ApprovalPolicy } from '../approval/index.js'
import { isSandboxMode, landlockRunner, LANDLOCK_PARTIAL_NOTICE, type SandboxMode, type SandboxRunner } from '../sandbox/index.js'
import { DEFAULT_TOOL_ROWS, type SubagentToolRow } from '../subagents/index.js'
import { BUILTIN_TOOLS, CAPABILITIES, COMPARED, MASKED, pwshMissing, recordedPresentation, RUN_CODE, SUPPORTED_OPS } from './replay-rules.js'
import { fixtureCompactions } from './fixture-compaction.js'
import { stepEfforts } from './step-efforts.js'
import { workspaceHookFiles } from './workspace.js'
import { fetchedOrigins } from './page-server.js'
import { isJobNotice, isProductTool, recordedProductRows, type ProductRows } from './product-subagents.js'
import { isCodeModeMessage, isCompactionMessage, isDelegationMessage, isGoalMessage, isHookMessage, isInstructionsMessage, isRuntimeContextSnapshot, isSkillCatalog, snapshotSections } from './replay-project.js'

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

/**
 * A recorded child log. A child log without any turn (its run failed right after the session
 * was published) needs test-only injection (docs/conformance.md): its session is closed as soon
 * as it is created, so starting its agent fails.
 */
export interface ChildPlan {
  readonly file: string
  readonly header: SessionHeader
  readonly events: readonly SessionEvent[]
  readonly script: readonly ReplayEntry[]
  readonly failTurns: ReadonlyMap<number, string>
  readonly failPublished: boolean
  /** Model chunks alone (a Ralph round's script): its session is not compared. */
  readonly scriptOnly: boolean
}

export interface Scenario {
  readonly dir: string
  readonly log: string
}

/**
 * Scenario directories: an `examples/` directory holding a recorded `session.jsonl`, or a resume
 * scenario (a seeded log continued by the runtime, scripted by `replay.jsonl`).
 */
export function findScenarios(root: string): Scenario[] {
  if (!statSync(root).isDirectory()) return []
  return findScenarioDirs<Scenario>(root, (dir, has) =>
    has('session.jsonl') ? { dir, log: join(dir, 'session.jsonl') }
      : has('session.expected.jsonl') && has('replay.jsonl') ? { dir, log: join(dir, 'session.expected.jsonl') }
        // A compared log alone (headless-profile): it is its own replay script.
        : has('session.expected.jsonl') ? { dir, log: join(dir, 'session.expected.jsonl') }
          : undefined)
}

/** One step of a recorded driver script (`input.json`). */
/**
 * `script` with the scenario's `replay.override.json` applied, when it has one; a hang without
 * chunks of its own streams the recorded prefix of the cancelled attempt.
 */
export function withOverride(dir: string, script: ReplayEntry[]): ReplayEntry[] {
  const overridePath = join(dir, 'replay.override.json')
  if (!existsSync(overridePath)) return script
  const derived = script
  return applyOverride(script, JSON.parse(readFileSync(overridePath, 'utf8'))).map((entry, i) => entry.kind === 'hang' && entry.chunks === undefined && derived[i] !== undefined
    ? { ...entry, chunks: derived[i]!.kind === 'throw' ? [] : derived[i]!.chunks ?? [] } : entry)
}

/**
 * The scenario's `input.json` driver script (its steps and recorded permission answers), none
 * when there is no such file, or the SKIP reason naming an op the suites do not play.
 */
export function driverScript<T extends { readonly op: string }>(dir: string, files: readonly string[]): { steps: T[]; answers: { kind: string }[] } | string | undefined {
  if (!files.includes('input.json')) return undefined
  const input = JSON.parse(readFileSync(join(dir, 'input.json'), 'utf8')) as { steps: T[]; permissionAnswers?: { kind: string }[] }
  const unsupported = input.steps.find(step => !SUPPORTED_OPS.has(step.op))
  if (unsupported !== undefined) return `missing capability: driver op ${unsupported.op}`
  return { steps: input.steps, answers: input.permissionAnswers ?? [] }
}

interface DriverStep { readonly op: string; readonly text?: string; readonly content?: unknown; readonly waitForFile?: { readonly path?: unknown } }

export interface Plan {
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

export const KNOB_EVENTS = new Set(['sandbox/mode', 'approval/policy', 'permission/preset'])

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
export function plan(scenario: Scenario): string | Plan {
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
  const driver = driverScript<DriverStep>(dir, files)
  if (typeof driver === 'string') return driver
  const { steps: ops, answers } = driver ?? { steps: [], answers: [] }
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
  const script = withOverride(dir, existsSync(replayLog) ? scriptFromEvents(parseSessionFile(readFileSync(replayLog, 'utf8')).events) : scriptFromEvents(events.slice(seedLength)))
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
export function unwrapInjected(events: readonly SessionEvent[], failTurns: ReadonlyMap<number, string>): readonly SessionEvent[] {
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
  const noPwsh = pwshMissing(events)
  if (noPwsh !== undefined) return noPwsh
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

/** The recording calls the tool `name`, directly or from a program (its composition loaded it). */
export function calls(events: readonly SessionEvent[], name: string): boolean {
  return events.some(e => (e.type === 'tool/call' || e.type === 'tool/code-dispatch-start') && (e.data as { name: string }).name === name)
}
