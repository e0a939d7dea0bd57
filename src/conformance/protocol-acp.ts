/**
 * The ACP lane of the protocol suite: drives `dsh --profile acp` over stdio with the recorded
 * steps, answers its permission and elicitation requests as recorded, waits on what the process
 * writes (its frames and session logs), and compares its frames with `stdout.expected.jsonl`.
 */
import { spawn } from 'node:child_process'
import { mkdirSync, readdirSync, readFileSync, watch } from 'node:fs'
import { basename, join } from 'node:path'
import { JsonRpcPeer, LineSplitter } from '../sdk/jsonrpc.js'
import { type Scenario, type Plan } from './protocol-plan.js'
import { dshCommand, waitForFile, type Run, childEnv, readJsonLines, placeholders, firstDifference } from './protocol-process.js'

export async function runAcp(scenario: Scenario, plan: Plan, run: Run): Promise<string | undefined> {
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
