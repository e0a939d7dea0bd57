/**
 * Product subagents confined by the parent's sandbox (real bubblewrap): the CLI's own state goes
 * to a private folder made for the run, writable in read-only and workspace-write alike and gone
 * after it, while the user's product folders (`~/.codex`, `~/.claude`) stay read-only. The real
 * CLIs run against the local fake servers; a stand-in CLI (`product-state-probe.sh`) tries each
 * write and says what happened, as root and as an unprivileged uid.
 */
import { spawn, spawnSync } from 'node:child_process'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { chmodSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { afterAll, afterEach, describe, expect, it } from 'vitest'
import { loopHarness, type LoopHarness } from '../../test-support/agent-harness.js'
import { claudeCodeCli, codexCli } from '../../test-support/product-cli.js'
import { fakeMessagesServer, fakeResponsesServer, type FakeServer } from '../../test-support/product-fakes.js'
import type { SandboxedRun } from '../../test-support/product-sandbox-child.js'
import { text, toolCalls } from '../../test-support/scripted-model.js'
import type { ToolResultMessage } from '../llm/types.js'
import type { SandboxMode } from '../sandbox/modes.js'
import { ApprovalPlugin } from '../approval/service.js'
import { bwrapRunner, probeRunner } from '../sandbox/runner.js'
import { protectedMounts } from '../sandbox/protected.js'
import { SandboxPlugin } from '../sandbox/service.js'
import { ClaudeCodeSubagentPlugin, CodexSubagentPlugin, type ProductToolConfig } from './index.js'
import { hasSetpriv } from '../../test-support/processes.js'

const bwrapProblem = await probeRunner(bwrapRunner(), { root: '/', timeoutMs: 10_000 })
if (bwrapProblem !== undefined) console.warn(`skipping the sandboxed product-subagent tests: ${bwrapProblem} (install the Debian package bubblewrap and allow unprivileged user namespaces)`)
// Outside /tmp: workspace-write gives the sandbox a /tmp of its own, where neither the CLIs nor
// a home folder there would be seen.
const OUTSIDE_TMP = '/var/tmp'
const codex = bwrapProblem === undefined ? codexCli(OUTSIDE_TMP) : { reason: 'no sandbox' }
const claude = bwrapProblem === undefined ? claudeCodeCli(OUTSIDE_TMP) : { reason: 'no sandbox' }
if (codex.reason !== undefined) console.warn(`skipping the sandboxed Codex CLI tests: ${codex.reason}`)
if (claude.reason !== undefined) console.warn(`skipping the sandboxed Claude Code CLI tests: ${claude.reason}`)
const asRoot = process.getuid?.() === 0
const setpriv = hasSetpriv()
if (asRoot && !setpriv) console.warn('skipping the unprivileged-uid product-subagent tests: they need setpriv (util-linux) to drop to uid 65534')

const MODES: readonly SandboxMode[] = ['workspace-write', 'read-only']
// The stand-in CLI runs inside the sandbox: a copy outside /tmp, where a checkout in a temp
// folder (a clean clone in mktemp's folder) would be hidden by the sandbox's own /tmp.
const probeFolder = mkdtempSync(join(OUTSIDE_TMP, 'dsh-probe-cli-'))
chmodSync(probeFolder, 0o755)
const probe = join(probeFolder, 'product-state-probe.sh')
copyFileSync(join(import.meta.dirname, '../../test-support/product-state-probe.sh'), probe)
chmodSync(probe, 0o755)
afterAll(() => { rmSync(probeFolder, { recursive: true, force: true }) })
const child = join(import.meta.dirname, '../../test-support/product-sandbox-child.ts')

let h: LoopHarness | undefined
let server: FakeServer | undefined
const folders: string[] = []
afterEach(async () => {
  await h?.dispose()
  h = undefined
  await server?.close()
  server = undefined
  for (const folder of folders.splice(0)) rmSync(folder, { recursive: true, force: true })
})

/** A folder everyone may write without the sandbox (so only the sandbox can refuse a write). */
function folder(base: string, prefix: string): string {
  const dir = mkdtempSync(join(base, prefix))
  chmodSync(dir, 0o777)
  folders.push(dir)
  return dir
}

function resultOf(h: LoopHarness): { text: string; isError: boolean } {
  const block = (h.of('tool/result')[0]!.data as { message: ToolResultMessage }).message.content[0]!
  return { text: block.content.map(part => part.type === 'text' ? part.text : '').join(''), isError: block.isError }
}

/** The value of `name` in the environment the child process was started with. */
function environOf(pid: number, name: string): string | undefined {
  const entry = readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0').find(line => line.startsWith(`${name}=`))
  return entry?.slice(name.length + 1)
}

interface Observed {
  /** The state folder the child was given. */
  state?: string
  /** What it held while the child talked to the model. */
  during?: string[]
}

/** Runs one call of `tool` under a mounted sandbox in `mode`, watching the child's state folder. */
async function sandboxedCall(plugin: typeof CodexSubagentPlugin | typeof ClaudeCodeSubagentPlugin, toolName: string, variable: string, mode: SandboxMode, cwd: string, tool: ProductToolConfig): Promise<Observed> {
  const seen: Observed = {}
  h = await loopHarness({
    cwd,
    responses: [toolCalls([{ id: 'c1', name: toolName, arguments: { description: 'ask it', prompt: 'Say the answer.' } }]), text('done')],
    setup: async (ctx) => {
      await ctx.plugin(SandboxPlugin, { workspaceRoot: cwd, mode }).await()
      await ctx.plugin(plugin, { tools: [tool] }).await()
      ctx.on('product-subagent/started', (info) => {
        seen.state = environOf(info.pid, variable)
        // The child cannot have ended before the server answers: its folder is still there.
        void server!.nextRequest().then(() => { seen.during = seen.state === undefined || !existsSync(seen.state) ? [] : readdirSync(seen.state) })
      })
    },
  })
  h.agent.followup('go')
  await h.agent.whenIdle()
  return seen
}

describe.skipIf(codex.command === undefined)('subagent_codex under the sandbox: Codex writes its own state folder, never the user\'s', () => {
  for (const mode of MODES) {
    it(`${mode}: the run succeeds; CODEX_HOME is a private folder, written during the run and removed after; ~/.codex is not touched`, async () => {
      server = await fakeResponsesServer([{ kind: 'text', text: 'CODEX ANSWER 42' }])
      const home = folder(OUTSIDE_TMP, 'dsh-codex-sandbox-home-')
      const cwd = folder(tmpdir(), 'dsh-codex-sandbox-cwd-')
      const seen = await sandboxedCall(CodexSubagentPlugin, 'subagent_codex', 'CODEX_HOME', mode, cwd, {
        command: codex.command!, model: 'fake-model',
        provider: { id: 'fake', baseUrl: `${server.url}/v1`, envKey: 'FAKE_OPENAI_KEY' },
        config: { 'model_providers.fake.request_max_retries': '0', 'model_providers.fake.stream_max_retries': '0' },
        // The product's default state folder: nothing names CODEX_HOME.
        env: { FAKE_OPENAI_KEY: 'key-for-codex', HOME: home },
      })
      expect(resultOf(h!)).toEqual({ text: 'CODEX ANSWER 42', isError: false })
      expect(server.requests.map(r => r.headers.authorization)).toEqual(['Bearer key-for-codex'])
      expect(seen.state).toMatch(/\/dsh-codex-state-[^/]+$/)
      expect(seen.state!.startsWith(home)).toBe(false)
      expect(seen.during!.length).toBeGreaterThan(0)
      expect(existsSync(seen.state!)).toBe(false)
      expect(readdirSync(home)).toEqual([])
      expect(readdirSync(cwd)).toEqual([])
    }, 90_000)
  }
})

describe.skipIf(codex.command === undefined)('subagent_codex under the sandbox, cancelled', () => {
  it('cancelling the parent\'s turn mid-run removes the state folder too', async () => {
    server = await fakeResponsesServer([{ kind: 'hang' }])
    const home = folder(OUTSIDE_TMP, 'dsh-codex-sandbox-home-')
    const cwd = folder(tmpdir(), 'dsh-codex-sandbox-cwd-')
    let state: string | undefined
    let held = false
    h = await loopHarness({
      cwd,
      responses: [toolCalls([{ id: 'c1', name: 'subagent_codex', arguments: { description: 'ask it', prompt: 'Wait.' } }]), text('done')],
      setup: async (ctx) => {
        await ctx.plugin(SandboxPlugin, { workspaceRoot: cwd, mode: 'workspace-write' }).await()
        await ctx.plugin(CodexSubagentPlugin, { tools: [{
          command: codex.command!, model: 'fake-model', provider: { id: 'fake', baseUrl: `${server!.url}/v1`, envKey: 'FAKE_OPENAI_KEY' },
          config: { 'model_providers.fake.request_max_retries': '0', 'model_providers.fake.stream_max_retries': '0' }, env: { FAKE_OPENAI_KEY: 'key-for-codex', HOME: home },
        }] }).await()
        ctx.on('product-subagent/started', (info) => {
          state = environOf(info.pid, 'CODEX_HOME')
          void server!.nextRequest().then(() => {
            held = existsSync(state!)
            h!.agent.cancel()
          })
        })
      },
    })
    // Emitted once the run, its clean-up included, is over.
    const finished = new Promise<string>(resolve => h!.ctx.on('product-subagent/finished', info => resolve(info.status)))
    h.agent.followup('go')
    await h.agent.whenIdle()
    expect(await finished).toBe('cancelled')
    expect(held).toBe(true)
    expect(existsSync(state!)).toBe(false)
    expect(readdirSync(home)).toEqual([])
  }, 90_000)
})

describe.skipIf(claude.command === undefined)('subagent_claude_code under the sandbox: Claude Code writes its own state folder, never the user\'s', () => {
  for (const mode of MODES) {
    it(`${mode}: the run succeeds; CLAUDE_CONFIG_DIR is a private folder holding its .claude.json during the run, removed after; ~/.claude and ~/.claude.json are not touched`, async () => {
      server = await fakeMessagesServer([{ kind: 'text', text: 'CLAUDE ANSWER 7' }])
      const home = folder(OUTSIDE_TMP, 'dsh-claude-sandbox-home-')
      const cwd = folder(tmpdir(), 'dsh-claude-sandbox-cwd-')
      const seen = await sandboxedCall(ClaudeCodeSubagentPlugin, 'subagent_claude_code', 'CLAUDE_CONFIG_DIR', mode, cwd, {
        command: claude.command!, model: 'claude-fake',
        env: { ANTHROPIC_BASE_URL: server.url, ANTHROPIC_API_KEY: 'key-for-claude', HOME: home, CLAUDE_CODE_MAX_RETRIES: '0', DISABLE_TELEMETRY: '1', CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1' },
      })
      expect(resultOf(h!)).toEqual({ text: 'CLAUDE ANSWER 7', isError: false })
      expect(seen.state).toMatch(/\/dsh-claude-state-[^/]+$/)
      expect(seen.during).toContain('.claude.json')
      expect(existsSync(seen.state!)).toBe(false)
      expect(readdirSync(home)).toEqual([])
      expect(readdirSync(cwd)).toEqual([])
    }, 90_000)
  }
})

// ---- What the sandbox lets a product CLI write, as root and as an unprivileged uid ----

// The child runs this checkout's sources as uid 65534: a folder above it that others may not
// enter is opened for the test and closed again after.
const opened: { path: string; mode: number }[] = []
function openForOthers(from: string): void {
  for (let dir = from; dir !== dirname(dir); dir = dirname(dir)) {
    const mode = statSync(dir).mode & 0o7777
    if ((mode & 0o001) === 0) {
      chmodSync(dir, mode | 0o001)
      opened.push({ path: dir, mode })
    }
  }
}
afterAll(() => {
  for (const { path, mode } of opened.splice(0)) chmodSync(path, mode)
})

const UNPRIVILEGED = ['setpriv', '--reuid', '65534', '--regid', '65534', '--clear-groups']

interface ChildOutcome { uid: number; results: { isError: boolean; text: string }[] }

/** Runs the child (asynchronously: the fake servers it talks to live in this process). */
function runAs(prefix: readonly string[], runs: readonly SandboxedRun[]): Promise<ChildOutcome> {
  const argv = [...prefix, process.execPath, '--import', 'tsx', child, JSON.stringify(runs)]
  return new Promise((resolve, reject) => {
    const proc = spawn(argv[0]!, argv.slice(1), { cwd: join(import.meta.dirname, '../..'), stdio: ['ignore', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    proc.stdout.setEncoding('utf8').on('data', (chunk: string) => { stdout += chunk })
    proc.stderr.setEncoding('utf8').on('data', (chunk: string) => { stderr = (stderr + chunk).slice(-4000) })
    proc.once('error', reject)
    proc.once('close', (code) => {
      if (code !== 0) reject(new Error(`the child failed (${code}): ${stderr}`))
      else resolve(JSON.parse(stdout.trim().split('\n').pop()!) as ChildOutcome)
    })
  })
}

function probeRuns(): { runs: SandboxedRun[]; expected: RegExp[]; homes: string[] } {
  const runs: SandboxedRun[] = []
  const expected: RegExp[] = []
  const homes: string[] = []
  for (const product of ['codex', 'claude'] as const) {
    for (const mode of MODES) {
      const home = folder(OUTSIDE_TMP, 'dsh-probe-home-')
      homes.push(home)
      runs.push({ product, mode, cwd: folder(tmpdir(), 'dsh-probe-cwd-'), tool: { command: ['sh', probe, product], env: { HOME: home } } })
      expected.push(new RegExp(`^state=ok temp=${product === 'claude' ? 'ok' : 'none'} home=denied workspace=${mode === 'workspace-write' ? 'ok' : 'denied'} folder=.*/dsh-${product}-state-[^/]+$`))
    }
  }
  return { runs, expected, homes }
}

function expectConfined(outcome: ChildOutcome, uid: number, probed: ReturnType<typeof probeRuns>): void {
  expect(outcome.uid).toBe(uid)
  expect(outcome.results.map(r => r.isError)).toEqual(probed.runs.map(() => false))
  outcome.results.forEach((result, i) => {
    expect(result.text).toMatch(probed.expected[i]!)
    expect(existsSync(result.text.replace(/^.* folder=/, ''))).toBe(false)
  })
  for (const home of probed.homes) expect(readdirSync(home)).toEqual([])
}

describe.skipIf(bwrapProblem !== undefined)('a product CLI under the sandbox may write its private state folder and, in workspace-write, the workspace; never its folder in HOME', () => {
  it(`as uid ${process.getuid?.()}`, async () => {
    const probed = probeRuns()
    expectConfined(await runAs([], probed.runs), process.getuid!(), probed)
  }, 120_000)

  it.skipIf(!asRoot || !setpriv)('as uid 65534 (bwrap in a user namespace of its own)', async () => {
    openForOthers(join(import.meta.dirname, '../..'))
    const probed = probeRuns()
    expectConfined(await runAs(UNPRIVILEGED, probed.runs), 65534, probed)
  }, 120_000)

  it('workspace-write: a folder made writable for a command never lifts a protected path of the workspace (its bind comes before the protected mounts)', () => {
    const root = folder(tmpdir(), 'dsh-writable-root-')
    const state = join(root, 'state')
    mkdirSync(join(state, '.claude'), { recursive: true })
    const argv = bwrapRunner().argv('workspace-write', root, { ...protectedMounts(root), writable: [state] })
    const run = spawnSync(argv[0]!, [...argv.slice(1), 'sh', '-c', `echo s > ${state}/ok; echo c > ${state}/.claude/planted`], { encoding: 'utf8' })
    expect(run.stderr).toMatch(/\.claude\/planted: Read-only file system/)
    expect(existsSync(join(state, 'ok'))).toBe(true)
    expect(existsSync(join(state, '.claude', 'planted'))).toBe(false)
  })

  it('a state folder the tool config names is used as given and stays read-only: the sandbox makes nothing of the user\'s writable', async () => {
    const home = folder(OUTSIDE_TMP, 'dsh-probe-home-')
    const named = join(home, '.codex')
    const outcome = await runAs([], [{ product: 'codex', mode: 'workspace-write', cwd: folder(tmpdir(), 'dsh-probe-cwd-'), tool: { command: ['sh', probe, 'codex'], env: { HOME: home, CODEX_HOME: named } } }])
    expect(outcome.results).toEqual([{ isError: false, text: `state=denied temp=none home=denied workspace=ok folder=${named}` }])
    expect(readdirSync(home)).toEqual([])
  }, 120_000)
})

// Claude Code also needs a temp folder of its own (`/tmp/claude-<uid>` unless CLAUDE_CODE_TMPDIR
// says otherwise): under read-only /tmp is not writable, and as root an old /tmp/claude-0 on the
// host can hide that. Neither CLI has ever run as this uid on the host.
describe.skipIf(codex.command === undefined || claude.command === undefined || !asRoot || !setpriv)('the real CLIs under the sandbox as uid 65534', () => {
  it('Codex and Claude Code answer in workspace-write and read-only; their homes stay empty', async () => {
    openForOthers(join(import.meta.dirname, '../..'))
    const responses = await fakeResponsesServer([{ kind: 'text', text: 'CODEX ANSWER 42' }])
    const messages = await fakeMessagesServer([{ kind: 'text', text: 'CLAUDE ANSWER 7' }])
    try {
      const runs: SandboxedRun[] = []
      const homes: string[] = []
      for (const mode of MODES) {
        const home = folder(OUTSIDE_TMP, 'dsh-real-home-')
        homes.push(home)
        const cwd = folder(tmpdir(), 'dsh-real-cwd-')
        runs.push({ product: 'codex', mode, cwd, tool: {
          command: codex.command!, model: 'fake-model', provider: { id: 'fake', baseUrl: `${responses.url}/v1`, envKey: 'FAKE_OPENAI_KEY' },
          config: { 'model_providers.fake.request_max_retries': '0', 'model_providers.fake.stream_max_retries': '0' }, env: { FAKE_OPENAI_KEY: 'key-for-codex', HOME: home },
        } })
        runs.push({ product: 'claude', mode, cwd, tool: {
          command: claude.command!, model: 'claude-fake',
          env: { ANTHROPIC_BASE_URL: messages.url, ANTHROPIC_API_KEY: 'key-for-claude', HOME: home, CLAUDE_CODE_MAX_RETRIES: '0', DISABLE_TELEMETRY: '1', CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1' },
        } })
      }
      const outcome = await runAs(UNPRIVILEGED, runs)
      expect(outcome.uid).toBe(65534)
      expect(outcome.results).toEqual(MODES.flatMap(() => [{ isError: false, text: 'CODEX ANSWER 42' }, { isError: false, text: 'CLAUDE ANSWER 7' }]))
      for (const home of homes) expect(readdirSync(home)).toEqual([])
    } finally {
      await responses.close()
      await messages.close()
    }
  }, 180_000)
})

describe.skipIf(bwrapProblem !== undefined)('a product subagent under the session\'s network policy', () => {
  for (const [network, expected] of [['none', 'net=denied'], ['full', 'net=ok']] as const) {
    it(`network ${network}: the child CLI ${network === 'none' ? 'cannot reach' : 'reaches'} a local server, as bash would`, async () => {
      const target = createServer((_request, response) => { response.end('ok') })
      await new Promise<void>(resolve => target.listen(0, '127.0.0.1', resolve))
      try {
        const url = `http://127.0.0.1:${(target.address() as AddressInfo).port}/`
        const home = folder(OUTSIDE_TMP, 'dsh-probe-home-')
        const cwd = folder(tmpdir(), 'dsh-probe-cwd-')
        h = await loopHarness({
          cwd,
          responses: [toolCalls([{ id: 'c1', name: 'subagent_codex', arguments: { description: 'ask it', prompt: 'Say the answer.' } }]), text('done')],
          setup: async (ctx) => {
            await ctx.plugin(ApprovalPlugin, { network, mode: 'workspace-write' }).await()
            await ctx.plugin(SandboxPlugin, { workspaceRoot: cwd }).await()
            await ctx.plugin(CodexSubagentPlugin, { tools: [{ command: ['sh', probe, 'codex'], env: { HOME: home, PROBE_URL: url } }] }).await()
          },
        })
        h.agent.followup('go')
        await h.agent.whenIdle()
        const result = resultOf(h)
        expect(result.isError).toBe(false)
        expect(result.text).toContain(expected)
      } finally {
        target.close()
      }
    }, 60_000)
  }
})
