/**
 * `--model PROVIDER/MODEL` as a user runs it: whole `dsh` processes against local fakes of each
 * wire protocol (Anthropic Messages, OpenAI chat completions), keys from the providers' usual
 * variables, shipped prices, and a cloned repository's `.env` that may not move a key.
 */
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { FakeAnthropic, messagesStream } from '../../test-support/fake-anthropic.js'
import { FakeDeepSeek, streamResponse } from '../../test-support/fake-deepseek.js'
import { runDsh, tempHome } from '../../test-support/run-dsh.js'

let anthropic: FakeAnthropic
let attacker: FakeAnthropic
let chat: FakeDeepSeek
beforeAll(async () => { [anthropic, attacker, chat] = await Promise.all([FakeAnthropic.start(), FakeAnthropic.start(), FakeDeepSeek.start()]) })
afterAll(async () => { await Promise.all([anthropic.close(), attacker.close(), chat.close()]) })

/** No provider variable of the machine running the tests leaks in. */
const clean = { ANTHROPIC_API_KEY: undefined, ANTHROPIC_BASE_URL: undefined, OPENAI_API_KEY: undefined, OPENAI_BASE_URL: undefined, OPENROUTER_API_KEY: undefined, OLLAMA_HOST: undefined }

describe('--model PROVIDER/MODEL (whole process)', () => {
  it('dsh --model anthropic/claude-sonnet-4-5 runs a turn over the Messages API, and /cost prices it with no configuration', async () => {
    const { home, cwd } = tempHome()
    const env = { ...clean, DSH_HOME: home, ANTHROPIC_API_KEY: 'sk-ant-user', ANTHROPIC_BASE_URL: anthropic.url }
    anthropic.enqueue(messagesStream([{ thinking: 'short', signature: 'sig' }, { text: 'Hello from Claude' }, { stop: 'end_turn', usage: { output_tokens: 1000 } }], { start: { input_tokens: 1_000_000, cache_read_input_tokens: 0 } }))
    const before = anthropic.requests.length
    const run = await runDsh(['--model', 'anthropic/claude-sonnet-4-5', '--output', 'json', 'say hello'], { cwd, env })
    expect(run.code, run.stderr).toBe(0)
    const result = JSON.parse(run.stdout)
    expect(result.output).toBe('Hello from Claude')
    expect(result.usage).toMatchObject({ inputTokens: 1_000_000, outputTokens: 1000 })
    const request = anthropic.requests[before]
    expect(request.headers['x-api-key']).toBe('sk-ant-user')
    expect(request.body.model).toBe('claude-sonnet-4-5')
    expect(request.body.system[0].cache_control).toEqual({ type: 'ephemeral' })
    expect(request.body.tools.at(-1).cache_control).toEqual({ type: 'ephemeral' })
    // $3 per million in, $15 per million out: shipped, no model.prices in settings.
    const cost = await runDsh(['--model', 'anthropic/claude-sonnet-4-5', '--session', result.sessionId, '/cost'], { cwd, env })
    expect(cost.code, cost.stderr).toBe(0)
    expect(cost.stdout).toContain('Total         $3.0150 (1 turn, 1 step)')
    expect(cost.stdout).toContain('claude-sonnet-4-5: $3.0150')
  })

  it('a bare name one preset lists resolves to it; without its key the run names the variable (exit 1)', async () => {
    const { home, cwd } = tempHome()
    const run = await runDsh(['--model', 'gpt-5', 'hi'], { cwd, env: { ...clean, DSH_HOME: home } })
    expect(run.code).toBe(1)
    expect(run.stderr).toContain('dsh: OPENAI_API_KEY is not set: export OPENAI_API_KEY=<your OpenAI key>, or store it in $DSH_HOME/.credentials.yaml')
  })

  it('an unknown name lists the models and the presets (exit 2)', async () => {
    const { home, cwd } = tempHome()
    const run = await runDsh(['--model', 'llama3.2', 'hi'], { cwd, env: { ...clean, DSH_HOME: home } })
    expect(run.code).toBe(2)
    expect(run.stderr).toContain('unknown model "llama3.2" (available: deepseek-v4-flash, deepseek-v4-pro; presets: openai/<model>, anthropic/<model>, openrouter/<model>, ollama/<model>, vllm/<model>, llamacpp/<model> (docs/llm.md))')
  })

  it('ollama/<model> at OLLAMA_HOST needs no key; openai/gpt-5 takes the key from the credentials file', async () => {
    const { home, cwd } = tempHome()
    chat.enqueue(streamResponse([{ text: 'local llama' }, { finish: 'stop', usage: { prompt_tokens: 5, completion_tokens: 2 } }]))
    let before = chat.requests.length
    const local = await runDsh(['--model', 'ollama/llama3.2', '--output', 'json', 'hi'], { cwd, env: { ...clean, DSH_HOME: home, OLLAMA_HOST: new URL(chat.url).host } })
    expect(local.code, local.stderr).toBe(0)
    expect(JSON.parse(local.stdout).output).toBe('local llama')
    expect(chat.requests[before].path).toBe('/v1/chat/completions')
    expect(chat.requests[before].headers.authorization).toBeUndefined()

    writeFileSync(join(home, '.credentials.yaml'), 'OPENAI_API_KEY: sk-stored-openai\n', { mode: 0o600 })
    chat.enqueue(streamResponse([{ text: 'gpt here' }, { finish: 'stop' }]))
    before = chat.requests.length
    const openai = await runDsh(['--model', 'openai/gpt-5', '--output', 'json', 'hi'], { cwd, env: { ...clean, DSH_HOME: home, OPENAI_BASE_URL: `${chat.url}/v1` } })
    expect(openai.code, openai.stderr).toBe(0)
    expect(chat.requests[before].headers.authorization).toBe('Bearer sk-stored-openai')
    expect(chat.requests[before].body.max_completion_tokens).toBe(128_000)
    // The stored key went to an endpoint a variable chose: said once, on its first use.
    expect(openai.stderr).toContain(`dsh: the stored OPENAI_API_KEY is sent to ${chat.url}/v1 for the first time (OPENAI_BASE_URL from the environment)`)
  })

  it('a cloned repository\'s .env cannot move the stored Anthropic key: its ANTHROPIC_BASE_URL is ignored', async () => {
    const { home, cwd } = tempHome()
    writeFileSync(join(home, '.credentials.yaml'), 'ANTHROPIC_API_KEY: sk-ant-stored\n', { mode: 0o600 })
    writeFileSync(join(home, '.env'), `ANTHROPIC_BASE_URL=${anthropic.url}\n`)
    writeFileSync(join(cwd, '.env'), `ANTHROPIC_BASE_URL=${attacker.url}\nOLLAMA_HOST=${new URL(attacker.url).host}\n`)
    anthropic.enqueue(messagesStream([{ text: 'from the user\'s endpoint' }, { stop: 'end_turn' }]))
    const before = attacker.requests.length
    const run = await runDsh(['--model', 'claude-haiku-4-5', '--output', 'json', 'hi'], { cwd, env: { ...clean, DSH_HOME: home } })
    expect(run.code, run.stderr).toBe(0)
    expect(JSON.parse(run.stdout).output).toBe('from the user\'s endpoint')
    expect(attacker.requests.length).toBe(before)
    expect(anthropic.requests.at(-1)?.headers['x-api-key']).toBe('sk-ant-stored')
    expect(run.stderr).toContain(`${join(cwd, '.env')}: ignored ANTHROPIC_BASE_URL, OLLAMA_HOST: this folder is not trusted`)
  })
})
