/**
 * What every protocol-suite run shares: the scenario's folders, the dsh command and the patch that
 * swaps in the recorded composition, the child's environment, and the comparison helpers.
 */
import { builtIsFresh } from './build-freshness.js'
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, watch, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { writeFixtureCompactionPlugin } from './fixture-compaction.js'
import { productPatchRows } from './product-subagents.js'
import { type Kind, type Plan } from './protocol-plan.js'
import { persistentComposition } from './replay-rules.js'

export const SUITE = 'protocol'

const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/gi

/**
 * The dsh command: the compiled launcher; from sources, the built launcher when dist/ is fresh
 * (each scenario starts a process, and loading the sources through tsx costs ~1.5 s a start),
 * else the sources through tsx.
 */
/** A scenario's temp folders: `cwd` (a copy of the recorded workspace, when there is one) and `home`. */
export function scenarioFolders(prefix: string, dir: string): { work: string; cwd: string; home: string } {
  const work = mkdtempSync(join(tmpdir(), prefix))
  const cwd = join(work, 'cwd')
  const home = join(work, 'home')
  mkdirSync(cwd)
  mkdirSync(home)
  const workspace = join(dir, 'workspace')
  if (existsSync(workspace)) cpSync(workspace, cwd, { recursive: true })
  return { work, cwd, home }
}

export let command: [string, ...string[]] | undefined
export function dshCommand(): [string, ...string[]] {
  return command ??= chooseDshCommand()
}

function chooseDshCommand(): [string, ...string[]] {
  const here = fileURLToPath(import.meta.url)
  const root = join(dirname(here), '..', '..')
  if (!here.endsWith('.ts') || builtIsFresh(root)) return [process.execPath, join(root, 'bin', 'dsh.js')]
  process.stderr.write('conformance: dist/ is older than src/, so each scenario loads the sources through tsx (slow); `npm run build` first for the fast path\n')
  const main = pathToFileURL(join(dirname(here), '..', 'cli', 'main.ts')).href
  const tsx = import.meta.resolve('tsx')
  const code = `const { main } = await import(${JSON.stringify(main)}); process.exit(await main(process.argv.slice(1)))`
  return [process.execPath, '--import', tsx, '--input-type=module', '-e', code, '--']
}

/** The patch layer: the replay adapter in place of the model row; no runtime-context plugin when the recording had none. */
export function writePatch(plan: Plan, folder: string, kind: Kind): string {
  const rows: unknown[] = [{
    id: 'model',
    name: 'llm-replay',
    config: {
      script: plan.script, provider: plan.route.provider, models: [plan.route.model],
      ...plan.children.length > 0 && { sessions: Object.fromEntries(plan.children.map(child => [child.id, child.script])) },
      ...plan.fenceChildren && { fenceContinuableChildren: true },
    },
  }]
  if (plan.children.length > 0) rows.push({ id: 'subagents', config: { childIds: plan.children.map(child => child.id) } })
  // The recording's composition overlay (INDEX.md: grandchild rejected at maxDepth 2).
  if (plan.maxDepth !== undefined) {
    rows.push({ id: 'subagent-tools', config: { tools: [
      { provider: 'spawn', toolName: 'subagent', backgroundMode: 'continuable', maxDepth: plan.maxDepth },
      { provider: 'fork', toolName: 'subagent_fork', backgroundMode: 'one-shot', maxDepth: 1 },
    ] } })
  }
  // The recorded route (an image prompt was routed to a vision model, for instance).
  rows.push({ id: 'agents', config: { loop: plan.route } })
  if (!plan.runtimeContext) rows.push({ id: 'runtime-contexts', disabled: true }, { id: 'approval', config: { runtimeContexts: false } })
  if (plan.runnerCommand !== undefined) rows.push({ id: 'sandbox', config: { runnerCommand: plan.runnerCommand, runners: [] } })
  // No retry waits: the recorded retries replay at once.
  rows.push({ id: 'llm-retry', config: { baseDelayMs: 1, maxDelayMs: 1 } })
  // The recorded composition's hook files (the launch folder is the scenario workspace).
  rows.push({ id: 'hooks', config: { files: plan.hooks, discover: false } })
  // Only the workspace's skills (no `~/.agents/skills` of whoever runs the suite).
  rows.push({ id: 'skills', config: { agentsHome: join(folder, 'no-agents-home'), claudeHome: join(folder, 'no-claude-home') } })
  // Nor whoever runs the suite's ~/.claude/CLAUDE.md.
  rows.push({ id: 'instructions', config: { claudeHome: join(folder, 'no-claude-home') } })
  // The recording's composition had web_fetch (off in the shipped profiles).
  if (plan.fetched.length > 0) rows.push({ insert: [{ id: 'replay-web-fetch', name: 'tool-web-fetch' }] })
  if (plan.events.some(e => e.type === 'tool/call' && (e.data as { name: string }).name === 'session_event_read')) {
    rows.push({ insert: [{ id: 'replay-session-event-read', name: 'tool-session-event-read' }] })
  }
  if (plan.fixtureCompactions.size > 0) rows.push({ insert: [{ id: 'replay-fixture-compaction', name: writeFixtureCompactionPlugin(folder, plan.fixtureCompactions) }] })
  // The recording's composition had the lsp tool (its row is off in the shipped bundle).
  if (plan.events.some(e => e.type === 'tool/call' && (e.data as { name: string }).name === 'lsp')) rows.push({ id: 'lsp', disabled: false })
  // The persistent-tools composition: bash in one persistent shell, and str_replace_editor.
  if (persistentComposition(plan.events)) {
    rows.push({ id: 'builtin-tools', config: { bash: false } },
      { insert: [{ id: 'replay-bash-persistent', name: 'tool-bash-persistent' }, { id: 'replay-str-replace-editor', name: 'tool-str-replace-editor' }] })
  }
  if (plan.events.some(e => e.type === 'tool/call' && (e.data as { name: string }).name === 'pwsh')) rows.push({ insert: [{ id: 'replay-pwsh', name: 'tool-pwsh' }] })
  if (plan.products !== undefined) rows.push(...productPatchRows(plan.products, folder))
  // The recorded transcripts show the original's frames: the ACP server's compatibility mode.
  if (kind === 'acp') rows.push({ id: 'app', config: { updates: 'recorded' } })
  const file = join(folder, 'replay.patch.yml')
  writeFileSync(file, JSON.stringify(rows))
  return file
}

/** Resolves once `path` exists or `stop` settles; the watcher is closed either way. */
export function waitForFile(path: string, stop: Promise<unknown>): Promise<void> {
  return new Promise(resolve => {
    const watcher = watch(dirname(path), () => { if (existsSync(path)) done() })
    const done = () => {
      watcher.close()
      resolve()
    }
    void stop.then(done, done)
    if (existsSync(path)) done()
  })
}

export interface Run {
  readonly cwd: string
  readonly patch: string
  readonly env: Readonly<Record<string, string | undefined>>
}

export function childEnv(env: Run['env']): Record<string, string> {
  const out: Record<string, string> = {}
  for (const [key, value] of Object.entries({ ...process.env, ...env })) if (value !== undefined) out[key] = value
  return out
}

// ---- ACP ----

export function readJsonLines(file: string): unknown[] {
  return readFileSync(file, 'utf8').split('\n').filter(line => line.trim() !== '').map(line => JSON.parse(line))
}

/** Replaces the session id, the cwd and every UUID in every string. */
export function placeholders(value: unknown, known: { sessionId?: string; cwd: string }): unknown {
  if (typeof value === 'string') {
    let text = value
    if (known.sessionId !== undefined) text = text.split(known.sessionId).join('{{sessionId}}')
    text = text.split(known.cwd).join('{{cwd}}')
    return text.replace(UUID, '{{sessionId}}')
  }
  if (Array.isArray(value)) return value.map(item => placeholders(item, known))
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, placeholders(item, known)]))
  }
  return value
}

function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value).filter(([, item]) => item !== undefined).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    return `{${entries.map(([key, item]) => `${JSON.stringify(key)}:${canonical(item)}`).join(',')}}`
  }
  return JSON.stringify(value)
}

export function firstDifference(expected: readonly unknown[], actual: readonly unknown[]): string | undefined {
  const n = Math.max(expected.length, actual.length)
  for (let i = 0; i < n; i++) {
    const a = i < expected.length ? canonical(expected[i]) : undefined
    const b = i < actual.length ? canonical(actual[i]) : undefined
    if (a !== b) return `first difference at line ${i + 1}: expected ${clip(a ?? '(end)')}, got ${clip(b ?? '(end)')}`
  }
  return undefined
}

function clip(text: string): string {
  return text.length > 300 ? `${text.slice(0, 300)}...` : text
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

// ---- headless stream-json ----
