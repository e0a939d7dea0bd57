/**
 * A throwaway PostgreSQL server for tests and benchmarks: `initdb` in a temp folder, `postgres`
 * listening only on a unix socket inside that folder, stopped and removed at the end. As root
 * (initdb refuses to run as root) both run as the unprivileged `nobody` user, which owns the
 * folder. The Debian `postgresql` package provides the binaries; when they are missing and we
 * may (root, apt-get present) it is installed first. Without them the tests skip and say how to
 * get them, except under CI=true, where a missing server is an error.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

export const POSTGRES_HINT = 'install the Debian postgresql package (apt-get install postgresql) or set DSH_PG_BIN to a folder holding initdb and postgres'

export interface PostgresServer {
  /** Connection string for the superuser `dsh` on the `postgres` database, over the unix socket. */
  readonly url: string
  /** The cluster's data folder (0700, owned by the server's user). */
  readonly dataDir: string
  /** Fast shutdown, then the temp folder is removed. */
  stop(): Promise<void>
  /** Fast shutdown keeping the cluster (an outage): `restart` brings the same server back. */
  halt(): Promise<void>
  /** Starts the halted server again on the same socket; resolves once it accepts connections. */
  restart(): Promise<void>
}

function binFolder(): { bin?: string; reason?: string } {
  const configured = process.env.DSH_PG_BIN
  if (configured) return existsSync(join(configured, 'initdb')) ? { bin: configured } : { reason: `DSH_PG_BIN=${configured} holds no initdb` }
  const found = () => {
    const root = '/usr/lib/postgresql'
    if (!existsSync(root)) return undefined
    const versions = readdirSync(root).filter((v) => existsSync(join(root, v, 'bin', 'initdb'))).sort((a, b) => Number(b) - Number(a))
    return versions.length > 0 ? join(root, versions[0], 'bin') : undefined
  }
  let bin = found()
  if (bin) return { bin }
  const onPath = spawnSync('sh', ['-c', 'command -v apt-get'], { encoding: 'utf8' }).status === 0
  if (process.getuid?.() !== 0 || !onPath) return { reason: `no PostgreSQL server binaries (${POSTGRES_HINT})` }
  const install = spawnSync('sh', ['-c', 'apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql'], { stdio: 'ignore', timeout: 540_000 })
  bin = found()
  return bin ? { bin } : { reason: `apt-get install postgresql failed (exit ${install.status}); ${POSTGRES_HINT}` }
}

let cached: { bin?: string; reason?: string } | undefined

/** Undefined when a server can be started; otherwise the one-line reason (CI=true throws instead). */
export function postgresUnavailable(): string | undefined {
  cached ??= binFolder()
  if (cached.bin) return undefined
  if (process.env.CI === 'true') throw new Error(`PostgreSQL tests cannot run under CI=true: ${cached.reason}`)
  return cached.reason
}

/** Starts a fresh cluster; `fsync: false` (the default) trades crash safety of the server for speed. */
export async function startPostgres(options: { fsync?: boolean } = {}): Promise<PostgresServer> {
  const reason = postgresUnavailable()
  if (reason) throw new Error(reason)
  const bin = cached!.bin!
  const root = mkdtempSync(join(tmpdir(), 'dsh-pg-'))
  const dataDir = join(root, 'data')
  const asRoot = process.getuid?.() === 0
  const ids = asRoot ? { uid: 65534, gid: 65534 } : {}
  if (asRoot) chownSync(root, 65534, 65534)
  const init = spawnSync(join(bin, 'initdb'), ['-D', dataDir, '-U', 'dsh', '-A', 'trust', '-E', 'UTF8', '--no-locale', '--no-sync'], { ...ids, cwd: root, encoding: 'utf8' })
  if (init.status !== 0) {
    rmSync(root, { recursive: true, force: true })
    throw new Error(`initdb failed (exit ${init.status}): ${init.stderr}`)
  }
  const launch = async (): Promise<{ server: ChildProcess; exited: Promise<number | null> }> => {
    const server: ChildProcess = spawn(join(bin, 'postgres'), [
      '-D', dataDir, '-k', root, '-c', 'listen_addresses=', '-c', `fsync=${options.fsync ? 'on' : 'off'}`,
      '-c', 'max_connections=200', '-c', 'shared_buffers=32MB',
    ], { ...ids, cwd: root, stdio: ['ignore', 'ignore', 'pipe'] })
    const exited = new Promise<number | null>((resolve) => server.once('exit', (code) => resolve(code)))
    let log = ''
    await new Promise<void>((resolve, reject) => {
      server.stderr!.setEncoding('utf8')
      server.stderr!.on('data', (chunk: string) => {
        log += chunk
        if (/ready to accept connections/.test(log)) resolve()
      })
      void exited.then((code) => reject(new Error(`postgres exited (${code}) before it was ready:\n${log}`)))
    })
    server.stderr!.resume()
    return { server, exited }
  }
  let running: { server: ChildProcess; exited: Promise<number | null> } | undefined
  try {
    running = await launch()
  } catch (error) {
    rmSync(root, { recursive: true, force: true })
    throw error
  }
  const halt = async () => {
    const current = running
    running = undefined
    if (current !== undefined && current.server.exitCode === null && current.server.signalCode === null) {
      current.server.kill('SIGINT')
      await current.exited
    }
  }
  let stopped: Promise<void> | undefined
  return {
    url: `postgres://dsh@localhost/postgres?host=${encodeURIComponent(root)}`,
    dataDir,
    stop: () => stopped ??= (async () => {
      await halt()
      rmSync(root, { recursive: true, force: true })
    })(),
    halt,
    restart: async () => {
      if (running === undefined) running = await launch()
    },
  }
}
