import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { Context } from 'cordis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { FakeDeepSeek, streamResponse } from '../../test-support/fake-deepseek.js'
import { runDsh, tempHome } from '../../test-support/run-dsh.js'
import type { LoadedRow } from './loader.js'
import { disposeForExit, IN_MEMORY_ONLY_ROWS, LOADING_STACK_FRAMES, LONG_RUN_FLAGS, longRunFlagsAt } from './run.js'

const FIBER_DISPOSED = 4

/** A plugin that records its own unloading, with a child plugin that does the same. */
function recorder(name: string, log: string[]) {
  return {
    name,
    apply(ctx: Context) {
      ctx.effect(() => () => { log.push(name) })
      ctx.plugin({ name: `${name}:child`, apply: (child: Context) => { child.effect(() => () => { log.push(`${name}:child`) }) } })
    },
  }
}

async function settled(): Promise<void> {
  for (let i = 0; i < 5; i += 1) await new Promise(resolve => setImmediate(resolve))
}

describe('disposeForExit', () => {
  it('unloads every row but the in-memory-only built-ins (and their children), in reverse load order', async () => {
    const root = new Context()
    const log: string[] = []
    const rows = ['sessions', 'tools', 'some-npm-plugin', 'builtin-tools', 'agents']
    const loaded: LoadedRow[] = rows.map(name => ({ row: { id: name, name }, fiber: root.plugin(recorder(name, log)) }))
    // A plugin started at run time on the root (no row of its own) is unloaded too.
    root.plugin(recorder('runtime', log))
    await settled()
    await disposeForExit(root, loaded)
    expect([...log].sort()).toEqual(['agents', 'agents:child', 'runtime', 'runtime:child', 'sessions', 'sessions:child', 'some-npm-plugin', 'some-npm-plugin:child'])
    // Reverse load order, as before: the first row (the session service) goes last.
    expect(log.at(-1)).toBe('sessions')
    expect(log.indexOf('agents')).toBeLessThan(log.indexOf('some-npm-plugin'))
    for (const { row, fiber } of loaded) expect(fiber.state === FIBER_DISPOSED, row.name).toBe(!IN_MEMORY_ONLY_ROWS.has(row.name))
  })

  it('unloads everything when the rows did not finish loading', async () => {
    const root = new Context()
    const log: string[] = []
    root.plugin(recorder('tools', log))
    await settled()
    await disposeForExit(root, undefined)
    expect(log).toEqual(['tools:child', 'tools'])
  })

  it('skips no row that holds something outside the process', () => {
    for (const name of ['sessions', 'persistence-jsonl', 'persistence-sqlite', 'persistence-postgres', 'agents', 'subagents', 'hooks', 'mcp', 'mcp-server', 'session-title', 'jobs', 'headless', 'web', 'web-api', 'sdk-server', 'acp-server', 'tui', 'group']) {
      expect(IN_MEMORY_ONLY_ROWS.has(name), name).toBe(false)
    }
  })
})

describe('longRunFlagsAt', () => {
  it('a fresh headless task sets the long-run V8 flags when its task starts; a resumed one and every server before loading', () => {
    expect(longRunFlagsAt('headless', ['say', 'hi'])).toBe('task')
    expect(longRunFlagsAt('headless', ['--session', 'abc', 'go on'])).toBe('start')
    for (const profile of ['tui', 'web', 'sdk', 'acp', 'my-profile']) expect(longRunFlagsAt(profile, ['task']), profile).toBe('start')
    expect(longRunFlagsAt('sessions', [])).toBe('never')
  })
})

describe('V8 flags of a run (whole process)', () => {
  // Node's own modules lose their code cache to any V8 flag set before they load (docs/decisions.md,
  // "V8 flags"): a short run sets none, a long one the profile runner's LONG_RUN_FLAGS.
  let server: FakeDeepSeek
  beforeAll(async () => { server = await FakeDeepSeek.start() })
  afterAll(async () => { await server.close() })
  const usage = { prompt_tokens: 10, completion_tokens: 3 }

  /**
   * The environment of a run that appends every V8 flag it sets to a file of its own, each with
   * the Node modules loaded after the flags before it (none for the first), and that file's lines.
   */
  function flagged(home: string, run: string) {
    const preload = join(home, 'record-flags.cjs')
    writeFileSync(preload, `const v8 = require('node:v8'); const { appendFileSync } = require('node:fs')
const set = v8.setFlagsFromString
const modules = () => process.moduleLoadList.filter(name => name.startsWith('NativeModule '))
let seen
v8.setFlagsFromString = flag => { appendFileSync(process.env.FLAGS_FILE, flag + '\\n'); seen ??= modules().length; return set(flag) }
process.on('exit', () => { if (seen !== undefined) appendFileSync(process.env.FLAGS_FILE, 'later: ' + modules().slice(seen).join(' ') + '\\n') })
`)
    const flags = join(home, `${run}.flags`)
    const env = { DSH_HOME: home, DEEPSEEK_BASE_URL: server.url, DEEPSEEK_API_KEY: 'test-key', NODE_OPTIONS: `--require ${preload}`, FLAGS_FILE: flags }
    const read = () => existsSync(flags) ? readFileSync(flags, 'utf8').split('\n').filter(Boolean) : []
    return { env, read }
  }

  it('a fresh one-answer run sets LONG_RUN_FLAGS when its task starts, after every Node module it loads; a resumed run before it loads', async () => {
    const { home, cwd } = tempHome()
    const fresh = flagged(home, 'fresh')
    server.enqueue(streamResponse([{ text: 'short' }, { finish: 'stop', usage }]))
    const first = await runDsh(['--profile', 'headless', 'a question'], { cwd, env: fresh.env })
    expect(first.stdout).toBe('short\n')
    const id = /dsh --session (\S+)/.exec(first.stderr)![1]
    // The long-run flags, then at most the launcher's reset to Node's defaults before it writes a
    // code cache; no Node module loaded after them (each would have lost its code cache).
    expect(fresh.read().slice(0, LONG_RUN_FLAGS.length)).toEqual([...LONG_RUN_FLAGS])
    expect(fresh.read()).not.toContain('--liftoff-only')
    expect(fresh.read().at(-1)).toBe('later: ')
    const resumed = flagged(home, 'resumed')
    server.enqueue(streamResponse([{ text: 'again' }, { finish: 'stop', usage }]))
    const again = await runDsh(['--profile', 'headless', '--session', id, 'go on'], { cwd, env: resumed.env })
    expect(again.stdout).toBe('again\n')
    expect(resumed.read().slice(0, LONG_RUN_FLAGS.length)).toEqual([...LONG_RUN_FLAGS])
    // Set before the plugin tree loads: the modules it loads come after.
    expect(resumed.read().at(-1)).toMatch(/^later: .*NativeModule http/)
  })
})

describe('stacks while the plugin tree loads (whole process)', () => {
  let server: FakeDeepSeek
  beforeAll(async () => { server = await FakeDeepSeek.start() })
  afterAll(async () => { await server.close() })
  const usage = { prompt_tokens: 10, completion_tokens: 3 }

  // A plugin that notes the stack limit, and an error's frames, as it loads and when a turn ends.
  const PLUGIN = `import { appendFileSync } from 'node:fs'
const frames = () => new Error('here').stack.split('\\n').length - 1
export default {
  name: 'stack-probe',
  apply(ctx, config) {
    appendFileSync(config.file, 'load ' + Error.stackTraceLimit + ' ' + (frames() > ${LOADING_STACK_FRAMES}) + '\\n')
    ctx.on('agent/turn-end', () => { appendFileSync(config.file, 'turn ' + Error.stackTraceLimit + ' ' + (frames() > ${LOADING_STACK_FRAMES}) + '\\n') })
  },
}
`

  async function probe(nodeOptions?: string): Promise<string> {
    const { home, cwd } = tempHome()
    const file = join(home, 'stacks.txt')
    writeFileSync(join(home, 'probe.mjs'), PLUGIN)
    const patch = join(home, 'probe.yml')
    writeFileSync(patch, `- insert:\n    - id: probe\n      name: ${join(home, 'probe.mjs')}\n      config: {file: ${JSON.stringify(file)}}\n`)
    server.enqueue(streamResponse([{ text: 'ok' }, { finish: 'stop', usage }]))
    const env = { DSH_HOME: home, DEEPSEEK_BASE_URL: server.url, DEEPSEEK_API_KEY: 'test-key', ...nodeOptions === undefined ? {} : { NODE_OPTIONS: nodeOptions } }
    const result = await runDsh(['--profile', 'headless', '--patch', patch, 'a question'], { cwd, env })
    expect(result.stdout).toBe('ok\n')
    return readFileSync(file, 'utf8')
  }

  it('an error made while plugins load keeps at most LOADING_STACK_FRAMES frames; the app runs with V8\'s default limit', async () => {
    expect(await probe()).toBe(`load ${LOADING_STACK_FRAMES} false\nturn 10 true\n`)
  })

  it('a limit the user set (node --stack-trace-limit) is kept throughout', async () => {
    expect(await probe('--stack-trace-limit=25')).toBe('load 25 true\nturn 25 true\n')
  })
})

describe('exit of a one-answer run (whole process)', () => {
  let server: FakeDeepSeek
  beforeAll(async () => { server = await FakeDeepSeek.start() })
  afterAll(async () => { await server.close() })
  const usage = { prompt_tokens: 10, completion_tokens: 3 }

  function files(dir: string, name: string): string[] {
    return readdirSync(dir, { recursive: true, encoding: 'utf8' }).filter(path => path.endsWith(name)).map(path => join(dir, path))
  }

  it('a title request still in flight at the answer lands in the log; the writer lock is given back', async () => {
    const { home, cwd } = tempHome()
    const patch = join(home, 'title.yml')
    writeFileSync(patch, '- id: session-title\n  config:\n    llm: true\n')
    server.enqueue(
      streamResponse([{ text: 'the answer' }, { finish: 'stop', usage }]),
      streamResponse([{ text: 'Exit Title' }, { finish: 'stop', usage }]),
    )
    const result = await runDsh(['--patch', patch, '--profile', 'headless', 'a question'], { cwd, env: { DSH_HOME: home, DEEPSEEK_BASE_URL: server.url, DEEPSEEK_API_KEY: 'test-key' } })
    expect(result.code).toBe(0)
    expect(result.stdout).toBe('the answer\n')
    const [log] = files(join(home, 'sessions'), 'session.jsonl')
    const events = readFileSync(log, 'utf8').trim().split('\n').map(line => JSON.parse(line)).filter(entry => typeof entry.type === 'string')
    expect(events.filter(event => event.type === 'session/title').map(event => event.data)).toContainEqual(expect.objectContaining({ title: 'Exit Title', source: expect.objectContaining({ kind: 'provider', provider: 'session-title-first-prompt-llm' }) }))
    expect(events.filter(event => event.type === 'session/title-llm-request')).toHaveLength(1)
    expect(events.at(-1)?.type).not.toBe('user/message')
    expect(files(join(home, 'sessions'), '.lock')).toEqual([])
  })

  it('a reader that goes away mid-run (| head) stops the run like SIGTERM: exit 141, no EPIPE stack, the session stored and closed', async () => {
    const { home, cwd } = tempHome()
    let readerGone!: () => void
    const gone = new Promise<void>(resolve => { readerGone = resolve })
    // The model streams, waits until the reader has left, streams one more chunk (dsh's next write
    // meets the closed pipe), and then never finishes: only dsh stopping ends this run.
    server.enqueue(streamResponse([{ text: 'first words' }, { until: gone }, { text: ' and more' }, { until: new Promise(() => {}) }]))
    const result = await runDsh(['--profile', 'headless', '--output', 'stream-json', 'a question'], {
      cwd,
      env: { DSH_HOME: home, DEEPSEEK_BASE_URL: server.url, DEEPSEEK_API_KEY: 'test-key' },
      // The reader leaves once the model's first words have reached it.
      onSpawn: child => {
        let seen = ''
        const read = (chunk: Buffer) => {
          seen += chunk.toString()
          if (!seen.includes('first words')) return
          child.stdout!.off('data', read)
          child.stdout!.destroy()
          readerGone()
        }
        child.stdout!.on('data', read)
      },
    })
    expect(server.pending).toBe(0)
    expect(result.stderr).not.toMatch(/EPIPE|Unhandled|node:events/)
    expect(result.code).toBe(141)
    const [log] = files(join(home, 'sessions'), 'session.jsonl')
    const events = readFileSync(log, 'utf8').trim().split('\n').map(line => JSON.parse(line)).filter(entry => typeof entry.type === 'string')
    expect(events.filter(event => event.type === 'turn/end').map(event => event.data.reason.kind)).toEqual(['aborted'])
    expect(files(join(home, 'sessions'), '.lock')).toEqual([])
  })

  it('a reader that takes part of a long answer and leaves (| head -c) ends dsh quietly with 141', async () => {
    const { home, cwd } = tempHome()
    server.enqueue(streamResponse([{ text: 'many words '.repeat(30_000) }, { finish: 'stop', usage }]))
    const result = await runDsh(['--profile', 'headless', 'a question'], {
      cwd,
      env: { DSH_HOME: home, DEEPSEEK_BASE_URL: server.url, DEEPSEEK_API_KEY: 'test-key' },
      onSpawn: child => child.stdout!.once('data', () => child.stdout!.destroy()),
    })
    expect(result.stderr).not.toMatch(/EPIPE|Unhandled|node:events/)
    expect(result.code).toBe(141)
  })
})
