/**
 * The replay suite: for each recorded scenario whose behaviour dsh implements, run a fresh
 * session with the replay adapter (the recorded model calls) and the real built-in tools in a
 * temporary copy of the scenario's `workspace/`, feed the recorded user prompts (and the cancel
 * steps of `input.json`), then compare the new log with the recorded one on the core projection
 * (docs/conformance.md, "Replay suite"). Scenarios needing a capability dsh lacks are SKIP,
 * naming it; a mismatch prints the first difference.
 */
import { cpSync, existsSync, mkdtempSync, rmSync, watch, type FSWatcher } from 'node:fs'
import { tmpdir } from 'node:os'
import { basename, join, relative } from 'node:path'
import { Context } from 'cordis'
import { AgentsServicePlugin, LoopInvariantPlugin, ReactLoopPlugin } from '../agent/index.js'
import { LlmServicePlugin } from '../llm/index.js'
import { LlmRetryPlugin } from '../retry/index.js'
import { SessionTitlePlugin, TITLE_REQUEST_EVENT } from '../title/index.js'
import { ReplayAdapter, replayModelInfo, type ReplayEntry } from '../replay/index.js'
import { storeInlineImages } from '../sdk/images.js'
import { interruptedTurnClosers, SessionsServicePlugin } from '../session/index.js'
import type { SessionEvent, SessionHeader } from '../session/types.js'
import { BuiltinToolsPlugin } from '../tools/builtin/index.js'
import { JobsPlugin } from '../jobs/service.js'
import { PtyPlugin, PTY_TOOL_NAMES } from '../pty/index.js'
import { ReadImageToolPlugin } from '../images/read-image.js'
import { CompactionPlugin } from '../compaction/index.js'
import { ToolsPlugin } from '../tools/index.js'
import { HooksPlugin } from '../hooks/index.js'
import { ApprovalPlugin } from '../approval/index.js'
import { SystemPromptPlugin } from '../prompt/index.js'
import { SandboxPlugin } from '../sandbox/index.js'
import { forkProvider, spawnProvider, SubagentsPlugin, SubagentToolsPlugin } from '../subagents/index.js'
import type { ConformanceResult, ConformanceSuite } from './types.js'
import { CORDIS_TOOL_NAMES, persistentComposition } from './replay-rules.js'
import { appendArgs } from './fixture-compaction.js'
import type { ReasoningEffort } from '../llm/types.js'
import { recreateLspSubjects, recreateOmittedInstructions, recreateOmittedScripts, recreateReadFiles, restoreInstructionSymlinks, recreateOmittedSkills, recreateSampledTree } from './workspace.js'
import { SkillsPlugin } from '../skills/index.js'
import { QuestionToolPlugin } from '../questions/index.js'
import { GoalsPlugin } from '../goals/index.js'
import { WebFetchToolPlugin } from '../tools/builtin/web-fetch.js'
import { SessionEventReadToolPlugin } from '../tools/builtin/session-event-read.js'
import { startPageServer, type PageServer } from './page-server.js'
import { CodeModePlugin } from '../code-mode/index.js'
import { WorkflowPlugin } from '../workflow/index.js'
import { CordisDynamicPlugin } from '../cordis-dynamic/index.js'
import { LspPlugin } from '../lsp/index.js'
import { PersistentBashPlugin, PwshToolPlugin } from '../shell/index.js'
import { StrReplaceEditorToolPlugin } from '../tools/builtin/str-replace-editor.js'
import { WorkspaceInstructionsPlugin } from '../instructions/index.js'
import { productPlugins } from './product-subagents.js'
import { firstDifference, project } from './replay-project.js'
import { calls, type ChildPlan, findScenarios, KNOB_EVENTS, plan, type Plan, type Scenario, unwrapInjected } from './replay-plan.js'
export { isRuntimeContextSnapshot, project } from './replay-project.js'

/** The efforts a replayed route offers where the recording changed effort between steps. */
const REASONING_EFFORTS: readonly ReasoningEffort[] = ['low', 'medium', 'high', 'max']

export interface ReplaySuiteOptions {
  /** Only scenario directories whose path contains this string. */
  readonly filter?: string
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
    ...(persistentComposition(plan.events)
      ? [ctx.plugin(BuiltinToolsPlugin, { bash: false }), ctx.plugin(PersistentBashPlugin), ctx.plugin(StrReplaceEditorToolPlugin)]
      : [ctx.plugin(BuiltinToolsPlugin)]),
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
    ...(calls(plan.events, 'pwsh') ? [ctx.plugin(PwshToolPlugin)] : []),
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
