/**
 * One set-up for the web API tests: the core plugins, JSONL persistence in the test's home, the
 * web API plugin and the scripted model, optionally behind a real `WebServer` on 127.0.0.1.
 */
import { request } from 'node:http'
import { join } from 'node:path'
import { Context } from 'cordis'
import type { ModelInfo } from '../src/llm/types.js'
import { JsonlPersistencePlugin } from '../src/persistence/plugins.js'
import { WebApiPlugin } from '../src/web/methods.js'
import { WebServer } from '../src/web/server.js'
import { SCRIPTED_MODEL_INFO, ScriptedModel } from './scripted-model.js'
import { startCore } from './agent-harness.js'

export interface WebApiOptions {
  /** The dsh home: sessions are stored under `<home>/sessions`. */
  readonly home: string
  /** The workspace folder new sessions start in (default: the home). */
  readonly cwd?: string
  /** The default model of new sessions (default: the scripted model). */
  readonly model?: string
  /** The models the scripted adapter offers (default: the scripted model alone). */
  readonly models?: readonly ModelInfo[]
  /** More plugins, started after the core ones and before the web API. */
  readonly plugins?: readonly ((ctx: Context) => { await(): Promise<unknown> })[]
  /** Serve over HTTP with this token (no server when absent). */
  readonly token?: string
}

export interface WebApiHarness {
  readonly ctx: Context
  readonly model: ScriptedModel
  /** The HTTP server and its port, when a token was given. */
  readonly server?: WebServer
  readonly port: number
  /** Disposes the agents, flushes the logs and closes the server. */
  stop(): Promise<void>
}

export async function startWebApi(options: WebApiOptions): Promise<WebApiHarness> {
  const ctx = new Context()
  await startCore(ctx, options.model)
  await ctx.plugin(JsonlPersistencePlugin, { root: join(options.home, 'sessions'), maxDelayMs: 5 }).await()
  for (const start of options.plugins ?? []) await start(ctx).await()
  await ctx.plugin(WebApiPlugin, { home: options.home, cwd: options.cwd ?? options.home }).await()
  const model = new ScriptedModel()
  model.register(ctx, options.models ?? [SCRIPTED_MODEL_INFO])
  let server: WebServer | undefined
  if (options.token !== undefined) {
    server = new WebServer(ctx, { host: '127.0.0.1', port: 0, token: options.token, staticDir: join(options.home, 'static') })
    await server.listen()
  }
  return {
    ctx, model, server, port: server?.port ?? 0,
    async stop() {
      await server?.close()
      for (const agent of ctx.agents.list()) await agent.dispose()
      await ctx.sessionPersistence.flushAll()
    },
  }
}

export interface HttpReply { status: number; headers: Record<string, string | string[] | undefined>; body: Buffer }

/** One request to 127.0.0.1:`port`; the Host header names the loopback address unless given. */
export function httpRequest(port: number, path: string, options: { method?: string; headers?: Record<string, string>; body?: string } = {}): Promise<HttpReply> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, method: options.method ?? 'GET', headers: { Host: `127.0.0.1:${port}`, ...options.headers } }, res => {
      const parts: Buffer[] = []
      res.on('data', (chunk: Buffer) => parts.push(chunk))
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(parts) }))
    })
    req.on('error', reject)
    req.end(options.body)
  })
}

/** `call` (status and parsed reply) and `ok` (the result, or a thrown error) over POST /api/<method>. */
export function apiClient(port: () => number, token: string) {
  const call = async (method: string, params: unknown = {}, headers: Record<string, string> = {}) => {
    const reply = await httpRequest(port(), `/api/${method}`, { method: 'POST', body: JSON.stringify(params), headers: { 'Content-Type': 'application/json', 'X-Dsh-Token': token, ...headers } })
    return { status: reply.status, json: JSON.parse(reply.body.toString('utf8')) }
  }
  const ok = async (method: string, params: unknown = {}) => {
    const reply = await call(method, params)
    if (reply.status !== 200) throw new Error(`${method}: ${reply.status} ${JSON.stringify(reply.json)}`)
    return reply.json.result
  }
  return { call, ok }
}

/** An open SSE stream: parsed events and a way to wait for one. */
export function openEventStream(port: number, path: string, token: string, headers: Record<string, string> = {}) {
  const events: { event: string; id?: string; data: any }[] = []
  const waiters: { test: (e: { event: string; data: any }) => boolean; resolve: (e: any) => void }[] = []
  let close = () => {}
  const ready = new Promise<number>((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, headers: { Host: `localhost:${port}`, 'X-Dsh-Token': token, ...headers } }, res => {
      resolve(res.statusCode ?? 0)
      let buffer = ''
      res.setEncoding('utf8').on('data', (chunk: string) => {
        buffer += chunk
        let end: number
        while ((end = buffer.indexOf('\n\n')) >= 0) {
          const block = buffer.slice(0, end)
          buffer = buffer.slice(end + 2)
          const fields: Record<string, string> = {}
          for (const line of block.split('\n')) {
            const index = line.indexOf(': ')
            if (index > 0) fields[line.slice(0, index)] = line.slice(index + 2)
          }
          if (fields.event === undefined) continue
          const parsed = { event: fields.event, id: fields.id, data: JSON.parse(fields.data) }
          events.push(parsed)
          for (const waiter of [...waiters]) if (waiter.test(parsed)) { waiters.splice(waiters.indexOf(waiter), 1); waiter.resolve(parsed) }
        }
      })
    })
    req.on('error', reject)
    req.end()
    close = () => req.destroy()
  })
  const waitFor = (test: (e: { event: string; data: any }) => boolean) => {
    const found = events.find(test)
    return found ? Promise.resolve(found) : new Promise<any>(resolve => waiters.push({ test, resolve }))
  }
  return { events, ready, waitFor, close: () => close() }
}
