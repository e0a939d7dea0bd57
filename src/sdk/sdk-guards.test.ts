/**
 * The SDK server's guards through a real process (`node bin/dsh.js --profile sdk`): nothing runs
 * before `initialize`, and no error answer quotes a huge parameter back (#42.7).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { join } from 'node:path'
import { FakeDeepSeek, streamResponse } from '../../test-support/fake-deepseek.js'
import { tempHome } from '../../test-support/run-dsh.js'
import { DshClient } from './client.js'
import { ErrorCodes, MAX_ERROR_MESSAGE_CHARS, type RpcError } from './jsonrpc.js'

let server: FakeDeepSeek
beforeAll(async () => { server = await FakeDeepSeek.start() })
afterAll(async () => { await server.close() })

const usage = { prompt_tokens: 10, completion_tokens: 3 }
const envFor = (home: string) => ({ DSH_HOME: home, DEEPSEEK_BASE_URL: server.url, DEEPSEEK_API_KEY: 'test-key', DSH_MODEL: undefined })
const failure = (answer: Promise<unknown>) => answer.then(() => undefined, (error: RpcError) => error)

describe('SDK server guards', () => {
  it('#42.7: session/prompt (and every method but initialize) before initialize is refused with -32002; nothing is stored or asked of the model; after initialize it runs', async () => {
    const { home, cwd } = tempHome()
    const client = await DshClient.start({ cwd, env: envFor(home), initialize: false })
    try {
      const requests = server.requests.length
      const prompt = { sessionId: 'early', contentBlocks: [{ type: 'text', text: 'too soon' }] }
      await expect(client.request('session/prompt', prompt)).rejects.toMatchObject({ code: ErrorCodes.serverNotInitialized, message: 'Server not initialized: send initialize before session/prompt' })
      for (const [method, params] of [['session/create', {}], ['session/command', { text: '/status' }], ['session/list', {}], ['session/load', { sessionId: 'early' }], ['shutdown', {}]] as const) {
        await expect(client.request(method, params), method).rejects.toMatchObject({ code: -32002 })
      }
      // A failed initialize does not count.
      await expect(client.initialize({ cwd: join(cwd, 'missing') })).rejects.toMatchObject({ code: ErrorCodes.invalidParams })
      await expect(client.request('session/prompt', prompt)).rejects.toMatchObject({ code: -32002 })
      expect(server.requests.length).toBe(requests)
      await client.initialize({ cwd })
      expect(await client.list()).toMatchObject({ sessions: [] })
      server.enqueue(streamResponse([{ text: 'now' }, { finish: 'stop', usage }]))
      const result = await client.run('in time', { sessionId: 'early' })
      expect(result.finalResponse).toBe('now')
    } finally {
      await client.close()
    }
  })

  it('#42.7: a 55 MB parameter is not quoted back in the error: echoed values are cut to 200 characters and their size', async () => {
    const { home, cwd } = tempHome()
    const client = await DshClient.start({ cwd, env: envFor(home) })
    try {
      // The 55 MB once; the other echo sites with 1 MB each.
      const huge = 'x'.repeat(55 * 1024 * 1024)
      const big = 'x'.repeat(1024 * 1024)
      const errors = [
        await failure(client.request('session/command', { text: huge })),
        await failure(client.request('session/cancel', { sessionId: big })),
        await failure(client.initialize({ cwd: `/${big}` })),
        await failure(client.initialize({ model: big })),
        await failure(client.request(big, {})),
      ]
      expect(errors.map(error => error?.code)).toEqual([-32602, -32602, -32602, -32602, -32601])
      for (const error of errors) {
        expect(error!.message.length).toBeLessThan(MAX_ERROR_MESSAGE_CHARS + 40)
        expect(error!.message).toMatch(/… \(\d+ bytes\)/)
        expect(error!.message).not.toContain('x'.repeat(MAX_ERROR_MESSAGE_CHARS))
      }
      expect(errors[0]!.message).toBe(`invalid params: "${huge.slice(0, 200)}… (${huge.length} bytes)" is not a slash command (send prompts with session/prompt)`)
      expect(errors[1]!.message).toBe(`invalid params: no live session "${big.slice(0, 200)}… (${big.length} bytes)"`)
      // Still serving.
      expect(await client.list()).toMatchObject({ sessions: [] })
    } finally {
      await client.close()
    }
  })
})
