import { createServer, type Server } from 'node:net'
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync, existsSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { bwrapRunner, probeRunner } from '../sandbox/runner.js'
import { hiddenPaths, readPolicy } from '../sandbox/secrets.js'
import { confinedCodeRuntime } from './confined.js'
import { describeCodeRuntime } from './runtime.conformance.js'

const runner = bwrapRunner()
const problem = await probeRunner(runner, { root: '/', timeoutMs: 10_000 })
if (problem !== undefined) console.warn(`skipping the confined code runtime tests: ${problem} (install the Debian package bubblewrap and allow unprivileged user namespaces)`)

const base = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-code-confined-')))
const workspace = join(base, 'work')
const home = join(base, 'home')
mkdirSync(workspace, { recursive: true })
mkdirSync(join(home, '.ssh'), { recursive: true })
writeFileSync(join(home, '.ssh', 'id_rsa'), 'SECRET KEY\n')
const hidden = hiddenPaths(readPolicy({ home, dshHome: join(home, '.dsh') }))
const prefix = async () => runner.argv('read-only', workspace, { pinned: [], readOnly: [], hidden }, { mode: 'none' })

if (problem === undefined) describeCodeRuntime('confined process (real bubblewrap)', () => confinedCodeRuntime({ prefix }))

/** A program thread whose program has all of Node (as if it had left its context). */
const ESCAPED_THREAD = String.raw`'use strict'
const { parentPort, workerData } = require('node:worker_threads')
const program = eval(workerData.script)
program().then(
  (value) => parentPort.postMessage({ type: 'finish', kind: 'done', text: JSON.stringify(value) }),
  (error) => parentPort.postMessage({ type: 'finish', kind: 'exception', text: String(error) }))
`

describe.skipIf(problem !== undefined)('the confined code runtime holds when the program has all of Node (#36)', () => {
  let server: Server
  let port: number
  beforeAll(async () => {
    server = createServer((socket) => socket.end('host service answered\n'))
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    port = (server.address() as { port: number }).port
  })
  afterAll(() => {
    server.close()
    rmSync(base, { recursive: true, force: true })
  })

  it('writes no file, reaches no host, sees no secret, and has no environment', async () => {
    const runtime = confinedCodeRuntime({ prefix, threadSource: ESCAPED_THREAD })
    const target = join(workspace, 'written.txt')
    const result = await runtime.run({
      tools: [],
      call: async () => ({ ok: false, message: 'no tools' }),
      code: `
        const fs = require('node:fs'), net = require('node:net')
        const attempt = (f: () => unknown) => { try { return String(f()) } catch (error: any) { return error.code ?? error.message } }
        const write = attempt(() => fs.writeFileSync(${JSON.stringify(target)}, 'x'))
        const secret = attempt(() => fs.readFileSync(${JSON.stringify(join(home, '.ssh', 'id_rsa'))}, 'utf8'))
        const connect = await new Promise(resolve => {
          const socket = net.connect(${port}, '127.0.0.1')
          socket.on('data', (data: Buffer) => resolve(String(data).trim()))
          socket.on('error', (error: any) => resolve(error.code))
        })
        return { write, secret, connect, env: Object.keys(process.env) }`,
    })
    expect(result.ok).toBe(true)
    const value = (result as unknown as { value: { write: string; secret: string; connect: string; env: string[] } }).value
    expect(value.write).toMatch(/EROFS|EACCES|EPERM/)
    expect(value.secret).not.toContain('SECRET KEY')
    expect(value.connect).toMatch(/ECONNREFUSED|ENETUNREACH|EACCES/)
    expect(value.env).toEqual([])
    expect(existsSync(target)).toBe(false)
  })

  it('a runner that cannot start is a worker-exit naming why, not a hang', async () => {
    const runtime = confinedCodeRuntime({ prefix: async () => [join(base, 'no-such-runner')] })
    const result = await runtime.run({ code: 'return 1', tools: [], call: async () => ({ ok: true }) })
    expect(result).toMatchObject({ ok: false, kind: 'worker-exit' })
    expect(result.ok === false && result.message).toContain('could not start')
  })
})
