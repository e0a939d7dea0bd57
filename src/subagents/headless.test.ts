/**
 * The real `dsh --profile headless` binary against the fake DeepSeek server over HTTP: the model
 * delegates to two parallel children that each run a real bash step.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { FakeDeepSeek, streamResponse } from '../../test-support/fake-deepseek.js'
import { runDsh, tempHome, withoutSessionHint } from '../../test-support/run-dsh.js'

let server: FakeDeepSeek
beforeAll(async () => { server = await FakeDeepSeek.start() })
afterAll(async () => { await server.close() })

function logs(dir: string): string[] {
  const found: string[] = []
  for (const name of readdirSync(dir)) {
    const path = join(dir, name)
    if (statSync(path).isDirectory()) found.push(...logs(path))
    else if (name.endsWith('.jsonl')) found.push(path)
  }
  return found
}

const subagentCall = (index: number, id: string, label: string) => ({
  toolCall: { index, id, name: 'subagent', arguments: JSON.stringify({ description: label, prompt: 'Append a line to steps.txt with bash, then reply CHILD_DONE.', run_in_background: false }) },
})

describe('headless delegation (SA-7, SA-17 headless)', () => {
  it('two parallel children each run a bash step; headless prints only the parent answer', async () => {
    const { home, cwd } = tempHome()
    // Both children must have asked before either gets its bash call: they really overlap.
    const bothChildrenAsked = server.waitForRequests(3)
    const bash = () => streamResponse([
      { until: bothChildrenAsked },
      { toolCall: { index: 0, id: 'call_bash', name: 'bash', arguments: JSON.stringify({ command: 'echo CHILD_STEP >> steps.txt', description: 'Append a line' }) } },
      { finish: 'tool_calls' },
    ])
    server.enqueue(
      streamResponse([subagentCall(0, 'call_a', 'First child'), subagentCall(1, 'call_b', 'Second child'), { finish: 'tool_calls' }]),
      bash(), bash(),
      streamResponse([{ text: 'CHILD_DONE' }, { finish: 'stop' }]),
      streamResponse([{ text: 'CHILD_DONE' }, { finish: 'stop' }]),
      streamResponse([{ text: 'PARENT_DONE' }, { finish: 'stop' }]),
    )
    const result = await runDsh(['--profile', 'headless', 'split the work'], {
      cwd, env: { DSH_HOME: home, DEEPSEEK_BASE_URL: server.url, DEEPSEEK_API_KEY: 'test-key' },
    })
    expect(withoutSessionHint(result.stderr)).toBe('')
    expect(result.code).toBe(0)
    expect(result.stdout).toBe('PARENT_DONE\n')
    expect(readFileSync(join(cwd, 'steps.txt'), 'utf8')).toBe('CHILD_STEP\nCHILD_STEP\n')
    expect(server.pending).toBe(0)

    const stored = logs(join(home, 'sessions')).map(path => readFileSync(path, 'utf8').trim().split('\n').map(line => JSON.parse(line)))
    const parent = stored.find(lines => lines[0].parentSession === undefined)!
    const children = stored.filter(lines => lines[0].parentSession !== undefined)
    expect(children).toHaveLength(2)
    for (const child of children) {
      expect(child[0]).toMatchObject({ parentSession: parent[0].id, origin: 'subagent', delegationDepth: 1, cwd })
      expect(child.filter((e: { type: string }) => e.type === 'tool/result')).toHaveLength(1)
      expect(child.findLast((e: { type: string }) => e.type === 'turn/end').data.reason).toEqual({ kind: 'completed' })
    }
    const order = parent.filter((e: { type: string }) => e.type === 'tool/call' || e.type === 'tool/result').map((e: { type: string }) => e.type)
    expect(order).toEqual(['tool/call', 'tool/call', 'tool/result', 'tool/result'])
    const texts = parent.filter((e: { type: string }) => e.type === 'tool/result')
      .map((e: { data: { message: { content: { content: { text: string }[] }[] } } }) => e.data.message.content[0].content[0].text)
    expect(texts).toEqual(['CHILD_DONE', 'CHILD_DONE'])
  })
})
