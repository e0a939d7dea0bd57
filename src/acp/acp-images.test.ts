/**
 * Images through the ACP agent server as an editor sends them (a real `dsh --profile acp`
 * process, the fake model server): `promptCapabilities.image` follows the configured route; on a
 * text-only route an image prompt is refused with one line and nothing is stored; on an
 * image-capable route the image is stored with the session (the log references it by hash) and
 * reaches the model as an `image_url` part.
 */
import { spawn } from 'node:child_process'
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { FakeDeepSeek, streamResponse } from '../../test-support/fake-deepseek.js'
import { dshBin, tempHome } from '../../test-support/run-dsh.js'
import { LineSplitter } from '../sdk/jsonrpc.js'
import { attachmentIdOf } from '../session/attachments.js'
import { pngImage } from '../../test-support/images.js'

let fake: FakeDeepSeek
beforeAll(async () => { fake = await FakeDeepSeek.start() })
afterAll(async () => { await fake.close() })

/** Starts the agent; `request` sends one JSON-RPC request and resolves with its answer frame. */
function agent(home: string, cwd: string, patch?: string) {
  const env: Record<string, string> = {}
  for (const [key, value] of Object.entries({ ...process.env, DSH_HOME: home, DEEPSEEK_BASE_URL: fake.url, DEEPSEEK_API_KEY: 'test-key', DSH_MODEL: undefined })) if (value !== undefined) env[key] = value
  const child = spawn(process.execPath, [dshBin, '--profile', 'acp', ...patch ? ['--patch', patch] : []], { cwd, env, stdio: ['pipe', 'pipe', 'pipe'] })
  const waiting = new Map<number, (frame: any) => void>()
  const splitter = new LineSplitter()
  const notifications: any[] = []
  child.stdout.on('data', (text: Buffer) => {
    for (const line of splitter.push(String(text))) {
      const frame = JSON.parse(line)
      if (frame.id !== undefined && waiting.has(frame.id)) waiting.get(frame.id)!(frame)
      else if (frame.id === undefined) notifications.push(frame)
    }
  })
  let next = 1
  return {
    notifications,
    request(method: string, params: unknown): Promise<any> {
      const id = next++
      return new Promise(resolve => {
        waiting.set(id, resolve)
        child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', id, method, params })}\n`)
      })
    },
    close(): Promise<unknown> {
      child.stdin.end()
      return new Promise(resolve => child.once('exit', resolve))
    },
  }
}

const png = pngImage(3, 2)
const prompt = [{ type: 'text', text: 'What colour is this?' }, { type: 'image', data: png.toString('base64'), mimeType: 'image/png' }]

describe('ACP prompts with images', () => {
  it('a text-only route says image: false and refuses an image prompt in one line, storing nothing', async () => {
    const { home, cwd } = tempHome()
    const acp = agent(home, cwd)
    try {
      const init = await acp.request('initialize', { protocolVersion: 1 })
      expect(init.result.agentCapabilities.promptCapabilities.image).toBe(false)
      const { result: { sessionId } } = await acp.request('session/new', { cwd, mcpServers: [] })
      const requests = fake.requests.length
      const answer = await acp.request('session/prompt', { sessionId, prompt })
      expect(answer.error.code).toBe(-32602)
      expect(answer.error.message).toBe('invalid params: deepseek-v4-flash (deepseek-official) does not accept images: choose an image-capable model, or send the text without them')
      expect(fake.requests.length).toBe(requests)
    } finally {
      await acp.close()
    }
    const sessions = join(home, 'sessions')
    const stored = existsSync(sessions) ? readdirSync(sessions, { recursive: true }).map(String) : []
    expect(stored.filter(path => path.includes('attachments'))).toEqual([])
  })

  it('an image-capable route stores the image with the session and sends it as an image_url part', async () => {
    const { home, cwd } = tempHome()
    const patch = join(home, 'vision.patch.yml')
    writeFileSync(patch, JSON.stringify([
      { insert: [{ id: 'vision', name: 'llm-openai', config: { provider: 'vision-test', baseUrl: fake.url, models: [{ model: 'vision-1', contextWindow: 32768, defaultMaxTokens: 1024, imageInput: true }] } }] },
      { id: 'agents', config: { loop: { provider: 'vision-test', model: 'vision-1' } } },
    ]))
    const acp = agent(home, cwd, patch)
    let sessionId = ''
    try {
      const init = await acp.request('initialize', { protocolVersion: 1 })
      expect(init.result.agentCapabilities.promptCapabilities.image).toBe(true)
      ;({ result: { sessionId } } = await acp.request('session/new', { cwd, mcpServers: [] }))
      fake.enqueue(streamResponse([{ text: 'Red.' }, { finish: 'stop', usage: { prompt_tokens: 10, completion_tokens: 2 } }]))
      const answer = await acp.request('session/prompt', { sessionId, prompt })
      expect(answer.result).toEqual({ stopReason: 'end_turn' })
      const user = (fake.requests.at(-1)!.body as { messages: { role: string; content: unknown }[] }).messages.find(m => Array.isArray(m.content))
      expect(user?.content).toEqual([
        { type: 'text', text: 'What colour is this?' },
        { type: 'image_url', image_url: { url: `data:image/png;base64,${png.toString('base64')}` } },
      ])
    } finally {
      await acp.close()
    }
    const files = readdirSync(join(home, 'sessions'), { recursive: true }).map(String)
    const log = files.find(path => path.endsWith('session.jsonl'))!
    const text = readFileSync(join(home, 'sessions', log), 'utf8')
    expect(text).toContain(`{"type":"image","attachment":{"attachmentId":"${attachmentIdOf(png)}","mediaType":"image/png","width":3,"height":2,"bytes":${png.length}}}`)
    expect(text).not.toContain(png.toString('base64'))
    expect(files.some(path => path.endsWith(join('attachments', attachmentIdOf(png).slice('sha256:'.length))))).toBe(true)

    // session/load in a new process replays the prompt with the image itself, read back from the store.
    const again = agent(home, cwd, patch)
    try {
      await again.request('initialize', { protocolVersion: 1 })
      const loaded = await again.request('session/load', { sessionId, cwd, mcpServers: [] })
      expect(loaded.error).toBeUndefined()
      const user = again.notifications.filter(frame => frame.method === 'session/update' && frame.params.update.sessionUpdate === 'user_message_chunk').map(frame => frame.params.update.content)
      expect(user).toEqual([{ type: 'text', text: 'What colour is this?' }, { type: 'image', data: png.toString('base64'), mimeType: 'image/png' }])
    } finally {
      await again.close()
    }
  })
})
