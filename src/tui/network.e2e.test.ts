/**
 * The network knob and wider approval grants in the terminal app, driven as a user drives it:
 * the real `dsh` in a real terminal (tmux, 80x24) against the fake model bed.server. `/network`
 * shows and switches the mode (the status bar follows; an unknown mode is an error line), and a
 * request that offers scopes (a stand-in for the network proxy, test-support/patches.ts) takes
 * `s` for this session and `a` always besides `y` and `n`. Every wait polls with a deadline.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { streamResponse, type FakeResponse } from '../../test-support/fake-deepseek.js'
import { dshBin, tempHome } from '../../test-support/run-dsh.js'
import { Terminal, terminalTestBed } from '../../test-support/tmux.js'
import { askNetworkPatch, noTitlePatch } from '../../test-support/patches.js'

const bed = terminalTestBed('terminal network tests')
const tmux = !bed.skip

const usage = { prompt_tokens: 1200, completion_tokens: 40 }
const noTitle = noTitlePatch()
const DSH = `${process.execPath} ${dshBin} --patch ${noTitle} --patch ${askNetworkPatch()}`

function toolCall(id: string, name: string, args: unknown): FakeResponse {
  return streamResponse([{ toolCall: { id, name, arguments: JSON.stringify(args) } }, { finish: 'tool_calls', usage }])
}

function sessionLog(home: string): { type: string; data: any }[] {
  const root = join(home, 'sessions')
  for (const project of readdirSync(root).filter(name => !name.startsWith('.'))) {
    for (const id of readdirSync(join(root, project))) {
      const file = join(root, project, id, 'session.jsonl')
      if (existsSync(file)) return readFileSync(file, 'utf8').trim().split('\n').slice(1).map(line => JSON.parse(line))
    }
  }
  throw new Error('no stored session')
}

async function command(terminal: Terminal, text: string): Promise<void> {
  terminal.type(text)
  await terminal.waitFor(screen => screen.includes(`› ${text}`), { what: `the typed command "${text}"` })
  terminal.keys('Enter')
}

describe.skipIf(!tmux)('terminal app: /network and wider approval grants (tmux)', () => {
  it('/network shows and switches the mode, the status bar follows, an unknown mode is an error; s and a answer a scoped request', async () => {
    const { home, cwd } = tempHome()
    bed.server.enqueue(
      toolCall('n1', 'fetch_host', { host: 'registry.example.org' }),
      toolCall('n2', 'fetch_host', { host: 'pypi.example.org' }),
      streamResponse([{ text: 'Both hosts answered.' }, { finish: 'stop', usage }]),
    )
    const terminal = Terminal.shell({ cwd, env: { DSH_HOME: home, DEEPSEEK_BASE_URL: bed.server.url, DEEPSEEK_API_KEY: 'test-key', DSH_MODEL: undefined, NO_COLOR: undefined, TERM: 'xterm-256color', DSH_NETWORK: 'full' } })
    bed.keep(terminal)
    await terminal.waitFor(/^\$$/m, { what: 'the shell prompt' })
    terminal.type(`clear; ${DSH}`)
    terminal.keys('Enter')
    await terminal.waitFor('Ask dsh to do something', { what: 'the input box', timeoutMs: 20_000 })
    // `full` (the plugin's default here) is what commands had before: the status bar says nothing of it.
    expect(terminal.screen().split('\n').at(-1)).toMatch(/· workspace-write · ctx 0%/)

    await command(terminal, '/help')
    await terminal.waitFor(/\/network — Show the network mode of sandboxed commands/, { what: '/network in /help', history: true })
    await command(terminal, '/network')
    const shown = await terminal.waitFor('Switch with /network full|allowlist|none', { what: 'the /network listing', history: true })
    expect(shown).toContain([
      'Network of sandboxed commands: full',
      "* full       share this machine's network",
      '  allowlist  only hosts in sandbox.allowedHosts (a proxy asks about others)',
      '  none       no network at all',
    ].join('\n'))
    await command(terminal, '/network nowhere')
    await terminal.waitFor('Unknown network mode "nowhere". Modes: full, allowlist, none', { what: 'the error line', history: true })
    expect(terminal.screen().split('\n').at(-1)).toMatch(/· workspace-write · ctx 0%/)
    await command(terminal, '/network allowlist')
    await terminal.waitFor(/· workspace-write · net allowlist · ct/, { what: 'the network mode in the status bar' })

    terminal.type('reach two hosts')
    await terminal.waitFor('› reach two hosts', { what: 'the typed prompt' })
    terminal.keys('Enter')
    const box = await terminal.waitFor('Allow network?', { what: 'the scoped approval box' })
    expect(box).toContain('connect to registry.example.org:443 (not in sandbox.allowedHosts)')
    expect(box).toContain('y allow once · s for this session · a always (add to settings) · n reject')
    terminal.keys('s')
    await terminal.waitFor('connect to pypi.example.org:443', { what: 'the second request' })
    terminal.keys('a')
    await terminal.waitFor('Both hosts answered.', { history: true })
    terminal.keys('C-c')
    await terminal.waitFor('Press Ctrl-C again to exit')
    terminal.keys('C-c')
    await terminal.waitFor(screen => /(or|Resume): dsh --session/.test(screen) && /\n\$$/.test(screen), { what: 'the resume hint and the prompt', history: true })

    const log = sessionLog(home)
    expect(log.filter(event => event.type === 'sandbox/network').map(event => event.data)).toEqual([{ network: 'allowlist' }])
    expect(log.filter(event => event.type === 'approval/decided').map(event => event.data.outcome)).toEqual(['allowed-session', 'allowed-always'])
    const results = log.filter(event => event.type === 'tool/result').map(event => event.data.message.content[0].content[0].text)
    expect(results).toEqual(['network approval: allowed-session', 'network approval: allowed-always'])
  })
})
