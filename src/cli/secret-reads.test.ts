/**
 * Secret reads from the launcher (security #40.3): the sandbox row hides the defaults under the
 * user's HOME and dsh's home, and takes settings.yaml `sandbox: {denyRead, allowRead}`. Whole
 * processes against a fake model that asks for the files with the read tool.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { FakeDeepSeek, streamResponse } from '../../test-support/fake-deepseek.js'
import { runDsh, tempHome } from '../../test-support/run-dsh.js'

let server: FakeDeepSeek
const userHomes: string[] = []
beforeAll(async () => { server = await FakeDeepSeek.start() })
afterAll(async () => {
  await server.close()
  for (const home of userHomes) rmSync(home, { recursive: true, force: true })
})

const usage = { prompt_tokens: 10, completion_tokens: 3 }

function setUp(settings: string) {
  const { home: dshHome, cwd } = tempHome()
  const userHome = mkdtempSync(join(tmpdir(), 'dsh-user-home-'))
  userHomes.push(userHome)
  mkdirSync(join(userHome, '.ssh'))
  mkdirSync(join(userHome, 'notes'))
  writeFileSync(join(userHome, '.ssh', 'id_rsa'), 'TOPSECRET ssh key\n')
  writeFileSync(join(userHome, '.npmrc'), '//registry.example/:_authToken=npm-token\n')
  writeFileSync(join(userHome, 'notes', 'private.txt'), 'private notes\n')
  writeFileSync(join(dshHome, 'settings.yaml'), settings)
  const env = { DSH_HOME: dshHome, HOME: userHome, DEEPSEEK_BASE_URL: server.url, DEEPSEEK_API_KEY: 'test-key', DSH_PERMISSION_MODE: undefined }
  return { cwd, env, dshHome, userHome }
}

describe('secret reads from settings.yaml (security #40.3)', () => {
  it('the defaults hide ~/.ssh and dsh home; sandbox.denyRead adds a file, sandbox.allowRead takes ~/.npmrc off', async () => {
    const { cwd, env, dshHome } = setUp('sandbox:\n  denyRead: ["~/notes/private.txt"]\n  allowRead: ["~/.npmrc"]\n')
    const reads = ['~/.ssh/id_rsa', '~/.npmrc', '~/notes/private.txt', join(dshHome, 'settings.yaml')]
    server.enqueue(
      streamResponse([...reads.map((file_path, index) => ({ toolCall: { index, id: `r${index}`, name: 'read', arguments: JSON.stringify({ file_path }) } })), { finish: 'tool_calls', usage }]),
      streamResponse([{ text: 'done' }, { finish: 'stop', usage }]),
    )
    const before = server.requests.length
    const run = await runDsh(['--profile', 'headless', 'read them'], { cwd, env })
    expect(run.code, run.stderr).toBe(0)
    const tool = (id: string) => server.requests[before + 1]!.body.messages.find((message: { tool_call_id?: string }) => message.tool_call_id === id)?.content as string
    const lift = 'sandbox.denyRead / sandbox.allowRead in settings.yaml; danger-full-access lifts it'
    expect(tool('r0')).toContain(`read: ~/.ssh/id_rsa is hidden from tools by the sandbox's deny-read list (rule ~/.ssh; ${lift})`)
    expect(tool('r1')).toContain('npm-token')
    expect(tool('r2')).toContain(`read: ~/notes/private.txt is hidden from tools by the sandbox's deny-read list (rule ~/notes/private.txt; ${lift})`)
    expect(tool('r3')).toContain('is hidden from tools')
    expect(JSON.stringify(server.requests[before + 1]!.body)).not.toContain('TOPSECRET')
  })

  it('a bad value in settings is refused with a clear message', async () => {
    const { cwd, env } = setUp('sandbox:\n  denyRead: "~/.ssh"\n')
    server.enqueue(streamResponse([{ text: 'never' }, { finish: 'stop', usage }]))
    const run = await runDsh(['--profile', 'headless', 'hello'], { cwd, env })
    expect(run.code).not.toBe(0)
    expect(run.stderr).toContain('sandbox: config.denyRead must be a list of absolute or ~/ paths, got "~/.ssh"')
  })
})
