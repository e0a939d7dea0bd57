/**
 * The public face of the web seam: `ctx.webApi`, the registry of `POST /api/<method>` handlers
 * that the `dsh web` server dispatches to. Plugins add methods with `register`; the core set
 * (sessions, prompt, steer, models, settings...) is registered by the `web-api` plugin.
 */
import type { Context } from 'cordis'

/** What a method handler gets besides its JSON body. */
export interface WebRequestContext {
  /** Aborted when the client goes away. */
  readonly signal: AbortSignal
}

/** A JSON method: takes the parsed body, returns any JSON-serialisable value. */
export type WebMethod = (params: Record<string, unknown>, request: WebRequestContext) => unknown

/** A method failure with an HTTP status and a code the browser can branch on. */
export class WebApiError extends Error {
  constructor(readonly status: number, readonly code: string, message: string) {
    super(message)
    this.name = 'WebApiError'
  }
}

export interface WebApiService {
  /** Adds `name`; returns the disposer (the registration is an effect of the caller's fiber). */
  register(name: string, method: WebMethod): () => void
  get(name: string): WebMethod | undefined
  names(): readonly string[]
}

declare module 'cordis' {
  interface Context {
    webApi: WebApiService
  }
  interface Events {
    /**
     * @mode emit (contained). A session's summary changed (created, status, title, turn,
     * deleted); the server pushes it to every open page so sidebars stay current.
     */
    'web/session-changed'(sessionId: string): void
  }
}

export type { Context }
