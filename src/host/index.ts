/**
 * `ctx.host`: what the launching process knows (cwd, home folder, app arguments, environment
 * layers, settings, output streams). Plugins read it with `ctx.get('host')` so they still run
 * embedded in another program without a CLI.
 */
import type {} from 'cordis'
import type { EnvironmentLayers, Settings } from '../config/home.js'

export interface Host {
  readonly cwd: string
  readonly home: string
  /** App arguments: everything after the launcher flags. */
  readonly args: readonly string[]
  readonly env: EnvironmentLayers
  readonly settings: Settings
  readonly stdout: NodeJS.WritableStream
  readonly stderr: NodeJS.WritableStream & { isTTY?: boolean }
  /** Standard input for apps that read it (embedders set their own); default `process.stdin`, opened on first use. */
  readonly stdin?: NodeJS.ReadableStream
  /** Set by the launcher's signal handling; apps observe it to cancel work. */
  readonly signal: AbortSignal
}

/** An app is the plugin that owns the process's main job (headless run, SDK server...). */
export interface App {
  run(): Promise<number>
}

declare module 'cordis' {
  interface Context {
    host: Host
    app: App
  }
}
