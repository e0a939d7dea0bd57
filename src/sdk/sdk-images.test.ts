/**
 * Images through the SDK server (a real `dsh --profile sdk` process): on the text-only default
 * route an image prompt is refused with one line and leaves no session behind; nothing reaches
 * the model.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { FakeDeepSeek } from '../../test-support/fake-deepseek.js'
import { tempHome } from '../../test-support/run-dsh.js'
import { pngImage } from '../../test-support/images.js'
import { DshClient } from './client.js'

let fake: FakeDeepSeek
beforeAll(async () => { fake = await FakeDeepSeek.start() })
afterAll(async () => { await fake.close() })

describe('SDK prompts with images', () => {
  it('a text-only route refuses an image prompt in one line; no session is left and nothing is sent', async () => {
    const { home, cwd } = tempHome()
    const client = await DshClient.start({ cwd, env: { DSH_HOME: home, DEEPSEEK_BASE_URL: fake.url, DEEPSEEK_API_KEY: 'test-key', DSH_MODEL: undefined } })
    try {
      const refused = await client.prompt([{ type: 'text', text: 'look' }, { type: 'image', data: pngImage(2, 2).toString('base64'), mimeType: 'image/png' }]).catch((error: unknown) => error)
      expect((refused as Error).message).toContain('deepseek-v4-flash (deepseek-official) does not accept images: choose an image-capable model, or send the text without them')
      expect(fake.requests).toHaveLength(0)
      expect((await client.list()).sessions).toEqual([])
    } finally {
      await client.close()
    }
  })
})
