/**
 * Records what the terminal app looks like for docs/terminal.md: runs the real binary in tmux
 * against the fake model server (a small coding task, a queued message, the resume picker) and
 * writes plain-text screen captures to docs/terminal/ at 80x24 and 160x48.
 *
 *   npx tsx scripts/terminal-captures.ts        (needs tmux and a built dist/)
 */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { FakeDeepSeek, streamResponse } from '../test-support/fake-deepseek.js'
import { dshBin, repoRoot } from '../test-support/run-dsh.js'
import { hasTmux, Terminal } from '../test-support/tmux.js'

if (!hasTmux()) {
  console.error('terminal-captures: tmux is missing (apt-get install -y tmux)')
  process.exit(1)
}
const out = join(repoRoot, 'docs', 'terminal')
mkdirSync(out, { recursive: true })
const usage = { prompt_tokens: 3100, completion_tokens: 120 }
const patch = join(mkdtempSync(join(tmpdir(), 'dsh-captures-')), 'no-title.yml')
writeFileSync(patch, '- id: session-title\n  config:\n    llm: false\n')

async function record(width: number, height: number): Promise<void> {
  const server = await FakeDeepSeek.start()
  const home = mkdtempSync(join(tmpdir(), 'dsh-home-'))
  const cwd = mkdtempSync(join(tmpdir(), 'project-'))
  writeFileSync(join(cwd, 'sum.py'), 'def total(xs):\n    return sum(xs) + 1\n')
  let release!: () => void
  const held = new Promise<void>(resolve => { release = resolve })
  server.enqueue(
    streamResponse([{ reasoning: 'The off-by-one is in total(); read it first.' }, { text: 'Let me look at `sum.py`.' }, { toolCall: { id: 'r1', name: 'read', arguments: JSON.stringify({ file_path: 'sum.py' }) } }, { finish: 'tool_calls', usage }]),
    streamResponse([{ toolCall: { id: 'e1', name: 'edit', arguments: JSON.stringify({ file_path: 'sum.py', old_string: 'return sum(xs) + 1', new_string: 'return sum(xs)' }) } }, { finish: 'tool_calls', usage }]),
    { segments: [{ until: held }, ...streamResponse([{ toolCall: { id: 'b1', name: 'bash', arguments: JSON.stringify({ command: 'python3 -c "import sum; print(sum.total([1, 2, 3]))"', description: 'check' }) } }, { finish: 'tool_calls', usage }]).segments!] },
    streamResponse([{ text: 'Fixed: `total()` no longer adds 1.\n\n```python\ndef total(xs):\n    return sum(xs)\n```\n\n| call | before | after |\n|---|---:|---:|\n| `total([1, 2, 3])` | 7 | **6** |\n| `total([])` | 1 | 0 |' }, { finish: 'stop', usage }]),
    streamResponse([{ text: 'Added a docstring is left for you; nothing else to change.' }, { finish: 'stop', usage }]),
  )
  const terminal = Terminal.shell({ cwd, width, height, env: { DSH_HOME: home, DEEPSEEK_BASE_URL: server.url, DEEPSEEK_API_KEY: 'demo', TERM: 'xterm-256color', DSH_MODEL: undefined, NO_COLOR: undefined } })
  const save = (name: string, text: string) => writeFileSync(join(out, `${name}-${width}x${height}.txt`), `${text.replace(new RegExp(cwd, 'g'), '~/project').replace(/\/tmp\/project-\w+/g, '~/project')}\n`)
  try {
    await terminal.waitFor(/^\$$/m)
    terminal.type(`clear; cd ${cwd} && ${process.execPath} ${dshBin} --patch ${patch}`)
    terminal.keys('Enter')
    save('01-start', await terminal.waitFor('Ask dsh to do something', { timeoutMs: 20_000 }))
    terminal.type('total() in sum.py is off by one, fix it and check')
    terminal.keys('Enter')
    await terminal.waitFor('Esc to cancel')
    terminal.type('then add a docstring')
    terminal.keys('Enter')
    save('02-running-with-queue', await terminal.waitFor('↳ queued: then add a docstring'))
    release()
    save('03-done', await terminal.waitFor('nothing else to change', { history: false, timeoutMs: 20_000 }))
    terminal.type('/')
    save('04-commands', await terminal.waitFor('/exit'))
    terminal.keys('BSpace')
    await terminal.waitFor('Ask dsh to do something')
    terminal.keys('C-c')
    await terminal.waitFor('Press Ctrl-C again')
    terminal.keys('C-c')
    save('05-exit', await terminal.waitFor(screen => screen.includes('or: dsh --session') && /\n\$$/.test(screen)))
    terminal.type(`clear; ${process.execPath} ${dshBin} --patch ${patch} --resume`)
    terminal.keys('Enter')
    save('06-resume-picker', await terminal.waitFor('Resume a session', { timeoutMs: 20_000 }))
    terminal.keys('Escape')
  } finally {
    terminal.close()
    await server.close()
  }
}

await record(80, 24)
await record(160, 48)
console.log(`captures written to ${out}`)
