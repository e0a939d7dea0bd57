/**
 * The `web` app: `dsh web [--host H] [--port P] [--no-open] [--trust-host] [--allow-host NAME]...`.
 * Starts the server on 127.0.0.1:3080 by default, prints the tokened URL, opens a browser when
 * one is available, and serves until the launcher's signal.
 */
import { spawn } from 'node:child_process'
import { Service, type Context } from 'cordis'
import { WebServer } from './server.js'
import { keyUseQuestion } from './key-use.js'
import { isLoopbackHost, newToken } from './security.js'
import '../host/index.js'
import './api.js'
import '../persistence/api.js'
import { notStoredLines } from '../persistence/final-save.js'

export interface WebArgs {
  host: string
  port: number
  open: boolean
  trustHost: boolean
  allowHosts: string[]
  token?: string
}

export class WebUsageError extends Error {}

export function parseWebArgs(args: readonly string[]): WebArgs {
  const parsed: WebArgs = { host: '127.0.0.1', port: 3080, open: true, trustHost: false, allowHosts: [] }
  for (let index = 0; index < args.length; index += 1) {
    const arg = args[index]
    const value = () => {
      const next = args[index + 1]
      if (next === undefined || next.startsWith('--')) throw new WebUsageError(`${arg} needs a value`)
      index += 1
      return next
    }
    if (arg === '--host') parsed.host = value()
    else if (arg === '--port') {
      const port = Number(value())
      if (!Number.isInteger(port) || port < 0 || port > 65535) throw new WebUsageError(`--port must be 0..65535, not "${args[index]}"`)
      parsed.port = port
    } else if (arg === '--no-open') parsed.open = false
    else if (arg === '--trust-host') parsed.trustHost = true
    else if (arg === '--allow-host') parsed.allowHosts.push(value())
    else if (arg === '--token') parsed.token = value()
    else if (arg === '--cwd') value()
    else throw new WebUsageError(`unknown option ${arg} (dsh web [--host H] [--port P] [--no-open] [--trust-host] [--allow-host NAME])`)
  }
  if (!isLoopbackHost(parsed.host) && !parsed.trustHost) {
    throw new WebUsageError(`refusing to listen on non-loopback host "${parsed.host}": anyone who can reach it could drive your agent; pass --trust-host to do it anyway`)
  }
  if (parsed.allowHosts.length > 0 && !parsed.trustHost) throw new WebUsageError('--allow-host needs --trust-host')
  if (parsed.token !== undefined && parsed.token.length < MIN_TOKEN_LENGTH) throw new WebUsageError(`--token must be at least ${MIN_TOKEN_LENGTH} characters`)
  return parsed
}

/** The shortest token accepted from any source (--token or DSH_WEB_TOKEN). */
export const MIN_TOKEN_LENGTH = 16

function openBrowser(url: string): void {
  // Best effort: no opener (a server, CI) is not an error; the URL is printed anyway.
  const child = spawn('xdg-open', [url], { stdio: 'ignore', detached: true })
  child.on('error', () => {})
  child.unref()
}

export class WebApp extends Service {
  static readonly inject = ['host', 'webApi', 'sessions', 'agents']

  constructor(ctx: Context) {
    super(ctx, 'app')
  }

  async run(): Promise<number> {
    const { host } = this.ctx
    let args: WebArgs
    try {
      args = parseWebArgs(host.args)
    } catch (error) {
      host.stderr.write(`dsh: ${(error as Error).message}\n`)
      return 2
    }
    const fromEnv = args.token === undefined ? host.env.get('DSH_WEB_TOKEN') : undefined
    if (fromEnv !== undefined && fromEnv.value.length < MIN_TOKEN_LENGTH) {
      // Every token source has the same minimum: a short one is guessable.
      host.stderr.write(`dsh: DSH_WEB_TOKEN (from ${fromEnv.source}) must be at least ${MIN_TOKEN_LENGTH} characters\n`)
      return 2
    }
    const server = new WebServer(this.ctx, {
      host: args.host,
      port: args.port,
      token: args.token ?? host.env.value('DSH_WEB_TOKEN') ?? newToken(),
      trustedHosts: args.trustHost ? args.allowHosts : [],
    })
    // A stored key's first use with an endpoint is asked on the page (key-use.ts).
    const offKeyUse = this.ctx.on('llm/key-first-use', keyUseQuestion(this.ctx))
    try {
      await server.listen()
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code
      host.stderr.write(`dsh: cannot listen on ${args.host}:${args.port}: ${code === 'EADDRINUSE' ? 'the port is in use (try --port 0)' : (error as Error).message}\n`)
      offKeyUse()
      return 1
    }
    host.stdout.write(`dsh web: ${server.url}\n`)
    if (args.open) openBrowser(server.url)
    if (!host.signal.aborted) await new Promise(resolve => host.signal.addEventListener('abort', resolve, { once: true }))
    await server.close()
    offKeyUse()
    return this.finalSave()
  }

  /**
   * The exit's last word (docs/persistence.md, "When the store fails"): running turns are
   * stopped (their ends are part of what is saved), then every live session gets the final save,
   * retried for a bounded time while the store fails. A session it could not store is named on
   * stderr with how many events the store lacks, and the exit is 1.
   */
  private async finalSave(): Promise<number> {
    const { agents, host } = this.ctx
    const running = agents.list().filter(agent => agent.status === 'running')
    for (const agent of running) agent.cancel({ reason: { kind: 'user' } })
    await Promise.all(running.map(agent => agent.whenIdle()))
    const saves = await this.ctx.get('sessionPersistence')?.finalSaveAll() ?? []
    const unstored = notStoredLines(saves)
    for (const line of unstored) host.stderr.write(`dsh: ${line}\n`)
    return unstored.length > 0 ? 1 : 0
  }
}
