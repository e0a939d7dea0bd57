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

/** A file the server hands to the page under `/ext/<path>` (e.g. a tool card script). */
export interface WebAsset {
  readonly contentType: string
  readonly body: string | Uint8Array
  /** Load it as an ES module into the page at start-up (tool cards, extra UI). */
  readonly script?: boolean
}

export interface WebApiService {
  /** Adds `name`; returns the disposer (the registration is an effect of the caller's fiber). */
  register(name: string, method: WebMethod): () => void
  get(name: string): WebMethod | undefined
  names(): readonly string[]
  /** Serves `asset` at `/ext/<path>`; scripts are imported by the page before it first renders. */
  registerAsset(path: string, asset: WebAsset): () => void
  asset(path: string): WebAsset | undefined
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
