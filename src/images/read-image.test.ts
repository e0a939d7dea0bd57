import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { loopHarness, type LoopHarness } from '../../test-support/agent-harness.js'
import { pngImage } from '../../test-support/images.js'
import { SCRIPTED_MODEL_INFO, ScriptedModel, text, toolCalls, type ScriptedResponse } from '../../test-support/scripted-model.js'
import type { ToolResultMessage } from '../llm/types.js'
import { ReadImageToolPlugin, type ReadImageConfig } from './read-image.js'

let cwd: string
let h: LoopHarness | undefined
beforeEach(() => { cwd = mkdtempSync(join(tmpdir(), 'dsh-read-image-')) })
afterEach(async () => {
  await h?.dispose()
  h = undefined
  rmSync(cwd, { recursive: true, force: true })
})

/** A harness whose scripted model takes images or not; `read_image` loaded with `config`. */
let model: ScriptedModel
async function harness(responses: ScriptedResponse[], imageInput: boolean, config: ReadImageConfig = {}): Promise<LoopHarness> {
  // The scripted model under a provider of its own, so the catalogue can say whether it takes images.
  model = new ScriptedModel(responses)
  h = await loopHarness({
    cwd,
    setup: async (ctx) => {
      ctx.llm.register({ adapter: { provider: 'pictures', stream: (options) => model.stream(options) }, models: [{ ...SCRIPTED_MODEL_INFO, provider: 'pictures', imageInput }] })
      await ctx.plugin(ReadImageToolPlugin, config).await()
    },
    loop: { provider: 'pictures', model: SCRIPTED_MODEL_INFO.model },
  })
  return h
}

function result(h: LoopHarness, index = 0): { text: string; blocks: readonly unknown[]; isError: boolean; code?: string } {
  const data = h.of('tool/result')[index]!.data as { message: ToolResultMessage; error?: { code: string } }
  const block = data.message.content[0]!
  return {
    text: block.content.map(part => part.type === 'text' ? part.text : '').join(''),
    blocks: block.content, isError: block.isError,
    ...(data.error !== undefined ? { code: data.error.code } : {}),
  }
}

const offered = (h: LoopHarness) => h.ctx.tools.schemas(h.agent.scope).some(schema => schema.name === 'read_image')

describe('read_image', () => {
  it('on a model that takes images: the result is a line about the image and the image itself, kept with the session and sent with the next request', async () => {
    const png = pngImage(3, 2)
    writeFileSync(join(cwd, 'shot.png'), png)
    const h = await harness([toolCalls([{ id: 'r1', name: 'read_image', arguments: { file_path: 'shot.png' } }]), text('a red image')], true)
    expect(offered(h)).toBe(true)
    h.agent.followup('what is in shot.png?')
    await h.agent.whenIdle()
    const read = result(h)
    expect(read.isError).toBe(false)
    expect(read.text).toBe(`<path>${join(cwd, 'shot.png')}</path>\n<type>image</type>\n<content>\nimage/png image, 3x2 px, ${png.length} bytes\n</content>`)
    const image = read.blocks[1] as { type: string; attachment: { attachmentId: string; mediaType: string } }
    expect(image).toMatchObject({ type: 'image', attachment: { mediaType: 'image/png', width: 3, height: 2, bytes: png.length, name: 'shot.png' } })
    // The bytes are the session's (content-addressed), so the request is a function of the log.
    const stored = await h.ctx.sessions.attachments.read(h.session.id, image.attachment.attachmentId)
    expect(Buffer.from(stored!.data)).toEqual(png)
    const second = model.requests[1]!
    expect(JSON.stringify(second.messages)).toContain(image.attachment.attachmentId)
  })

  it('on a text-only model it is not offered at all; with always it is, and refuses naming the model', async () => {
    const hidden = await harness([], false)
    expect(offered(hidden)).toBe(false)
    await hidden.dispose()
    writeFileSync(join(cwd, 'red.png'), pngImage(1, 1))
    const h2 = await harness([toolCalls([{ id: 'r1', name: 'read_image', arguments: { file_path: 'red.png' } }]), text('cannot')], false, { always: true })
    expect(offered(h2)).toBe(true)
    h2.agent.followup('look at red.png')
    await h2.agent.whenIdle()
    expect(result(h2)).toMatchObject({
      isError: true, code: 'IMAGE_INPUT_UNSUPPORTED',
      text: `Error: cannot read "red.png" as an image: model "${SCRIPTED_MODEL_INFO.model}" does not declare image input; switch to an image-capable model to read images`,
    })
  })

  it('a file that is not an image, a missing file and a folder are clear errors', async () => {
    writeFileSync(join(cwd, 'notes.txt'), 'just text\n')
    const h = await harness([
      toolCalls([{ id: 'a', name: 'read_image', arguments: { file_path: 'notes.txt' } }]),
      toolCalls([{ id: 'b', name: 'read_image', arguments: { file_path: 'missing.png' } }]),
      toolCalls([{ id: 'c', name: 'read_image', arguments: { file_path: '.' } }]),
      text('done'),
    ], true)
    h.agent.followup('go')
    await h.agent.whenIdle()
    expect(result(h, 0)).toMatchObject({ isError: true, code: 'NOT_AN_IMAGE', text: `Error: cannot read ${join(cwd, 'notes.txt')} as an image: "notes.txt" is not a PNG, JPEG, GIF or WebP image` })
    expect(result(h, 1)).toMatchObject({ isError: true, code: 'NOT_FOUND', text: `Error: no such file: ${join(cwd, 'missing.png')}` })
    expect(result(h, 2)).toMatchObject({ isError: true, code: 'NOT_A_FILE' })
  })
})

describe('read_image in the web view', () => {
  it('a tool result with an image keeps the image for its card', async () => {
    const { LogFold } = await import('../../web/src/fold.js')
    const fold = new LogFold()
    const attachment = { attachmentId: `sha256:${'a'.repeat(64)}`, mediaType: 'image/png', width: 3, height: 2, bytes: 90, name: 'shot.png' }
    fold.apply([
      { seq: 0, time: 1, type: 'turn/start', data: { turn: 1 } },
      { seq: 1, time: 1, type: 'step/start', data: { turn: 1, step: 1 } },
      { seq: 2, time: 1, type: 'assistant/message', data: { turn: 1, step: 1, message: { role: 'assistant', content: [{ type: 'tool-call', id: 'r1', name: 'read_image', arguments: '{"file_path":"shot.png"}' }] } } },
      { seq: 3, time: 1, type: 'tool/call', data: { turn: 1, step: 1, callId: 'r1', name: 'read_image', arguments: '{"file_path":"shot.png"}' } },
      { seq: 4, time: 2, type: 'tool/result', data: { turn: 1, step: 1, message: { role: 'user', content: [{ type: 'tool-result', toolCallId: 'r1', isError: false, content: [{ type: 'text', text: '<path>/w/shot.png</path>' }, { type: 'image', attachment }] }] } } },
    ] as never)
    const call = (fold.items as any[]).flatMap(item => item.calls ?? []).find((c: { id: string }) => c.id === 'r1')
    expect(call.result.images).toEqual([expect.objectContaining({ attachmentId: attachment.attachmentId, mediaType: 'image/png' })])
  })
})
