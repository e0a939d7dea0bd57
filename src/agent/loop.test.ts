import { describe, expect, it } from 'vitest'
import { loopHarness } from '../../test-support/agent-harness.js'
import { text } from '../../test-support/scripted-model.js'

describe('ReactLoop', () => {
  it('A-5: a text turn logs turn/step boundaries, chunks and one assistant/message', async () => {
    const h = await loopHarness({ responses: [text('PONG')] })
    h.agent.followup('ping')
    await h.agent.whenIdle()
    expect(h.types()).toEqual([
      'agent/inbox/spliced', 'turn/start', 'agent/inbox/spliced', 'step/start', 'user/message',
      'request/header', 'request/context',
      'assistant/chunk', 'assistant/chunk', 'assistant/chunk', 'assistant/chunk',
      'assistant/message', 'step/end', 'turn/end',
    ])
  })
})
