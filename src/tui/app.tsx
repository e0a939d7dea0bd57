/**
 * The `tui` app: `dsh` in a terminal with no task. Opens (or resumes) a session in the current
 * folder and runs the conversation screen on the same session log, agent loop and persistence as
 * every other surface. On exit it prints the session id and how to resume it.
 *
 * Optional services are used when the profile has them: `ctx.approval` (tool approvals answered
 * inline), `ctx.sessionPersistence` (resume, `-c`, the picker).
 */
import { isRunning } from '../tools/jobs.js'
import { homedir } from 'node:os'
import { Service, type Context } from 'cordis'
import type { Agent, AgentInput } from '../agent/api.js'
import type { Session } from '../session/api.js'
import type { SessionEvent } from '../session/types.js'
import { hasConversation, type StoredSessionSummary } from '../persistence/api.js'
import { byIdOrPrefix } from '../persistence/lookup.js'
import { notStoredLines } from '../persistence/final-save.js'
import type { ApprovalService, QuestionAnswer, QuestionAnswerer } from '../approval/api.js'
import type { McpService } from '../mcp/api.js'
import { isSandboxMode, SANDBOX_MODES } from '../sandbox/modes.js'
import { parseInteractiveArgs, type InteractiveArgs } from './args.js'
import { pickRoute } from '../host/route.js'
import { ConfigError } from '../config/rows.js'
import { TuiStore, type TuiApprovalAnswer } from './store.js'
import { permissionLabel } from './status.js'
import { BUILTIN_COMMANDS, resumeChoice, type TuiCommand, type TuiCommandContext } from './commands.js'
import { age } from '../host/age.js'
import { FileIndex } from './files.js'
import { routeStderr } from './stderr.js'
import { runShell, shellInput } from './shell.js'
import { keyUseAnswerer } from './key-use.js'
import { costOf, priceOf, readPriceTable, trajectoryUsage, withShippedPrices } from '../session/trajectory.js'
import { shippedPrices } from '../llm/presets/catalog.js'
import type { TokenUsage } from '../llm/types.js'
import { colorWanted, setColorEnabled } from './theme.js'
import { homePaths, writeCredential } from '../config/home.js'
import { isCredentialName } from '../config/credentials.js'
import { typedMentionBlocks } from '../host/mentions.js'
import { forkTitled } from '../title/index.js'
import type { RewindPoint } from '../host/rewind.js'
import { restoreFiles, restoreLines, type FileChange } from '../tools/file-changes.js'
import { displayPath } from '../tools/builtin/paths.js'
import '../host/index.js'
import '../agent/api.js'
import '../llm/api.js'
import '../persistence/api.js'
import { terminalSafe } from '../host/terminal-text.js'

export interface TuiConfig {
  /** Default model when neither --model, DSH_MODEL nor settings name one. */
  readonly model?: string
}

/** The slice of the shared command registry (`ctx.commands`) the terminal uses. */
interface CommandsLike {
  list(scope?: unknown): readonly { name: string; description: string; argumentHint?: string }[]
  execute(agent: Agent, text: string): Promise<{ kind: 'success' | 'error' | 'prompt'; text?: string } | undefined>
}

export function displayFolder(path: string, home = homedir()): string {
  return home !== '' && (path === home || path.startsWith(`${home}/`)) ? `~${path.slice(home.length)}` : path
}

function messageText(message: { content: readonly { type: string; text?: string }[] }): string {
  return message.content.map(block => block.type === 'text' ? block.text ?? '' : `[${block.type}]`).join('')
}

export class TuiApp extends Service {
  static readonly inject = ['host', 'sessions', 'agents', 'llm']

  constructor(ctx: Context, private readonly config: TuiConfig = {}) {
    super(ctx, 'app')
  }

  async run(): Promise<number> {
    const { host } = this.ctx
    let args: InteractiveArgs
    let route: { provider: string; model: string }
    try {
      args = parseInteractiveArgs(host.args)
      if (args.taskWords.length > 0) throw new Error(`the terminal app takes no task ("${args.taskWords.join(' ')}"); run it headless: dsh --profile headless "task"`)
      route = pickRoute(this.ctx, args.model, this.config.model)
      if (args.permissionMode !== undefined && !isSandboxMode(args.permissionMode)) {
        throw new Error(`--permission-mode must be ${SANDBOX_MODES.join(', ')}, not "${args.permissionMode}"`)
      }
    } catch (error) {
      host.stderr.write(`dsh: ${terminalSafe((error as Error).message)}\n`)
      // A bad settings file is a configuration error (exit 1), the rest usage (2).
      return error instanceof ConfigError ? 1 : 2
    }
    const stdin = process.stdin
    const stdout = host.stdout as NodeJS.WriteStream
    if (!stdin.isTTY || !stdout.isTTY) {
      host.stderr.write('dsh: the terminal app needs a terminal on stdin and stdout; give a task instead: dsh "what to do"\n')
      return 2
    }
    setColorEnabled(colorWanted(host.env))
    const adapter = this.ctx.llm.adapter(route.provider)
    let problem = adapter?.readiness?.()
    const missing = problem === undefined ? undefined : adapter?.missingCredential?.()
    if (missing !== undefined && isCredentialName(missing)) {
      // First run without a key: ask for it here rather than send the user off to read docs.
      const key = await this.askForKey(missing)
      if (key !== undefined) {
        writeCredential(host.home, missing, key)
        // Adapters read the host's layers per request, the live environment first (the web's
        // settings do the same); child processes never see it (secrets are scrubbed).
        process.env[missing] = key
        problem = adapter?.readiness?.()
      }
    }
    if (problem !== undefined) {
      host.stderr.write(`dsh: ${problem}\n`)
      return 1
    }
    const cwd = args.cwd ?? host.cwd
    const trustNote = await this.askTrust(cwd)
    if (trustNote === null) return 0

    const ink = await importInteractiveInk()
    const React = await import('react')
    const { SessionPicker } = await import('./picker.js')
    const { ConversationView, warmDrawing } = await import('./view.js')
    const { warmMarkdown } = await import('./markdown.js')

    let sessionId: string | undefined = args.session
    let startNote: string | undefined
    const persistence = this.ctx.get('sessionPersistence')
    if ((args.continueLatest || args.resume || args.session !== undefined) && persistence === undefined) {
      host.stderr.write('dsh: resuming needs a persistence row in the profile\n')
      return 1
    }
    if (args.continueLatest) {
      const latest = [...await persistence!.list()].filter(stored => stored.cwd === cwd && hasConversation(stored)).sort((a, b) => b.updatedAt - a.updatedAt)[0]
      if (latest === undefined) startNote = 'No earlier session in this folder: started a new one.'
      sessionId = latest?.id
    } else if (args.resume) {
      const sessions = [...await persistence!.list()].filter(hasConversation).sort((a, b) => b.updatedAt - a.updatedAt)
      sessionId = await this.pick(ink, React, SessionPicker, sessions)
      if (sessionId === undefined) return 0
    }

    let agent: Agent
    try {
      agent = await this.openAgent(sessionId, cwd, route)
    } catch (error) {
      host.stderr.write(`dsh: ${terminalSafe((error as Error).message)}\n`)
      return 1
    }

    const store = new TuiStore(agent)
    store.banner([
      `dsh · ${route.model} · ${displayFolder(cwd)}`,
      'Enter send · \\ or Alt-Enter new line · Esc cancel · Ctrl-C twice exit · /help',
    ])
    store.loadHistory()
    if (trustNote !== undefined) store.notice('info', trustNote)
    if (startNote !== undefined) store.notice('info', startNote)
    else if (agent.session.length > 0) store.notice('info', `Resumed session ${agent.id}.`)

    const disposers: (() => void)[] = []
    disposers.push(this.ctx.on('session/event', (session: Session, event: SessionEvent) => store.observe(session, event)))
    // The status bar counts running background jobs: redrawn when one starts, stops or ends.
    disposers.push(this.ctx.on('jobs/changed', (sessionId: string) => { if (sessionId === store.agent.id) store.notify() }))
    disposers.push(this.ctx.on('subagent/started' as never, ((info: { parentSessionId: string; childSessionId: string; label?: string }) => store.childStarted(info)) as never))
    disposers.push(this.ctx.on('subagent/finished' as never, ((info: { childSessionId: string }) => store.childFinished(info)) as never))
    disposers.push(this.ctx.on('agent/status', (live: Agent) => { if (live === store.agent) store.notify() }))
    disposers.push(this.ctx.on('tools/output', chunk => store.toolOutput(chunk)))
    const approval = this.ctx.get('approval') as ApprovalService | undefined
    if (args.permissionMode !== undefined && approval === undefined) {
      host.stderr.write('dsh: --permission-mode needs the approval row in the profile\n')
      return 2
    }
    /** `--permission-mode` holds for every session the app opens (/new, /resume, /fork, a rewind), not only the first. */
    const applyPermission = (session: Session) => {
      if (args.permissionMode === undefined || approval === undefined) return
      const mode = args.permissionMode as Parameters<ApprovalService['setMode']>[1]
      approval.setMode(session, mode)
      approval.setPolicy(session, mode === 'danger-full-access' ? 'never' : 'ask')
    }
    applyPermission(agent.session)
    if (approval !== undefined) disposers.push(this.answerApprovals(approval, store), this.answerQuestions(approval, store))
    // A stored key's first use with an endpoint is asked here before the request leaves (key-use.ts).
    disposers.push(this.ctx.on('llm/key-first-use', keyUseAnswerer(store)))

    let finish!: () => void
    const finished = new Promise<void>(resolve => { finish = resolve })
    const onAbort = () => finish()
    host.signal.addEventListener('abort', onAbort, { once: true })

    const files = new FileIndex(cwd)
    // The shared registry's commands run through it (logged as command/run ... command/done);
    // the app keeps only /exit, /new and /help, which act on the terminal itself.
    const registry = this.ctx.get('commands' as never) as CommandsLike | undefined
    const shared = (): TuiCommand[] => (registry?.list(store.agent.scope) ?? [])
      .filter(command => !BUILTIN_COMMANDS.some(own => own.name === command.name))
      .map(command => ({
        name: command.name,
        description: command.argumentHint ? `${command.description} ${command.argumentHint}` : command.description,
        run: async (commandArgs: string, ui: TuiCommandContext) => {
          const outcome = await registry!.execute(store.agent, `/${command.name}${commandArgs ? ` ${commandArgs}` : ''}`)
          // `/model` may replace the agent: follow the registry's live one.
          const live = this.ctx.agents.get(store.agent.id)
          if (live !== undefined && live !== store.agent) store.agent = live
          if (outcome?.text) ui.print(outcome.text, outcome.kind === 'error' ? 'error' : 'info')
        },
      }))
    const commands = (): readonly TuiCommand[] => [...BUILTIN_COMMANDS, ...shared()]
    /** Puts a new (`undefined`) or stored session in place of the current one, which stays stored. */
    const switchTo = async (sessionId: string | undefined, what: string, options: { folder?: string; prepare?: (session: Session) => void } = {}) => {
      const next = await this.openAgent(sessionId, options.folder ?? cwd, route)
      options.prepare?.(next.session)
      applyPermission(next.session)
      const previous = store.agent
      store.switchAgent(next)
      store.banner([`${what} ${next.id} (the previous one, ${previous.id}, stays stored).`])
      store.loadHistory()
      if (previous.status === 'idle') void this.ctx.agents.dispose(previous.id).catch(() => undefined)
    }
    const commandUi: TuiCommandContext = {
      print: (text, level = 'info') => store.notice(level, text),
      exit: () => finish(),
      newSession: () => switchTo(undefined, 'New session'),
      resume: async (wanted) => {
        if (persistence === undefined) return store.notice('error', 'Resuming needs a persistence row in the profile.')
        const choice = resumeChoice(await persistence.list(), cwd, store.agent.id, wanted, age)
        if (choice.kind === 'error' || (choice.kind === 'list' && choice.sessions === undefined)) return store.notice(choice.kind === 'list' ? 'info' : 'error', choice.text)
        if (store.agent.status !== 'idle') return store.notice('error', 'A turn is running: stop it (Esc) before opening another session.')
        // Alone, `/resume` opens the picker `dsh --resume` shows, over this folder's other sessions.
        if (choice.kind === 'list') return store.openResume(choice.sessions!, id => { void commandUi.resume(id) })
        await switchTo(choice.id, 'Resumed session')
      },
      fork: async () => {
        if (persistence === undefined) return store.notice('error', 'Forking needs a persistence row in the profile.')
        if (store.agent.status !== 'idle') return store.notice('error', 'A turn is running: stop it (Esc) before forking the session.')
        const child = await forkTitled(persistence, store.agent.session)
        await switchTo(child.id, 'Forked into session')
      },
      rewind: () => {
        if (store.agent.status !== 'idle') return store.notice('error', 'A turn is running: stop it (Esc) before going back to an earlier prompt.')
        if (!store.openRewind()) store.notice('info', 'No earlier prompt in this session to go back to.')
      },
      list: commands,
    }
    /**
     * Goes back to before an earlier prompt (host/rewind.ts): a copy of the session up to the turn
     * before it opens in place, with the files `restore` names put back first (the changes the
     * view found, tools/file-changes.ts); the prompt's text is returned for the input box.
     */
    const rewindTo = async (point: RewindPoint, restore: readonly FileChange[] | undefined): Promise<string | undefined> => {
      if (store.agent.status !== 'idle') {
        store.notice('error', 'A turn is running: stop it (Esc) before going back to an earlier prompt.')
        return undefined
      }
      if (point.boundary !== undefined && persistence === undefined) {
        store.notice('error', 'Going back needs a persistence row in the profile.')
        return undefined
      }
      const source = store.agent.session
      const folder = source.header.cwd ?? cwd
      const copy = point.boundary === undefined ? undefined : (await forkTitled(persistence!, source, point.boundary)).id
      // The files once the copy exists: a failed fork leaves them.
      const restored = restore === undefined ? undefined : await restoreFiles(restore, folder)
      // The sandbox mode and approval policy in force now hold in the copy too (--permission-mode
      // still comes last); a change made after the turn the copy ends with is not lost.
      const prepare = (session: Session) => approval?.adoptKnobs(source, session)
      if (copy === undefined) await switchTo(undefined, 'Back to before your first prompt: new session', { folder, prepare })
      else await switchTo(copy, `Back to before turn ${point.turn}, in a copy: session`, { folder, prepare })
      if (restored !== undefined) for (const line of restoreLines(point.turn, restored, path => displayPath(folder, path))) store.notice(line.level, line.text)
      return point.text
    }
    const readiness = () => this.ctx.llm.adapter(store.agent.config.provider)?.readiness?.()
    // The model's connection opens while a prompt is typed (at most once a second; a connection
    // already open or waiting is kept), so the handshake is not on the way to the first token.
    let warmedAt = -Infinity
    const llm = this.ctx.llm
    const prices = withShippedPrices(shippedPrices(), readPriceTable(host.settings.model?.prices))
    // `@path` words naming files of the workspace attach those files (as the web's mentions do),
    // so the model has them without a read; a mention that cannot be attached says why.
    const withMentions = (text: string): AgentInput | undefined => {
      try {
        const blocks = typedMentionBlocks(cwd, text)
        return blocks.length === 0 ? text : [{ type: 'text', text }, ...blocks]
      } catch (error) {
        store.notice('error', (error as Error).message)
        return undefined
      }
    }
    /** The `!command` running now (shell.ts): Esc stops it, and so does leaving the app. */
    let shell: AbortController | undefined
    let leaving = false
    disposers.push(() => {
      leaving = true
      shell?.abort()
    })
    const runShellCommand = (command: string) => {
      if (shell !== undefined) return store.notice('error', 'A shell command is running: Esc stops it.')
      if (store.agent.status !== 'idle') return store.notice('error', 'A turn is running: run shell commands between turns (Esc stops the turn).')
      const running = new AbortController()
      shell = running
      store.shellStarted(command)
      void runShell(command, cwd, running.signal).then(run => {
        shell = undefined
        store.shellEnded()
        // Stopped because the app is closing: the agent is gone, nothing is handed on.
        if (leaving) return
        try {
          store.shellRan(store.agent.inject(shellInput(run)))
        } catch (error) {
          store.notice('error', `the command's output could not be kept: ${(error as Error).message}`)
        }
      })
    }
    const actions = {
      send: (text: string) => {
        // `!command` runs in the user's shell; its output is context for the next step.
        if (text.startsWith('!') && text.slice(1).trim() !== '') return runShellCommand(text.slice(1).trim())
        const notReady = readiness()
        if (notReady !== undefined) return store.notice('error', notReady)
        const input = withMentions(text)
        if (input === undefined) return
        store.agent.followup(input)
        store.notify()
      },
      steer: (text: string) => {
        const input = withMentions(text)
        if (input === undefined) return
        store.agent.steer(input)
        store.notify()
      },
      typing: () => {
        const now = Date.now()
        if (now - warmedAt < 1000 || store.agent.status !== 'idle') return
        warmedAt = now
        llm.warm(store.agent.config.provider, store.agent.config.model)
      },
      stopShell: () => {
        if (shell === undefined) return false
        shell.abort()
        return true
      },
      cancel: () => {
        const { inbox } = store.agent
        const texts = [...inbox.nextStep, ...inbox.nextTurn].map(messageText)
        store.agent.cancel({ reason: { kind: 'user' } })
        return texts
      },
      queued: () => [...store.agent.inbox.nextStep, ...store.agent.inbox.nextTurn].map(messageText),
      runCommand: (name: string, commandArgs: string) => {
        const command = commands().find(candidate => candidate.name === name)
        if (command === undefined) return store.notice('warning', `unknown command /${name} (try /help)`)
        Promise.resolve(command.run(commandArgs, commandUi)).catch((error: unknown) => store.notice('error', `/${name}: ${(error as Error).message}`))
      },
      exit: () => finish(),
      rewind: (point: RewindPoint, restore: readonly FileChange[] | undefined) => rewindTo(point, restore).catch((error: unknown) => {
        store.notice('error', `going back failed: ${(error as Error).message}`)
        return undefined
      }),
      openRewind: () => commandUi.rewind(),
    }
    const info = {
      // Read at each render: `/model` replaces the agent, and the status bar follows it.
      get model() { return store.agent.config.model },
      folder: displayFolder(cwd),
      home: homedir(),
      get contextWindow() {
        const { provider, model: name } = store.agent.config
        return llm.models().find(entry => entry.provider === provider && entry.model === name)?.contextWindow
      },
      permission: () => approval === undefined ? 'auto-run tools' : permissionLabel(approval, store.agent.session),
      sessionId: () => store.agent.id,
      runningJobs: () => this.ctx.get('jobs')?.list(store.agent.id).filter(isRunning).length ?? 0,
      cost: (usage: TokenUsage) => {
        const price = priceOf(prices, store.agent.config.provider, store.agent.config.model)
        return price === undefined ? undefined : costOf(trajectoryUsage(usage), price)
      },
    }

    const releaseStderr = routeStderr(process.stderr, line => store.notice('warning', line.replace(/^dsh: /, '')))
    const restore = () => { releaseStderr(); if (stdin.isTTY) stdin.setRawMode(false) }
    process.once('exit', restore)
    const instance = ink.render(React.createElement(ConversationView, { store, info, actions, commands, files }), {
      stdout, stdin, stderr: process.stderr, exitOnCtrlC: false, patchConsole: true,
    })
    warmMarkdown(() => warmDrawing(stdout.columns || 80))
    try {
      await Promise.race([finished, instance.waitUntilExit()])
    } finally {
      host.signal.removeEventListener('abort', onAbort)
      const live = store.agent
      if (live.status === 'running') {
        live.cancel({ reason: { kind: 'user' } })
        await live.whenIdle()
      }
      store.closing = true
      store.notify()
      // Let React commit the closing frame (conversation only) before Ink writes its last one.
      for (let i = 0; i < 3; i += 1) await new Promise(resolve => setImmediate(resolve))
      instance.unmount()
      await instance.waitUntilExit().catch(() => undefined)
      for (const dispose of disposers) dispose()
      process.off('exit', restore)
      restore()
      stdin.pause()
    }
    const id = store.agent.id
    // Nothing is said stored that the store does not hold: every live session (the ones left by
    // /new, /resume or /fork too) gets the final save, retried for a bounded time while the store
    // fails (docs/persistence.md, "When the store fails").
    const saves = await persistence?.finalSaveAll() ?? []
    const unstored = notStoredLines(saves)
    for (const line of unstored) host.stderr.write(`dsh: ${terminalSafe(line)}\n`)
    if (saves.find(save => save.id === id)?.saved.stored === false) return 1
    // `dsh -c` passes over a session with nothing to go back to (no turn, no name, as after going
    // back to the first prompt): then only its id brings it back.
    const stored = persistence === undefined ? undefined : await persistence.list().then(list => list.find(one => one.id === id), () => undefined)
    // Not listed (left before anything was written): what the live log holds decides.
    const events = store.agent.session.events
    const live = { turns: events.some(event => event.type === 'turn/end') ? 1 : 0, title: events.some(event => event.type === 'session/title') ? '' : null }
    host.stdout.write(hasConversation(stored ?? live)
      ? `\nSession ${id} is stored.\nResume: dsh -c   (the latest session in this folder)\n    or: dsh --session ${id}\n`
      : `\nSession ${id} is stored.\nResume: dsh --session ${id}\n`)
    return unstored.length > 0 ? 1 : 0
  }

  private async openAgent(sessionId: string | undefined, cwd: string, route: { provider: string; model: string }): Promise<Agent> {
    const { agents } = this.ctx
    if (sessionId === undefined) return agents.create({ cwd, loop: route })
    const live = agents.get(sessionId)
    if (live !== undefined) return live
    const persistence = this.ctx.get('sessionPersistence')
    if (persistence === undefined) throw new Error('resuming needs a persistence row in the profile')
    const { session } = await byIdOrPrefix(persistence, sessionId, id => persistence.load(id))
    return agents.create({ sessionId: session.id, loop: route })
  }

  /** The key prompt (key-prompt.tsx); undefined when the user left it. */
  private async askForKey(name: string): Promise<string | undefined> {
    const ink = await importInteractiveInk()
    const React = await import('react')
    const { KeyPrompt } = await import('./key-prompt.js')
    const file = displayFolder(homePaths(this.ctx.host.home).credentials)
    return this.prompt(ink, answer => React.createElement(KeyPrompt, { name, file, onDone: answer }))
  }

  /**
   * The trust question (trust-prompt.tsx) when the folder brings hooks or `.mcp.json` servers it
   * may not run yet. Returns what to tell the user in the conversation, undefined when there was
   * nothing to ask, null when the user left.
   */
  private async askTrust(cwd: string): Promise<string | null | undefined> {
    const home = this.ctx.host.home
    const { describeProjectCode, formatTrusted, needsTrust, projectTrustStatus, trustFolder } = await import('../trust/plugin.js')
    let status
    try {
      status = projectTrustStatus(cwd, home, this.ctx.host.settings)
    } catch {
      return undefined
    }
    if (!needsTrust(status)) return undefined
    const ink = await importInteractiveInk()
    const React = await import('react')
    const { TrustPrompt } = await import('./trust-prompt.js')
    const changed = status.trustedBy !== undefined
    const answer = await this.prompt<'trust' | 'skip'>(ink, done => React.createElement(TrustPrompt, { folder: displayFolder(status.folder), code: describeProjectCode(status), changed, onDone: done }))
    if (answer === undefined) return null
    if (answer === 'skip') return 'This folder is not trusted: its hooks and .mcp.json servers do not run (/trust on trusts it).'
    const mcp = this.ctx.get('mcp') as McpService | undefined
    try {
      return formatTrusted(await trustFolder(cwd, home, mcp), mcp?.servers())
    } catch (error) {
      return `Trusting the folder failed: ${(error as Error).message}`
    }
  }

  private async pick(
    ink: typeof import('ink'), React: typeof import('react'),
    Picker: typeof import('./picker.js').SessionPicker, sessions: readonly StoredSessionSummary[],
  ): Promise<string | undefined> {
    return this.prompt(ink, answer => React.createElement(Picker, { sessions, home: homedir(), onPick: answer }))
  }

  /**
   * A screen that asks one thing before the conversation opens (the key prompt, the resume
   * picker): drawn until it answers or the app is stopped (undefined), then cleared.
   */
  private async prompt<T>(ink: typeof import('ink'), screen: (answer: (value: T | undefined) => void) => import('react').ReactElement): Promise<T | undefined> {
    let answer!: (value: T | undefined) => void
    const answered = new Promise<T | undefined>(resolve => { answer = resolve })
    // Raw before the first frame: a key typed or pasted the moment the screen shows is neither
    // echoed by the terminal nor held in its line buffer while Ink's input hook is set up.
    if (process.stdin.isTTY) process.stdin.setRawMode(true)
    const instance = ink.render(screen(answer), { exitOnCtrlC: false })
    const onAbort = () => answer(undefined)
    this.ctx.host.signal.addEventListener('abort', onAbort, { once: true })
    const value = await answered
    this.ctx.host.signal.removeEventListener('abort', onAbort)
    instance.clear()
    instance.unmount()
    await instance.waitUntilExit().catch(() => undefined)
    return value
  }

  private answerQuestions(approval: ApprovalService, store: TuiStore): () => void {
    return approval.questioner(questionAnswerer(store))
  }

  /**
   * Approval requests of this app's session are asked inline (approval-box.tsx): y allows once,
   * n rejects; s and a grant for the session or always when the request offers those scopes.
   */
  private answerApprovals(approval: ApprovalService, store: TuiStore): () => void {
    return approval.answerer((request, signal) => {
      if (request.sessionId !== store.agent.id) return undefined
      return new Promise(resolve => {
        const settle = (outcome: TuiApprovalAnswer | 'cancelled') => {
          signal.removeEventListener('abort', onAbort)
          store.removeApproval(request.id)
          resolve(outcome)
        }
        const onAbort = () => settle('cancelled')
        signal.addEventListener('abort', onAbort, { once: true })
        store.addApproval({
          id: request.id, toolName: request.toolName, reason: request.reason,
          ...request.arguments === undefined ? {} : { arguments: request.arguments },
          ...request.scopes === undefined ? {} : { scopes: request.scopes },
          ...request.grants === undefined ? {} : { grants: request.grants },
          ...request.askedBy === undefined ? {} : { askedBy: `${request.askedBy.text} (${request.askedBy.source})` },
          answer: outcome => settle(outcome),
        })
      })
    })
  }
}

/**
 * `ask_user_question` calls of this app's session are asked inline (question.tsx); Esc
 * dismisses. The approval seam checks the answers.
 */
function questionAnswerer(store: TuiStore): QuestionAnswerer {
  return (question, signal) => {
    if (question.sessionId !== store.agent.id) return undefined
    return new Promise(resolve => {
      const settle = (outcome: readonly QuestionAnswer[] | 'cancelled') => {
        signal.removeEventListener('abort', onAbort)
        store.removeQuestion(question.id)
        resolve(outcome)
      }
      const onAbort = () => settle('cancelled')
      signal.addEventListener('abort', onAbort, { once: true })
      store.addQuestion({ id: question.id, questions: question.questions, answer: settle })
    })
  }
}

/**
 * Ink decides once, when its module is first evaluated, whether it runs in CI (`CI` or
 * `CONTINUOUS_INTEGRATION` set) and then draws only the final frame. The terminal app runs only
 * when stdin and stdout are terminals, so a person is looking: hide those variables while Ink
 * loads and put them back at once (tools and hooks still see them).
 */
async function importInteractiveInk(): Promise<typeof import('ink')> {
  const keys = ['CI', 'CONTINUOUS_INTEGRATION'] as const
  const saved = keys.map(key => [key, process.env[key]] as const)
  for (const key of keys) delete process.env[key]
  try {
    return await import('ink')
  } finally {
    for (const [key, value] of saved) if (value !== undefined) process.env[key] = value
  }
}
