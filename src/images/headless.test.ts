/**
 * read_image through the real binary and real HTTP: a provider added in settings.yaml whose model
 * takes images (`imageInput: true`) is offered the tool; the image it reads goes out in the next
 * request as an `image_url` part after the tool message. The default DeepSeek route is not
 * offered the tool at all.
 */
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { FakeDeepSeek, streamResponse } from '../../test-support/fake-deepseek.js'
import { pngImage } from '../../test-support/images.js'
import { runDsh, tempHome } from '../../test-support/run-dsh.js'

let server: FakeDeepSeek
beforeAll(async () => { server = await FakeDeepSeek.start() })
afterAll(async () => { await server.close() })

const usage = { prompt_tokens: 10, completion_tokens: 3 }
const toolNames = (body: { tools?: { function: { name: string } }[] }) => (body.tools ?? []).map(tool => tool.function.name)

describe('read_image in a real headless run', () => {
  it('an image model of a settings provider reads a PNG and the next request carries it', async () => {
    const { home, cwd } = tempHome()
    mkdirSync(home, { recursive: true })
    writeFileSync(join(home, 'settings.yaml'), `providers:\n  vision:\n    baseUrl: ${server.url}\n    models:\n      - { model: pix-1, imageInput: true }\n`)
    const png = pngImage(3, 2)
    writeFileSync(join(cwd, 'shot.png'), png)
    server.enqueue(
      streamResponse([{ toolCall: { id: 'r1', name: 'read_image', arguments: '{"file_path":"shot.png"}' } }, { finish: 'tool_calls', usage }]),
      streamResponse([{ text: 'A red picture.' }, { finish: 'stop', usage }]),
    )
    const before = server.requests.length
    const result = await runDsh(['--profile', 'headless', '--model', 'pix-1', 'what is in shot.png?'], { cwd, env: { DSH_HOME: home, DEEPSEEK_BASE_URL: server.url, DEEPSEEK_API_KEY: 'test-key' } })
    expect(result.stderr).not.toMatch(/error/i)
    expect(result.stdout).toBe('A red picture.\n')
    const [first, second] = server.requests.slice(before).map(request => request.body)
    expect(first.model).toBe('pix-1')
    expect(toolNames(first)).toContain('read_image')
    const tool = second.messages.find((message: { role: string; tool_call_id?: string }) => message.role === 'tool' && message.tool_call_id === 'r1')
    expect(tool.content).toMatch(/^<path>.*shot\.png<\/path>\n<type>image<\/type>\n<content>\nimage\/png image, 3x2 px, \d+ bytes\n<\/content>$/)
    const after = second.messages[second.messages.indexOf(tool) + 1]
    expect(after).toEqual({ role: 'user', content: [{ type: 'image_url', image_url: { url: `data:image/png;base64,${png.toString('base64')}` } }] })
  })

  it('the default DeepSeek route (text only) is not offered the tool', async () => {
    const { home, cwd } = tempHome()
    server.enqueue(streamResponse([{ text: 'ok' }, { finish: 'stop', usage }]))
    const before = server.requests.length
    const result = await runDsh(['--profile', 'headless', 'hi'], { cwd, env: { DSH_HOME: home, DEEPSEEK_BASE_URL: server.url, DEEPSEEK_API_KEY: 'test-key' } })
    expect(result.code).toBe(0)
    const names = toolNames(server.requests[before]!.body)
    expect(names).toContain('read')
    expect(names).not.toContain('read_image')
  })
})
