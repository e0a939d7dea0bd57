#!/usr/bin/env node
// Offline demo: runs the real `dsh --profile headless` with a patch that swaps the model adapter
// for the replay adapter on a bundled recording (demo/script.jsonl). Tools and persistence are
// real: bash and read run in a fresh temporary copy of demo/workspace, and the session log is
// written under a temporary DSH_HOME. No network, no API key.
import { spawnSync } from 'node:child_process'
import { cpSync, mkdtempSync, readdirSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const workspace = mkdtempSync(join(tmpdir(), 'dsh-demo-work-'))
const home = process.env.DSH_DEMO_HOME ?? mkdtempSync(join(tmpdir(), 'dsh-demo-home-'))
cpSync(join(root, 'demo', 'workspace'), workspace, { recursive: true })

const patch = join(home, 'demo.patch.yml')
writeFileSync(patch, [
  '# Swap the DeepSeek adapter for a replay of a recorded run (same provider and model names).',
  '- id: model',
  '  name: llm-replay',
  '  config:',
  `    log: ${JSON.stringify(join(root, 'demo', 'script.jsonl'))}`,
  '',
].join('\n'))

const task = 'How many lines does each file in this workspace have, and what is notes.txt about?'
console.log(`$ dsh --profile headless --patch ${patch} --cwd ${workspace} "${task}"\n`)
const run = spawnSync(process.execPath, [join(root, 'bin', 'dsh.js'), '--profile', 'headless', '--patch', patch, '--cwd', workspace, task], {
  env: { ...process.env, DSH_HOME: home },
  stdio: ['ignore', 'inherit', 'inherit'],
})
if (run.status !== 0) process.exit(run.status ?? 1)

const logs = (dir) => readdirSync(dir).flatMap(name => {
  const path = join(dir, name)
  return statSync(path).isDirectory() ? logs(path) : name === 'session.jsonl' ? [path] : []
})
const [log] = logs(join(home, 'sessions')).sort((a, b) => statSync(b).mtimeMs - statSync(a).mtimeMs)
console.log(`\nsession log: ${log}`)
console.log(`list it:     DSH_HOME=${home} npx dsh sessions`)
