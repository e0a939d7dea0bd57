/**
 * Product subagents against the real CLIs (Codex, Claude Code, installed from the npm registry
 * into a cached temp folder), each pointed at a local fake model server speaking its own wire
 * protocol over real HTTP: the Responses API for Codex, the Messages API for Claude Code.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { loopHarness, type LoopHarness } from '../../test-support/agent-harness.js'
import { text, toolCalls, type ScriptedResponse } from '../../test-support/scripted-model.js'
import { allGoneWithin } from '../../test-support/processes.js'
import { claudeCodeCli, codexCli } from '../../test-support/product-cli.js'
import { fakeMessagesServer, fakeResponsesServer, type FakeAnswer, type FakeServer } from '../../test-support/product-fakes.js'
import type { StreamChunk, ToolResultMessage } from '../llm/types.js'
import { JobsPlugin } from '../jobs/service.js'
import { ClaudeCodeSubagentPlugin, CodexSubagentPlugin, type ProductToolConfig } from './index.js'

const codex = codexCli()
const claude = claudeCodeCli()
if (codex.reason !== undefined) console.warn(`skipping the Codex CLI tests: ${codex.reason}`)
if (claude.reason !== undefined) console.warn(`skipping the Claude Code CLI tests: ${claude.reason}`)

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

function folder(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix))
  folders.push(dir)
  return dir
}

let calls = 0
function call(name: string, args: Record<string, unknown>): ScriptedResponse {
  return toolCalls([{ id: `c${++calls}`, name, arguments: args }])
}

function results(h: LoopHarness): { text: string; isError: boolean }[] {
  return h.of('tool/result').map((event) => {
    const block = (event.data as { message: ToolResultMessage }).message.content[0]!
    return { text: block.content.map(part => part.type === 'text' ? part.text : '').join(''), isError: block.isError }
  })
}

async function harness(plugin: typeof CodexSubagentPlugin | typeof ClaudeCodeSubagentPlugin, tool: ProductToolConfig, responses: ScriptedResponse[]): Promise<LoopHarness> {
  const cwd = folder('dsh-product-cwd-')
  h = await loopHarness({
    cwd, responses,
    setup: async (ctx) => {
      await ctx.plugin(JobsPlugin).await()
      await ctx.plugin(plugin, { tools: [tool] }).await()
    },
  })
  return h
}

async function prompt(h: LoopHarness, input: string): Promise<void> {
  h.agent.followup(input)
  await h.agent.whenIdle()
}

/** The processes of group `pgid` (from /proc). */
function groupMembers(pgid: number): number[] {
  const members: number[] = []
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    try {
      const fields = readFileSync(`/proc/${entry}/stat`, 'utf8').replace(/^.*\) /s, '').split(' ')
      if (Number(fields[2]) === pgid) members.push(Number(entry))
    } catch {
      // Gone meanwhile.
    }
  }
  return members
}

/** Once the fake server holds the child's model request, the parent's turn is cancelled; resolves with the child's process group as it was. */
function cancelWhenHeld(h: LoopHarness, held: Promise<void>): Promise<number[]> {
  return new Promise((resolve) => {
    h.ctx.on('product-subagent/started', (info) => {
      void held.then(() => {
        const members = groupMembers(info.pid)
        h.agent.cancel()
        resolve(members)
      })
    })
  })
}

// ---- Codex ----

function codexTool(answers: readonly FakeAnswer[], name = 'subagent_codex'): Promise<ProductToolConfig> {
  return fakeResponsesServer(answers).then((fake) => {
    server = fake
    const home = folder('dsh-codex-home-')
    return {
      name, command: codex.command!, model: 'fake-model',
      provider: { id: 'fake', baseUrl: `${fake.url}/v1`, envKey: 'FAKE_OPENAI_KEY' },
      // No retries: a scripted failure is final.
      config: { 'model_providers.fake.request_max_retries': '0', 'model_providers.fake.stream_max_retries': '0' },
      extraArgs: ['--ignore-user-config'],
      env: { FAKE_OPENAI_KEY: 'key-for-codex', CODEX_HOME: home, HOME: home },
    }
  })
}

describe.skipIf(codex.command === undefined)('subagent_codex runs the real Codex CLI against a local Responses API', () => {
  it('a foreground call returns the fake model\'s answer; only the product\'s own key reaches the server', async () => {
    const tool = await codexTool([{ kind: 'text', text: 'CODEX ANSWER 42' }])
    const h = await harness(CodexSubagentPlugin, tool, [call('subagent_codex', { description: 'ask codex', prompt: 'Say the answer.' }), text('done')])
    await prompt(h, 'go')
    expect(results(h)).toEqual([{ text: 'CODEX ANSWER 42', isError: false }])
    expect(server!.requests.map(r => r.headers.authorization)).toEqual(['Bearer key-for-codex'])
    // The task reached the model.
    expect(JSON.stringify(server!.requests[0]!.body)).toContain('Say the answer.')
  }, 60_000)

  it('a failing run gives the safe diagnostic as an error result', async () => {
    const tool = await codexTool([{ kind: 'http-error', status: 503 }])
    const h = await harness(CodexSubagentPlugin, tool, [call('subagent_codex', { description: 'ask codex', prompt: 'Say the answer.' }), text('done')])
    await prompt(h, 'go')
    const [result] = results(h)
    expect(result!.isError).toBe(true)
    expect(result!.text).toMatch(/^Error: subagent run failed\nDiagnostic: Product subagent failure \(product: Codex; stage: turn; category: httpConnectionFailed; HTTP status: 503; exit code: 1\)$/)
  }, 60_000)

  it('run_in_background makes it a job: job_output gives the answer, a notice tells the parent', async () => {
    const tool = await codexTool([{ kind: 'text', text: 'FROM THE BACKGROUND' }])
    const h = await harness(CodexSubagentPlugin, tool, [
      call('subagent_codex', { description: 'ask codex', prompt: 'Say it.', run_in_background: true }),
      call('job_output', { job_id: 'subagent-1', wait: true, timeout_ms: 50_000 }),
      text('done'),
    ])
    await prompt(h, 'go')
    expect(results(h)).toEqual([
      { text: 'started background subagent job subagent-1', isError: false },
      { text: 'FROM THE BACKGROUND\n[status: completed]', isError: false },
    ])
  }, 60_000)

  it('cancelling the parent\'s turn kills the child\'s process tree', async () => {
    const tool = await codexTool([{ kind: 'hang' }])
    const h = await harness(CodexSubagentPlugin, tool, [call('subagent_codex', { description: 'ask codex', prompt: 'Wait.' }), text('done')])
    const group = cancelWhenHeld(h, server!.nextRequest())
    await prompt(h, 'go')
    const members = await group
    expect(members.length).toBeGreaterThan(0)
    expect(await allGoneWithin(members, 10_000)).toBe(true)
    expect(results(h)[0]?.isError).toBe(true)
  }, 60_000)
})

// ---- Claude Code ----

function claudeTool(answers: readonly FakeAnswer[], extra: Partial<ProductToolConfig> = {}): Promise<ProductToolConfig> {
  return fakeMessagesServer(answers).then((fake) => {
    server = fake
    const home = folder('dsh-claude-home-')
    return {
      command: claude.command!, model: 'claude-fake',
      env: {
        ANTHROPIC_BASE_URL: fake.url, ANTHROPIC_API_KEY: 'key-for-claude', HOME: home, CLAUDE_CONFIG_DIR: join(home, '.claude'),
        CLAUDE_CODE_MAX_RETRIES: '0', DISABLE_TELEMETRY: '1', CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
      },
      ...extra,
    }
  })
}

describe.skipIf(claude.command === undefined)('subagent_claude_code runs the real Claude Code CLI against a local Messages API', () => {
  it('a foreground call returns the fake model\'s answer; only the product\'s own key reaches the server', async () => {
    const tool = await claudeTool([{ kind: 'text', text: 'CLAUDE ANSWER 7' }])
    const h = await harness(ClaudeCodeSubagentPlugin, tool, [call('subagent_claude_code', { description: 'ask claude', prompt: 'Say the answer.' }), text('done')])
    await prompt(h, 'go')
    expect(results(h)).toEqual([{ text: 'CLAUDE ANSWER 7', isError: false }])
    const keys = server!.requests.filter(r => r.path.startsWith('/v1/messages')).map(r => r.headers['x-api-key'])
    expect(keys.length).toBeGreaterThan(0)
    expect(new Set(keys)).toEqual(new Set(['key-for-claude']))
  }, 60_000)

  it('a run over its budget gives the recorded diagnostic, with the partial answer', async () => {
    const tool = await claudeTool([{ kind: 'text', text: 'partial assistant text' }], { maxBudgetUsd: 0.00000001 })
    const h = await harness(ClaudeCodeSubagentPlugin, tool, [call('subagent_claude_code', { description: 'ask claude', prompt: 'Say it.' }), text('done')])
    await prompt(h, 'go')
    expect(results(h)).toEqual([{
      text: 'Error: subagent run failed\nDiagnostic: Product subagent failure (product: Claude Code; stage: query-run; category: error_max_budget_usd; exit code: 1)\nPartial output before the run ended:\npartial assistant text',
      isError: true,
    }])
  }, 60_000)

  it('a background run settles with the recorded notice and job_output status', async () => {
    const tool = await claudeTool([{ kind: 'text', text: 'over budget' }], { maxBudgetUsd: 0.00000001 })
    const h = await harness(ClaudeCodeSubagentPlugin, tool, [
      call('subagent_claude_code', { description: 'Observe the budget', prompt: 'Say it.', run_in_background: true }),
      // The next step waits until the job has ended on its own (its notice is in the inbox).
      async () => {
        await new Promise<void>(resolve => h.ctx.on('jobs/changed', (_id, job) => { if (job.status === 'failed') resolve() }))
        return call('job_output', { job_id: 'subagent-1' }) as readonly StreamChunk[]
      },
      text('done'),
    ])
    await prompt(h, 'go')
    const diagnostic = 'Product subagent failure (product: Claude Code; stage: query-run; category: error_max_budget_usd; exit code: 1)'
    expect(results(h)[1]).toEqual({ text: `over budget\n[status: failed, error; diagnostic: ${diagnostic}]`, isError: false })
    const notices = h.of('user/message').map(e => e.data).filter(m => (m.source as { form?: string }).form === 'notice')
    expect(notices.map(m => (m.content[0] as { text: string }).text)).toEqual([
      `background job subagent-1 (subagent: Observe the budget) finished [status: failed, error; diagnostic: ${diagnostic}]. Read its output with job_output.`,
    ])
  }, 60_000)

  it('cancelling the parent\'s turn kills the child\'s process tree', async () => {
    const tool = await claudeTool([{ kind: 'hang' }])
    const h = await harness(ClaudeCodeSubagentPlugin, tool, [call('subagent_claude_code', { description: 'ask claude', prompt: 'Wait.' }), text('done')])
    const group = cancelWhenHeld(h, server!.nextRequest())
    await prompt(h, 'go')
    const members = await group
    expect(members.length).toBeGreaterThan(0)
    expect(await allGoneWithin(members, 10_000)).toBe(true)
  }, 60_000)
})
