/**
 * The built-in plugin catalogue: every dsh plugin has a row name. Entries import their module
 * only when a row uses them, so start-up costs what the profile needs and no more.
 *
 * Plugins stay host-agnostic (they take cwd, home or credentials from their config). When dsh
 * runs them from the command line, `withHost` fills what the row did not set from `ctx.host`.
 */
import { homedir } from 'node:os'
import { join } from 'node:path'
import type { Context } from 'cordis'
import type { Host } from '../host/index.js'
import { homePaths, readSettings, writeSettings, type Settings } from '../config/home.js'
import { keyPaired, pairKey } from '../config/key-endpoints.js'
import type { KeyUseGate } from '../llm/key-use.js'
import { DEFAULT_ALLOWED_HOSTS } from '../sandbox/hosts.js'
import { isNetworkMode, NETWORK_MODES, type NetworkMode } from '../sandbox/modes.js'
import { UsageError } from './usage-error.js'

type Loader = () => Promise<unknown>

/** The `base` bundle's plugins, loaded together (see base-plugins.ts). */
const base = () => import('./base-plugins.js')

interface Entry {
  readonly summary: string
  readonly load: Loader
}

const entries = new Map<string, Entry>()

export function registerBuiltinPlugin(name: string, summary: string, load: Loader): void {
  entries.set(name, { summary, load })
}

export function isBuiltinPlugin(name: string): boolean {
  return entries.has(name)
}

export async function builtinPlugin(name: string): Promise<unknown> {
  const entry = entries.get(name)
  if (entry === undefined) throw new Error(`unknown built-in plugin "${name}"`)
  return entry.load()
}

export function builtinPluginNames(): { name: string; summary: string }[] {
  return [...entries].map(([name, { summary }]) => ({ name, summary }))
}

type PluginClass = (abstract new (ctx: Context, config: any) => unknown) | { apply(ctx: Context, config: any): unknown }

/**
 * A host-agnostic plugin and the config it takes from the host (cwd, home, credentials) for the
 * keys its row leaves unset. The loader fills them when it starts the row (`withHostConfig`), so
 * the plugin runs as the row's own fiber: no wrapper plugin (a Cordis fiber, effects and state
 * notifications each) per row at start-up and at exit.
 */
class HostedPlugin {
  constructor(readonly plugin: PluginClass, readonly defaults: (host: Host) => Record<string, unknown>) {}
}

function withHost(plugin: PluginClass, defaults: (host: Host) => Record<string, unknown>): HostedPlugin {
  return new HostedPlugin(plugin, defaults)
}

/**
 * The plugin to start for a resolved catalogue entry (or any other plugin, unchanged) and its
 * config: for a host-agnostic built-in, the host's values under the row's own.
 */
export function withHostConfig(resolved: unknown, config: unknown, host: Host | undefined): { plugin: unknown; config: unknown } {
  if (!(resolved instanceof HostedPlugin)) return { plugin: resolved, config }
  const own = typeof config === 'object' && config !== null && !Array.isArray(config) ? config : {}
  return { plugin: resolved.plugin, config: { ...(host ? resolved.defaults(host) : {}), ...own } }
}

/** DSH_PERMISSION_MODE picks the deployment default: danger-full-access runs with policy never. */
const permissionDefaults = (host: Host) => {
  const network = { network: networkDefault(host) }
  const entry = host.env.get('DSH_PERMISSION_MODE')
  // Trust rule: a project's own .env may not widen its sandbox.
  if (entry === undefined || entry.value === '' || entry.source === join(host.cwd, '.env')) return network
  const mode = entry.value
  return { mode, policy: mode === 'danger-full-access' ? 'never' : 'ask', ...network }
}

/** The flag that sets the network mode of confined commands (read wherever it stands in the app's arguments). */
export const NETWORK_FLAG = '--network'

/**
 * The deployment's network mode (docs/security.md, "Network"): `--network`, else DSH_NETWORK,
 * else `sandbox.network` in settings, else allowlist.
 */
function networkDefault(host: Host): NetworkMode {
  const at = host.args.indexOf(NETWORK_FLAG)
  const flag = at >= 0 ? host.args[at + 1] ?? '' : undefined
  const chosen: [string, unknown] | undefined = flag !== undefined ? [NETWORK_FLAG, flag]
    : host.env.value('DSH_NETWORK') ? ['DSH_NETWORK', host.env.value('DSH_NETWORK')]
    : host.settings.sandbox?.network !== undefined ? ['sandbox.network in settings.yaml', host.settings.sandbox.network] : undefined
  if (chosen === undefined) return 'allowlist'
  if (!isNetworkMode(chosen[1])) {
    const message = `${chosen[0]} must be ${NETWORK_MODES.join(', ')}, not ${JSON.stringify(chosen[1])}`
    // On the command line it is a usage mistake (exit 2); elsewhere, configuration (exit 1).
    throw chosen[0] === NETWORK_FLAG ? new UsageError(message) : new Error(message)
  }
  return chosen[1]
}

/** `sandbox.allowedHosts` of settings.yaml (the shipped list when unset), and how a host is added to it. */
const sandboxNetwork = (host: Host) => {
  const listed = host.settings.sandbox?.allowedHosts
  return {
    ...(listed !== undefined ? { allowedHosts: listed } : {}),
    rememberHost: (entry: string) => {
      const settings = readSettings(host.home)
      const sandbox = { ...(settings.sandbox ?? {}) }
      const current = Array.isArray(sandbox.allowedHosts) ? sandbox.allowedHosts as string[] : [...DEFAULT_ALLOWED_HOSTS]
      if (current.includes(entry)) return
      writeSettings(host.home, { ...settings, sandbox: { ...sandbox, allowedHosts: [...current, entry] } })
    },
  }
}
/**
 * The sandbox's deny-read list (docs/security.md, "Secret reads"): the homes it lies in and the
 * user's edits, settings.yaml `sandbox: {denyRead: [...], allowRead: [...]}` (the plugin checks
 * them). Trust rule: a project's own .env may not move the home whose secrets are hidden.
 */
/** The flags that add a permission rule for one run (repeatable; read wherever they stand in the app's arguments). */
export const RULE_FLAGS = ['--allow', '--deny'] as const

/** `--allow RULE` / `--deny RULE` (or `--allow=RULE`) of the app's arguments. */
export function ruleFlags(args: readonly string[]): { allow: string[]; deny: string[] } {
  const out = { allow: [] as string[], deny: [] as string[] }
  for (let i = 0; i < args.length; i += 1) {
    const arg = args[i]!
    if (arg === '--') break
    for (const flag of RULE_FLAGS) {
      if (arg === flag) {
        const value = args[i + 1]
        if (value === undefined || value === '') throw new UsageError(`${flag} needs a rule, e.g. ${flag} 'Bash(npm run test:*)'`)
        out[flag === '--allow' ? 'allow' : 'deny'].push(value)
        i += 1
      } else if (arg.startsWith(`${flag}=`)) out[flag === '--allow' ? 'allow' : 'deny'].push(arg.slice(flag.length + 1))
    }
  }
  return out
}

/** Where the permission rules come from (docs/security.md, "Permission rules"); the row reads the project's files. */
const permissionSources = (host: Host) => ({
  root: host.cwd, home: userHome(host), dshHome: host.home,
  ...(host.settings.permissions !== undefined ? { user: host.settings.permissions } : {}),
  userFile: homePaths(host.home).settings, settingsFile: homePaths(host.home).settings,
  flags: ruleFlags(host.args),
  log: (line: string) => { host.stderr.write(`${line}\n`) },
})

/** The user's home folder: HOME, unless the project's own .env set it (a project may not move it). */
const userHome = (host: Host): string => {
  const entry = host.env.get('HOME')
  return entry === undefined || !entry.value.startsWith('/') || entry.source === join(host.cwd, '.env') ? homedir() : entry.value
}

const secretReads = (host: Host) => {
  const home = userHome(host)
  const settings = host.settings.sandbox ?? {}
  return {
    home, dshHome: host.home,
    ...(settings.denyRead !== undefined ? { denyRead: settings.denyRead } : {}),
    ...(settings.allowRead !== undefined ? { allowRead: settings.allowRead } : {}),
  }
}
const credentials = (host: Host) => ({ credentials: (name: string) => host.env.value(name) })
const deepseek = (host: Host) => {
  const baseUrl = host.env.value('DEEPSEEK_BASE_URL')
  return { ...credentials(host), ...baseUrl === undefined ? {} : { baseUrl, keyUse: storedKeyUse(host, 'DEEPSEEK_API_KEY', 'DEEPSEEK_BASE_URL') } }
}

/**
 * A stored key (the credentials file) sent to an endpoint another layer chose, for the first
 * time (docs/security.md, "The project .env"): checked before each request (`../llm/key-use.ts`),
 * asked where a surface asks, else said in one line naming where it goes and who chose it.
 */
function storedKeyUse(host: Host, keyName: string, urlName: string): KeyUseGate {
  const stored = () => {
    const key = host.env.get(keyName)
    return key !== undefined && key.source === homePaths(host.home).credentials ? key.value : undefined
  }
  // Known pairings are not read from the file again.
  const known = new Set<string>()
  return {
    firstUse: endpoint => {
      const key = stored()
      if (key === undefined || known.has(`${key}\0${endpoint}`)) return undefined
      if (keyPaired(host.home, key, endpoint)) {
        known.add(`${key}\0${endpoint}`)
        return undefined
      }
      const from = host.env.get(urlName)?.source ?? 'environment'
      return { keyName, endpoint, chosenBy: `${urlName} from ${from === 'environment' ? 'the environment' : from}` }
    },
    allowed: (use, asked) => {
      const key = stored()
      if (key === undefined) return
      pairKey(host.home, key, use.endpoint)
      known.add(`${key}\0${use.endpoint}`)
      if (!asked) host.stderr.write(`dsh: the stored ${use.keyName} is sent to ${use.endpoint} for the first time (${use.chosenBy})\n`)
    },
  }
}

/** How tools are presented to the model (docs/code-mode.md): DSH_TOOLS_MODE, else `tools.mode` in settings. */
const toolsMode = (host: Host) => {
  const chosen = host.env.value('DSH_TOOLS_MODE') ?? host.settings.tools?.mode
  if (chosen === undefined) return {}
  if (chosen !== 'native' && chosen !== 'code' && chosen !== 'both') throw new Error(`${host.env.value('DSH_TOOLS_MODE') !== undefined ? 'DSH_TOOLS_MODE' : 'tools.mode in settings.yaml'} must be native, code or both, not ${JSON.stringify(chosen)}`)
  return { mode: chosen }
}

/**
 * web_search (docs/web-search.md): settings.yaml `webSearch`, the provider from
 * DSH_WEB_SEARCH_PROVIDER over `webSearch.provider` (not from the project's own .env: a project
 * does not turn on a tool for itself); keys by name from the environment and the credentials file.
 */
const webSearch = (host: Host) => {
  const chosen: unknown = host.settings.webSearch
  if (chosen !== undefined && (typeof chosen !== 'object' || chosen === null || Array.isArray(chosen))) {
    throw new Error(`webSearch in settings.yaml must be a mapping (provider, providers, maxResults, maxQueries, timeoutMs), not ${JSON.stringify(chosen)}`)
  }
  const settings = (chosen ?? {}) as Record<string, unknown>
  for (const key of ['maxResults', 'maxQueries', 'timeoutMs']) {
    const value = settings[key]
    if (value !== undefined && (!Number.isInteger(value) || (value as number) < 1)) throw new Error(`webSearch.${key} in settings.yaml must be a positive integer, not ${JSON.stringify(value)}`)
  }
  if (settings.provider !== undefined && typeof settings.provider !== 'string') throw new Error(`webSearch.provider in settings.yaml must be a provider name, not ${JSON.stringify(settings.provider)}`)
  if (settings.providers !== undefined && (typeof settings.providers !== 'object' || settings.providers === null || Array.isArray(settings.providers))) throw new Error('webSearch.providers in settings.yaml must map provider names to their settings')
  const env = host.env.get('DSH_WEB_SEARCH_PROVIDER')
  const provider = env !== undefined && env.value !== '' && env.source !== join(host.cwd, '.env') ? env.value : settings.provider
  return { ...settings, ...(provider !== undefined ? { provider } : {}), credentials: (name: string) => host.env.value(name) }
}

/** Self-extension (docs/extensions.md): DSH_CORDIS_TOOLS (1/0), else `tools.cordis` in settings; off by default. */
const cordisTools = (host: Host) => {
  const env = host.env.value('DSH_CORDIS_TOOLS')
  if (env !== undefined) {
    if (env !== '1' && env !== '0') throw new Error(`DSH_CORDIS_TOOLS must be 1 or 0, not ${JSON.stringify(env)}`)
    return { enabled: env === '1' }
  }
  const chosen = host.settings.tools?.cordis
  if (chosen === undefined) return {}
  if (typeof chosen !== 'boolean') throw new Error(`tools.cordis in settings.yaml must be true or false, not ${JSON.stringify(chosen)}`)
  return { enabled: chosen }
}

/** Per-tool deadlines (docs/guards.md): settings.yaml `toolTimeouts`, a mapping the row's config overrides. */
const toolTimeouts = (host: Host) => {
  const chosen: unknown = host.settings.toolTimeouts
  if (chosen === undefined) return {}
  if (typeof chosen !== 'object' || chosen === null || Array.isArray(chosen)) throw new Error(`toolTimeouts in settings.yaml must be a mapping (tools, defaultMs, capMs), not ${JSON.stringify(chosen)}`)
  return { ...chosen }
}

/** The flag that trusts a project's `.mcp.json` for one run (it starts code from the repository). */
export const TRUST_PROJECT_MCP_FLAG = '--trust-project-mcp'

const mcpDefaults = (host: Host) => ({
  servers: host.settings.mcpServers,
  cwd: host.cwd,
  trustProject: host.args.includes(TRUST_PROJECT_MCP_FLAG) || host.env.value('DSH_TRUST_PROJECT_MCP') === '1',
  settings: { read: () => readSettings(host.home), write: (settings: Settings) => writeSettings(host.home, settings) },
  lookup: (name: string) => host.env.value(name),
  log: (line: string) => { host.stderr.write(`${line}\n`) },
})

registerBuiltinPlugin('sessions', 'the session log service (ctx.sessions)',
  async () => (await import('../session/index.js')).SessionsServicePlugin)
registerBuiltinPlugin('llm', 'the model layer: adapter registry, catalogue, llm/stream (ctx.llm)',
  async () => (await base()).LlmServicePlugin)
registerBuiltinPlugin('llm-deepseek', 'DeepSeek adapter (deepseek-v4-flash, deepseek-v4-pro)',
  async () => withHost((await base()).DeepSeekPlugin, deepseek))
registerBuiltinPlugin('llm-openai', 'OpenAI-compatible chat-completions adapter (vLLM, llama.cpp, Ollama, gateways)',
  async () => withHost((await base()).OpenAiCompatiblePlugin, credentials))
registerBuiltinPlugin('llm-providers', 'OpenAI-compatible providers added in settings (settings.yaml providers, the web UI) (ctx.llmProviders)',
  async () => withHost((await base()).SettingsProvidersPlugin, host => ({ ...credentials(host), providers: host.settings.providers })))
registerBuiltinPlugin('llm-presets', 'provider presets: openai/, anthropic/, openrouter/, ollama/, vllm/, llamacpp/ model routes, registered and loaded on first use (ctx.llmPresets)',
  async () => withHost((await base()).ProviderPresetsPlugin, host => ({
    ...credentials(host),
    variable: (name: string) => host.env.value(name),
    keyUse: (keyName: string, urlName: string) => storedKeyUse(host, keyName, urlName),
  })))
registerBuiltinPlugin('tools', 'the tool registry and execution pipeline (ctx.tools)',
  async () => (await base()).ToolsPlugin)
registerBuiltinPlugin('builtin-tools', 'bash, read, write, edit, glob, grep, todo_write',
  async () => withHost((await base()).BuiltinToolsPlugin, host => ({ spillRoot: join(host.home, 'tool-output') })))
registerBuiltinPlugin('jobs', 'background jobs: bash run_in_background, job_output, job_kill, job_list and /jobs (ctx.jobs)',
  async () => (await base()).JobsPlugin)
registerBuiltinPlugin('guard-repeat-tool', 'reminds an agent that repeats the same tool call with the same arguments (docs/guards.md)',
  async () => (await base()).RepeatToolReminderPlugin)
registerBuiltinPlugin('guard-timeout-policy', 'per-tool call deadlines by tool name (settings.yaml toolTimeouts; docs/guards.md)',
  async () => withHost((await base()).TimeoutPolicyPlugin, toolTimeouts))
registerBuiltinPlugin('tool-read-image', 'read_image: the model looks at an image file (offered when the model takes images)',
  async () => (await base()).ReadImageToolPlugin)
registerBuiltinPlugin('tool-web-fetch', 'web_fetch: fetch a URL as readable text (off by default)',
  async () => (await base()).WebFetchToolPlugin)
registerBuiltinPlugin('web-search', 'web_search: DeepSeek, Exa, Perplexity or your own search service (settings webSearch.provider, DSH_WEB_SEARCH_PROVIDER; none chosen loads nothing)',
  async () => withHost((await import('../web-search/row.js')).WebSearchRow as unknown as PluginClass, webSearch))
registerBuiltinPlugin('tool-session-event-read', 'session_event_read: read an event of the session log back by seq (off by default)',
  async () => (await base()).SessionEventReadToolPlugin)
registerBuiltinPlugin('tool-bash-persistent', 'bash in one persistent shell per session (in place of builtin bash: set builtin-tools config bash: false)',
  async () => (await import('../shell/index.js')).PersistentBashPlugin)
registerBuiltinPlugin('tool-str-replace-editor', 'str_replace_editor: view, create, str_replace, insert, undo_edit (off by default)',
  async () => (await import('../tools/builtin/str-replace-editor.js')).StrReplaceEditorToolPlugin)
registerBuiltinPlugin('tool-pwsh', 'pwsh: one PowerShell process per call, offered where pwsh is on PATH (off by default)',
  async () => (await import('../shell/index.js')).PwshToolPlugin)
registerBuiltinPlugin('tool-pwsh-persistent', 'pwsh in one persistent PowerShell session per session, offered where pwsh is on PATH (off by default)',
  async () => (await import('../shell/index.js')).PersistentPwshPlugin)
registerBuiltinPlugin('system-prompt', 'system prompt sections, variables and runtime contexts (ctx.systemPrompt)',
  async () => (await base()).SystemPromptPlugin)
registerBuiltinPlugin('runtime-contexts', 'working folder and date runtime contexts',
  async () => withHost((await base()).RuntimeContextsPlugin, host => ({ cwd: host.cwd })))
registerBuiltinPlugin('instructions', 'AGENTS.md / CLAUDE.md of the session folder, its project and the home folder, recorded in the log',
  async () => withHost((await base()).WorkspaceInstructionsPlugin, host => ({ home: host.home, claudeHome: join(userHome(host), '.claude') })))
registerBuiltinPlugin('approval', 'permission knobs (sandbox mode, approval policy, presets) and approval requests (ctx.approval)',
  async () => withHost((await base()).ApprovalPlugin, permissionDefaults))
registerBuiltinPlugin('permissions', 'permission rules: allow / ask / deny in Claude Code syntax (settings.yaml permissions, --allow/--deny, .dsh/settings.yaml, trusted .claude/settings.json)',
  async () => withHost((await base()).PermissionsRow as unknown as PluginClass, permissionSources))
registerBuiltinPlugin('sandbox', 'OS sandbox for bash (bubblewrap) and the write fence for write/edit (ctx.sandbox)',
  // dsh's home (sessions, credentials, the trust list) is protected wherever it lies, and hidden.
  async () => withHost((await base()).SandboxPlugin, host => ({ workspaceRoot: host.cwd, protectedPaths: [host.home], ...secretReads(host), ...sandboxNetwork(host) })))
registerBuiltinPlugin('agent-loop', 'the default loop driver (ctx.agentLoop)',
  async () => (await base()).ReactLoopPlugin)
registerBuiltinPlugin('agents', 'the live agent registry (ctx.agents)',
  async () => (await base()).AgentsServicePlugin)
registerBuiltinPlugin('subagents', 'delegation: child sessions through the spawn and fork providers (ctx.subagents)',
  async () => (await base()).SubagentsPlugin)
registerBuiltinPlugin('subagent-tools', 'subagent, subagent_fork, send_message, interrupt_agent, list_agents',
  async () => (await base()).SubagentToolsPlugin)
registerBuiltinPlugin('loop-invariant', 'A-11: every loop request must equal the log derivation',
  async () => (await base()).LoopInvariantPlugin)
registerBuiltinPlugin('session-title', 'fallback and model session titles',
  async () => (await base()).SessionTitlePlugin)
registerBuiltinPlugin('headless', 'app: run one task and print the answer',
  async () => (await base()).HeadlessApp)
registerBuiltinPlugin('sessions-list', 'app: list stored sessions',
  async () => (await import('./apps.js')).SessionsListApp)
registerBuiltinPlugin('web-api', 'the web UI\'s JSON methods over sessions, agents, models and settings (ctx.webApi)',
  async () => withHost((await import('../web/methods.js')).WebApiPlugin, host => ({ home: host.home, cwd: host.cwd })))
registerBuiltinPlugin('web', 'app: the browser UI server (dsh web)',
  async () => (await import('../web/app.js')).WebApp)
registerBuiltinPlugin('compaction', 'context compaction: pruning, summaries, /compact, overflow recovery',
  async () => (await base()).CompactionPlugin)
registerBuiltinPlugin('llm-retry', 'retries failed model requests with backoff (agent/request-error)',
  async () => (await base()).LlmRetryPlugin)
registerBuiltinPlugin('persistence-jsonl', 'session logs as JSONL files under $DSH_HOME/sessions (ctx.sessionPersistence)',
  async () => withHost((await import('../persistence/plugins.js')).JsonlPersistencePlugin, host => ({ root: join(host.home, 'sessions') })))
registerBuiltinPlugin('persistence-sqlite', 'session logs in one SQLite database, $DSH_HOME/sessions.db (ctx.sessionPersistence)',
  async () => withHost((await import('../persistence/plugins.js')).SqlitePersistencePlugin, host => ({ file: join(host.home, 'sessions.db') })))
registerBuiltinPlugin('persistence-postgres', 'session logs in PostgreSQL, shared by many dsh hosts, one writer per session (--store postgres://...)',
  async () => (await import('../persistence/plugins.js')).PostgresPersistencePlugin)
registerBuiltinPlugin('session-eviction', 'servers: keep only active sessions in memory, unload idle ones (reloaded on demand)',
  async () => (await import('../hosting/eviction.js')).SessionEvictionPlugin)
registerBuiltinPlugin('checkpoints', 'D-3: flush the log before every model request, tool body and pre-step',
  async () => (await base()).CheckpointPolicy)
registerBuiltinPlugin('llm-replay', 'replays recorded model calls from a session log (offline demo, conformance)',
  async () => (await import('../replay/index.js')).ReplayPlugin)
registerBuiltinPlugin('sdk-server', 'app: JSON-RPC SDK server over stdio (session/prompt, session.event notifications)',
  async () => (await import('../sdk/server.js')).SdkServerApp)
registerBuiltinPlugin('commands', 'the slash-command registry every surface uses (ctx.commands; /model, /status)',
  async () => {
    const { CommandsPlugin, readPriceTable, withShippedPrices, shippedPrices } = await base()
    return withHost(CommandsPlugin, host => ({ prices: withShippedPrices(shippedPrices(), readPriceTable(host.settings.model?.prices)) }))
  })
registerBuiltinPlugin('skills', 'SKILL.md skills: discovery, the catalog message, the skill tool, /skills and /<skill>',
  async () => {
    const [{ SkillsPlugin }, { trustChecker }] = await Promise.all([base(), import('../trust/index.js')])
    // A project's .claude/skills counts in a trusted folder only, as its hook files (docs/skills.md).
    return withHost(SkillsPlugin, host => ({ cwd: host.cwd, dshHome: host.home, claudeHome: join(userHome(host), '.claude'), projectTrusted: trustChecker(host.home) }))
  })
registerBuiltinPlugin('plan-mode', 'plan mode: /plan, the plan:policy section, exit_plan_mode reviewed through approvals (guidance, not enforcement)',
  async () => (await base()).PlanModePlugin)
registerBuiltinPlugin('questions', 'ask_user_question: the model asks the user through the approval seam\'s question answerers (children are refused)',
  async () => (await base()).QuestionToolPlugin)
registerBuiltinPlugin('code-mode', 'run_code: programs that call the tools (settings tools.mode native|code|both, DSH_TOOLS_MODE; native loads nothing)',
  async () => withHost((await import('../code-mode/row.js')).CodeModeRow as unknown as PluginClass, toolsMode))
registerBuiltinPlugin('workflow', 'workflow and ralph: orchestration scripts over one-shot children, and the fresh-agent Ralph loop',
  async () => (await base()).WorkflowPlugin)
registerBuiltinPlugin('cordis-dynamic', 'cordis_* self-extension: the model defines and runs plugins in the dsh process (settings tools.cordis, DSH_CORDIS_TOOLS=1; off loads nothing)',
  async () => withHost((await import('../cordis-dynamic/row.js')).CordisDynamicRow as unknown as PluginClass, cordisTools))
registerBuiltinPlugin('pty', 'terminal_open/send/read/signal/list/close: persistent terminals in a real PTY, sandboxed as bash (settings pty)',
  async () => withHost((await import('../pty/index.js')).PtyPlugin as unknown as PluginClass, host => ({ ...host.settings.pty })))
registerBuiltinPlugin('goals', 'goals: create_goal/get_goal/update_goal, automatic rounds, /goal',
  async () => (await base()).GoalsPlugin)
registerBuiltinPlugin('hooks', 'Claude Code and Codex hook files (PreToolUse, PostToolUse, UserPromptSubmit, Stop, SessionStart)',
  async () => withHost((await base()).HooksPlugin, host => ({ cwd: host.cwd, dshHome: host.home, userHome: host.env.value('HOME') ?? homedir() })))
registerBuiltinPlugin('project-trust', '/trust [on|off]: whether the launch folder may run its hooks and .mcp.json servers',
  async () => withHost((await base()).ProjectTrustPlugin, host => ({ cwd: host.cwd, dshHome: host.home })))
registerBuiltinPlugin('mcp', 'MCP servers from settings and the project .mcp.json as tools (ctx.mcp)',
  async () => withHost((await base()).McpPlugin, mcpDefaults))
registerBuiltinPlugin('mcp-server', 'one MCP server from a plugin row (stdio, streamable-http or sse) as tools',
  async () => withHost((await base()).McpServerPlugin, host => ({ lookup: (name: string) => host.env.value(name), log: (line: string) => { host.stderr.write(`${line}\n`) } })))
registerBuiltinPlugin('lsp', 'lsp: definitions, references, hover, symbols and diagnostics from language servers (settings lsp; servers start on first use)',
  async () => withHost((await import('../lsp/index.js')).LspPlugin, host => ({ ...(host.settings.lsp ?? {}) })))
registerBuiltinPlugin('subagent-codex', 'subagent_codex: delegate a task to the Codex CLI (codex exec) as a child process (off by default)',
  async () => (await import('../product-subagents/index.js')).CodexSubagentPlugin)
registerBuiltinPlugin('subagent-claude-code', 'subagent_claude_code: delegate a task to the Claude Code CLI (claude -p) as a child process (off by default)',
  async () => (await import('../product-subagents/index.js')).ClaudeCodeSubagentPlugin)
registerBuiltinPlugin('acp-server', 'app: ACP agent server over stdio, with its approval service',
  async () => (await import('../acp/server.js')).AcpServerApp)
registerBuiltinPlugin('tui', 'app: the interactive terminal conversation (dsh in a terminal with no task)',
  async () => (await import('../tui/app.js')).TuiApp)
