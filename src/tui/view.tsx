/**
 * The conversation screen: settled items printed once into the scrollback (Ink's `Static`), then
 * the live part redrawn in place: the streaming step, running tools, the activity line, queued
 * input, an approval prompt, the input box with completions, and the status bar.
 */
import { useEffect, useReducer, useRef, useState, type ReactNode } from 'react'
import { Box, renderToString, Static, Text, useInput, useStdout, type Key } from 'ink'
import ansiEscapes from 'ansi-escapes'
import type { Item } from './fold.js'
import type { TokenUsage } from '../llm/types.js'
import { compactNumber, describeEnd, duration } from './fold.js'
import type { Printed, TuiStore } from './store.js'
import { oneLine, outputTail, ToolCardView } from './cards.js'
import { Markdown } from './markdown.js'
import { wrapText } from './wrap.js'
import { c } from './theme.js'
import { QuestionView } from './question.js'
import { useLatestState } from './latest-state.js'
import {
  backspace, commandAtCursor, controlPresses, deleteToLineStart, deleteWordBefore, emptyEditor, end, home, insert, mentionAtCursor,
  moveLeft, moveRight, replaceRange, setText, submit, up, down, type EditorState,
} from './editor.js'
import { matchCommands, type TuiCommand } from './commands.js'
import type { FileIndex } from './files.js'
import type { RewindPoint } from '../host/rewind.js'
import type { FileChange } from '../tools/file-changes.js'
import { terminalSafe } from '../host/terminal-text.js'
import { RewindFiles, RewindList } from './rewind-view.js'
import { SessionPicker } from './picker.js'
import { ApprovalBox, approvalKeyPress } from './approval-box.js'

export interface ViewActions {
  send(text: string): void
  steer(text: string): void
  /** Cancels the running turn; returns the texts that were queued (put back into the input). */
  cancel(): string[]
  /** Stops a running `!command`; false when none runs. */
  stopShell?(): boolean
  /** Text is being typed into the prompt (the model's connection may open ahead). */
  typing?(): void
  queued(): readonly string[]
  runCommand(name: string, args: string): void
  exit(): void
  /** Opens the list of earlier prompts to go back to (Esc Esc); says so when there is none. */
  openRewind?(): void
  /**
   * Goes back to before `point` (host/rewind.ts), first putting back the file changes `restore`
   * lists (those its turns made); resolves with the text for the input box, if it went.
   */
  rewind?(point: RewindPoint, restore: readonly FileChange[] | undefined): Promise<string | undefined>
}

export interface ViewInfo {
  readonly model: string
  readonly folder: string
  /** The user's home folder: `/resume`'s picker shows folders under it as `~/...`. */
  readonly home?: string
  readonly contextWindow?: number
  permission(): string
  sessionId(): string
  /** Background jobs of the session still running (docs/jobs.md); they stop when the app does. */
  runningJobs?(): number
  /** USD for a turn's tokens at the current model's price (settings `model.prices`); undefined without one. */
  cost?(usage: TokenUsage): number | undefined
}

export interface ViewProps {
  readonly store: TuiStore
  readonly info: ViewInfo
  readonly actions: ViewActions
  readonly commands: () => readonly TuiCommand[]
  readonly files: FileIndex
}

function percent(ratio: number): string {
  return ratio > 0 && ratio < 0.01 ? '<1%' : `${Math.round(ratio * 100)}%`
}

const SPINNER = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏']

function Reasoning(props: { text: string; expanded: boolean; streaming: boolean; width: number }): ReactNode {
  if (props.text.trim() === '') return null
  const words = props.text.trim().split(/\s+/).length
  if (!props.expanded) {
    return <Text dimColor italic>{props.streaming ? '◌ thinking' : '▸ thought'} · {words} word{words === 1 ? '' : 's'} (Ctrl-O to show)</Text>
  }
  return (
    <Box flexDirection="column">
      <Text dimColor italic>▾ reasoning</Text>
      <Text dimColor italic>{wrapText(terminalSafe(props.text.trim()), props.width)}</Text>
    </Box>
  )
}

/** The last `rows` wrapped lines of `text` at `width` columns (the live step must fit the screen). */
export function tailLines(text: string, width: number, rows: number): string {
  const lines = text.split('\n')
  let used = 0
  let start = lines.length
  while (start > 0) {
    const height = Math.max(1, Math.ceil(lines[start - 1].length / Math.max(10, width)))
    if (used + height > rows) break
    used += height
    start -= 1
  }
  return start === 0 ? text : lines.slice(start).join('\n')
}

function ItemView(props: { item: Item; expanded: boolean; width: number; live?: { rows: number; output: ReadonlyMap<string, string> }; cost?: ViewInfo['cost'] }): ReactNode {
  const { item } = props
  switch (item.kind) {
    case 'user':
      return (
        <Box marginTop={1}>
          <Text color={c('cyan')} bold>› </Text>
          <Text>{wrapText(terminalSafe(item.text), props.width - 2)}</Text>
        </Box>
      )
    case 'assistant': {
      const text = props.live && item.streaming ? tailLines(item.text, props.width, props.live.rows) : item.text
      return (
        <Box flexDirection="column" marginTop={1}>
          <Reasoning text={item.reasoning} expanded={props.expanded} streaming={item.streaming && item.text === ''} width={props.width} />
          {text.trim() !== '' ? <Markdown text={text} width={props.width} /> : null}
          {item.calls.map(call => <ToolCardView key={call.id} call={call} running={!item.closed} live={props.live?.output.get(call.id)} />)}
        </Box>
      )
    }
    case 'turn-end': {
      const end = describeEnd(item.reason)
      const usage = item.usage
      const tokens = `${compactNumber((usage.inputTokens ?? 0) + (usage.cacheReadTokens ?? 0) + (usage.cacheWriteTokens ?? 0))} in · ${compactNumber(usage.outputTokens ?? 0)} out`
      const dollars = props.cost?.(usage)
      const parts = [`${item.steps} step${item.steps === 1 ? '' : 's'}`, tokens, ...item.durationMs === undefined ? [] : [duration(item.durationMs)], ...dollars === undefined ? [] : [`$${dollars.toFixed(4)}`]]
      return (
        <Box flexDirection="column">
          {end.level !== undefined ? <Text color={end.level === 'error' ? c('red') : end.level === 'warning' ? c('yellow') : undefined} bold={end.level === 'error'}>{wrapText(`${end.level === 'error' ? '✗ ' : '■ '}${terminalSafe(end.text)}`, props.width)}</Text> : null}
          <Text dimColor>── {parts.join(' · ')}</Text>
        </Box>
      )
    }
    case 'shell': {
      const failed = item.exitCode !== 0
      const tail = outputTail(item.output)
      return (
        <Box flexDirection="column" marginTop={1}>
          <Text><Text color={failed ? c('red') : c('green')}>{failed ? '✗' : '✓'}</Text> <Text bold>! {oneLine(item.command)}</Text><Text dimColor> · {item.exitCode === null ? 'stopped' : `exit ${item.exitCode}`} · for the model's next step</Text></Text>
          {tail.map((line, index) => <Text key={index} dimColor wrap="truncate-end">  {line}</Text>)}
        </Box>
      )
    }
    case 'notice':
      return <Text color={item.level === 'error' ? c('red') : item.level === 'warning' ? c('yellow') : undefined} dimColor={item.level === 'info'}>{wrapText(terminalSafe(item.text), props.width)}</Text>
  }
}

function PrintedView(props: { printed: Printed; expanded: boolean; width: number; cost?: ViewInfo['cost'] }): ReactNode {
  const { printed } = props
  if (printed.kind === 'banner') {
    return (
      <Box flexDirection="column">
        {printed.lines.map((line, index) => <Text key={index} dimColor={index > 0}>{terminalSafe(line)}</Text>)}
      </Box>
    )
  }
  return <ItemView item={printed.item} expanded={props.expanded} width={props.width} {...props.cost === undefined ? {} : { cost: props.cost }} />
}

/** What a first turn draws: a prompt, a step with a tool card, an answer in Markdown, its summary. */
const SAMPLE_TURN: readonly Item[] = [
  { kind: 'user', key: 'u', text: 'look at the build' },
  {
    kind: 'assistant', key: 'a1', turn: 1, step: 1, text: 'Checking.', reasoning: 'one thought', streaming: false, closed: false,
    calls: [{ id: 'c', name: 'bash', arguments: '{"command":"ls","description":"list"}', result: { text: 'a\nb\n', isError: false, meta: { exitCode: 0 } } }],
  },
  { kind: 'assistant', key: 'a2', turn: 1, step: 2, text: '## Done\n\n- **one** `two`\n\n```ts\nconst x = 1\n```', reasoning: '', streaming: false, calls: [], closed: false },
  { kind: 'turn-end', key: 'e', turn: 1, reason: { kind: 'completed' }, usage: { inputTokens: 1200, outputTokens: 40 }, steps: 2, durationMs: 1500 },
]

/** `SAMPLE_TURN` drawn off screen, as the conversation would draw it at `width` columns. */
export function drawSampleTurn(width: number): string {
  return renderToString(<Box flexDirection="column">{SAMPLE_TURN.map(item => <ItemView key={item.key} item={item} expanded={false} width={width} />)}</Box>, { columns: width })
}

/**
 * Draws a sample turn once, off screen, while the person types (after `warmMarkdown`'s tasks):
 * the first frames of a real turn otherwise run React's, Yoga's and ink's drawing code (and the
 * app's own) for the first time, which made the first answer reach the screen ~70 ms later than
 * the next ones. A failure here only leaves that code cold.
 */
export function warmDrawing(width: number): void {
  try {
    drawSampleTurn(width)
  } catch {
    // Only a warm-up.
  }
}

/** The input text with the cursor drawn as an inverse cell. */
function EditorView(props: { state: EditorState; placeholder: string; focused: boolean }): ReactNode {
  const { text, cursor } = props.state
  if (text === '') {
    return (
      <Text>
        <Text inverse={props.focused}> </Text>
        <Text dimColor>{props.placeholder}</Text>
      </Text>
    )
  }
  // What was pasted is shown safe too: a pasted escape must not act on the terminal.
  const before = terminalSafe(text.slice(0, cursor))
  const at = text.slice(cursor, cursor + 1)
  const after = terminalSafe(text.slice(cursor + 1))
  return (
    <Text>
      {before}
      {at === '\n' ? <><Text inverse> </Text>{'\n'}</> : <Text inverse={props.focused}>{at === '' ? ' ' : terminalSafe(at)}</Text>}
      {after}
    </Text>
  )
}

function activity(items: readonly Item[]): string {
  const last = items.at(-1)
  if (last?.kind !== 'assistant') return 'waiting for the model'
  const runningCall = last.calls.find(call => call.result === undefined)
  if (runningCall !== undefined && !last.streaming) return `running ${terminalSafe(runningCall.name)}`
  if (last.streaming) return last.calls.length > 0 ? 'writing a tool call' : last.text === '' ? 'thinking' : 'writing'
  return 'waiting for the model'
}

function ActivityLine(props: { running: boolean; status?: string; items: readonly Item[]; since: number; asking?: boolean }): ReactNode {
  const [frame, setFrame] = useState(0)
  useEffect(() => {
    if (!props.running) return
    const timer = setInterval(() => setFrame(value => (value + 1) % SPINNER.length), 120)
    return () => clearInterval(timer)
  }, [props.running])
  if (!props.running) return null
  const seconds = Math.max(0, Math.floor((Date.now() - props.since) / 1000))
  return (
    <Box marginTop={1}>
      <Text wrap="truncate-end">
        <Text color={c('cyan')}>{SPINNER[frame]} </Text>
        {props.status !== undefined ? <Text color={c('yellow')}>{terminalSafe(props.status)}</Text> : <Text>{activity(props.items)}</Text>}
        <Text dimColor> · {seconds}s{props.asking === true ? ' · waiting for your answer' : ' · Esc to cancel'}</Text>
      </Text>
    </Box>
  )
}

/** A `!command` running now: a live line that goes when it ends (the card stays). */
function ShellLine(props: { command: string; since: number }): ReactNode {
  const [frame, setFrame] = useState(0)
  useEffect(() => {
    const timer = setInterval(() => setFrame(value => (value + 1) % SPINNER.length), 120)
    return () => clearInterval(timer)
  }, [])
  const seconds = Math.max(0, Math.floor((Date.now() - props.since) / 1000))
  return (
    <Box marginTop={1}>
      <Text wrap="truncate-end">
        <Text color={c('cyan')}>{SPINNER[frame]} </Text>
        <Text bold>$ {terminalSafe(props.command).replace(/\n/g, ' ')}</Text>
        <Text dimColor> · running · {seconds}s · Esc stops it</Text>
      </Text>
    </Box>
  )
}

type Completion = { kind: 'command'; options: readonly TuiCommand[] } | { kind: 'file'; start: number; options: readonly string[] }

export function ConversationView(props: ViewProps): ReactNode {
  const { store, actions, info } = props
  const [, rerender] = useReducer((n: number) => n + 1, 0)
  // What the key handler both reads and changes, through refs (latest-state.ts): keys arrive
  // faster than frames (a second Ctrl-C right after "again to exit", Down Down Enter in one read).
  const [editor, editorRef, setEditor] = useLatestState<EditorState>(() => emptyEditor())
  const [exitArmed, exitArmedRef, setExitArmed] = useLatestState(false)
  // Esc on an empty input between turns arms the rewind list; a second Esc opens it.
  const [escArmed, escArmedRef, setEscArmed] = useLatestState(false)
  const [expanded, setExpanded] = useState(false)
  const [selected, selectedRef, setSelected] = useLatestState(0)
  const [fileOptions, setFileOptions] = useState<{ query: string; start: number; options: readonly string[] } | undefined>()
  const runningSince = useRef(Date.now())
  const wasRunning = useRef(false)
  const { stdout } = useStdout()
  const [size, setSize] = useState({ columns: stdout.columns || 80, rows: stdout.rows || 24 })
  const sizeRef = useRef(size)
  sizeRef.current = size

  useEffect(() => store.subscribe(rerender), [store])
  // The terminal reflows what is already on screen when it narrows, which leaves broken copies of
  // the live part; so a width change clears the screen and prints the conversation again.
  const [epoch, setEpoch] = useState(0)
  const lastColumns = useRef(stdout.columns || 80)
  useEffect(() => {
    const onResize = () => {
      const columns = stdout.columns || 80
      if (columns !== lastColumns.current) {
        lastColumns.current = columns
        stdout.write(ansiEscapes.clearTerminal)
        setEpoch(value => value + 1)
      }
      setSize({ columns, rows: stdout.rows || 24 })
    }
    stdout.on('resize', onResize)
    return () => { stdout.off('resize', onResize) }
  }, [stdout])

  const running = store.fold.running
  if (running && !wasRunning.current) runningSince.current = Date.now()
  wasRunning.current = running

  const mention = mentionAtCursor(editor)
  useEffect(() => {
    if (mention === undefined) {
      setFileOptions(undefined)
      return
    }
    let live = true
    void props.files.complete(mention.query).then(options => {
      if (live) setFileOptions({ query: mention.query, start: mention.start, options })
    })
    return () => { live = false }
  }, [mention?.query, mention?.start])

  const completionOf = (state: EditorState): Completion | undefined => {
    const prefix = commandAtCursor(state)
    if (prefix !== undefined) {
      const options = matchCommands(props.commands(), prefix)
      return options.length > 0 ? { kind: 'command', options } : undefined
    }
    const at = mentionAtCursor(state)
    if (at !== undefined && fileOptions !== undefined && fileOptions.options.length > 0 && fileOptions.start === at.start) {
      return { kind: 'file', start: fileOptions.start, options: fileOptions.options }
    }
    return undefined
  }
  const completion = completionOf(editor)
  const selectedIndex = completion === undefined ? 0 : Math.min(selected, completion.options.length - 1)

  const approval = store.approvals[0]
  const question = store.questions[0]

  /** The highlighted completion's index as the key handler sees it (not the last render's). */
  const selectedNow = (completion: Completion | undefined): number =>
    completion === undefined ? 0 : Math.min(selectedRef.current, completion.options.length - 1)

  const accept = (index = selectedNow(completionOf(editorRef.current))): boolean => {
    const completion = completionOf(editorRef.current)
    if (completion === undefined) return false
    const at = Math.min(index, completion.options.length - 1)
    if (completion.kind === 'command') {
      const command = completion.options[at]
      setEditor(state => setText(state, `/${command.name} `))
    } else {
      const path = completion.options[at]
      setEditor(state => replaceRange(state, completion.start, state.cursor, `@${path} `))
    }
    setSelected(0)
    return true
  }

  /** Enter: takes the highlighted completion when it differs from what is typed, else sends. */
  const enter = (index = selectedNow(completionOf(editorRef.current))): void => {
    const editor = editorRef.current
    const completion = completionOf(editor)
    const at = completion === undefined ? 0 : Math.min(index, completion.options.length - 1)
    if (completion !== undefined && (completion.kind === 'file' || completion.options[at].name !== commandAtCursor(editor))) {
      accept(index)
      return
    }
    if (editor.text.slice(0, editor.cursor).endsWith('\\')) {
      setEditor(state => insert(backspace(state), '\n'))
      return
    }
    send(false)
  }

  const send = (steer: boolean) => {
    const text = editorRef.current.text
    if (text.trim() === '') return
    const { state } = submit(editorRef.current)
    setEditor(state)
    setSelected(0)
    const trimmed = text.trim()
    const command = /^\/([\w:-]+)(?:\s+([\s\S]*))?$/.exec(trimmed)
    if (command !== null) {
      actions.runCommand(command[1], (command[2] ?? '').trim())
      return
    }
    if (steer && running) actions.steer(text)
    else actions.send(text)
  }

  const onKey = (input: string, key: Key): void => {
    const editor = editorRef.current
    const running = store.fold.running
    const completion = completionOf(editor)
    const commandPrefix = commandAtCursor(editor)
    const mention = mentionAtCursor(editor)
    // Read the store, not the render: a key can arrive between a frame and the next handler.
    const approval = store.approvals[0]
    if (approval !== undefined) return approvalKeyPress(store, approval, input, key, sizeRef.current)
    // A pending question takes the keys (question.tsx).
    if (store.questions.length > 0) return
    if (store.rewind !== undefined) return rewindKey(input, key)
    if (store.resume !== undefined) return // `/resume`'s picker takes the keys (picker.tsx).
    if ((key.escape || (key.ctrl && input === 'c')) && actions.stopShell?.() === true) return
    if (escArmedRef.current && !key.escape) setEscArmed(false)
    if (key.ctrl && input === 'c') {
      if (exitArmedRef.current) {
        actions.exit()
        return
      }
      if (running) {
        const restored = actions.cancel()
        if (restored.length > 0) setEditor(state => setText(state, [...restored, state.text].filter(Boolean).join('\n')))
      } else if (editor.text !== '') setEditor(emptyEditor(editor.history))
      setExitArmed(true)
      return
    }
    if (exitArmedRef.current) setExitArmed(false)
    if (key.ctrl && input === 'd') {
      if (editor.text === '') actions.exit()
      return
    }
    if (key.escape) {
      if (completion !== undefined && commandPrefix === undefined && mention !== undefined) {
        setFileOptions(undefined)
        return
      }
      if (running) {
        setEscArmed(false)
        const restored = actions.cancel()
        if (restored.length > 0) setEditor(state => setText(state, [...restored, state.text].filter(Boolean).join('\n')))
      } else if (editor.text === '' && actions.openRewind !== undefined) {
        if (escArmedRef.current) actions.openRewind()
        setEscArmed(!escArmedRef.current)
      }
      return
    }
    if (key.ctrl && input === 'o') {
      setExpanded(value => !value)
      return
    }
    if (key.ctrl && input === 's') {
      send(true)
      return
    }
    if (key.tab) {
      accept()
      return
    }
    if (key.return) {
      if (key.meta) {
        setEditor(state => insert(state, '\n'))
        return
      }
      enter()
      return
    }
    if (key.upArrow) {
      if (completion !== undefined) setSelected(Math.max(0, selectedNow(completion) - 1))
      else setEditor(up)
      return
    }
    if (key.downArrow) {
      if (completion !== undefined) setSelected(Math.min(completion.options.length - 1, selectedNow(completion) + 1))
      else setEditor(down)
      return
    }
    if (key.leftArrow) return setEditor(moveLeft)
    if (key.rightArrow) return setEditor(moveRight)
    if (key.home || (key.ctrl && input === 'a')) return setEditor(home)
    if (key.end || (key.ctrl && input === 'e')) return setEditor(end)
    if (key.backspace || key.delete) return setEditor(backspace)
    if (key.ctrl && input === 'w') return setEditor(deleteWordBefore)
    if (key.ctrl && input === 'u') return setEditor(deleteToLineStart)
    if (key.ctrl || input === '') return
    // A typed line often arrives in one chunk with its Enter: the text, then Enter as if pressed
    // on its own (a command being typed takes its highlighted completion, as a separate Enter
    // would). Pasted text with several line breaks is inserted as it is.
    actions.typing?.()
    const breaks = (input.match(/\r/g) ?? []).length
    if (breaks === 1 && input.endsWith('\r') && input.length > 1) {
      setEditor(state => insert(state, input.slice(0, -1)))
      setSelected(0)
      enter(0)
      return
    }
    setEditor(state => insert(state, input))
    setSelected(0)
  }
  /**
   * Keys while the rewind list is open: ↑/↓ (and pages) choose, Enter goes back (or, when the
   * turns from there changed files, asks whether to put them back), Esc closes (or goes back
   * from that question to the list).
   */
  const rewindKey = (input: string, key: Key): void => {
    const files = store.rewind!.files
    const goBack = (point: RewindPoint, restore: readonly FileChange[] | undefined) => {
      store.closeRewind()
      void actions.rewind?.(point, restore).then(text => {
        if (text !== undefined) setEditor(state => setText(state, text))
      })
    }
    if (key.upArrow) store.moveRewind(-1)
    else if (key.downArrow) store.moveRewind(1)
    else if (key.pageUp && files === undefined) store.moveRewind(-rewindRows)
    else if (key.pageDown && files === undefined) store.moveRewind(rewindRows)
    else if (key.ctrl && input === 'c') store.closeRewind()
    else if (key.escape) {
      if (files !== undefined) store.unpickRewind()
      else store.closeRewind()
    } else if (key.return) {
      if (files !== undefined) return goBack(files.point, files.choice === 0 ? files.changes.changes : undefined)
      const point = store.pickRewind()
      if (point !== undefined) goBack(point, undefined)
    }
  }
  useInput((input, key) => {
    // Keys pressed quickly can reach the app in one read; ink hands a run of control keys over as
    // one string with no key named (Ctrl-C twice is "\x03\x03"). Each is taken as its own press.
    const presses = controlPresses(input, key)
    if (presses === undefined) onKey(input, key)
    else for (const letter of presses) onKey(letter, { ...key, ctrl: true })
  })

  const width = Math.max(20, size.columns)
  const live = store.live()
  const liveRows = Math.max(3, size.rows - 9)
  const rewindRows = Math.max(3, size.rows - 10)
  const queued = actions.queued()
  const contextUse = info.contextWindow !== undefined && store.fold.contextTokens > 0
    ? `ctx ${percent(store.fold.contextTokens / info.contextWindow)} (${compactNumber(store.fold.contextTokens)}/${compactNumber(info.contextWindow)})`
    : 'ctx 0%'
  const jobs = info.runningJobs?.() ?? 0
  const placeholder = running ? 'Enter queues a message · Ctrl-S steers the running step' : 'Ask dsh to do something · /help for keys'

  if (store.closing) {
    return (
      <Static items={store.printed as Printed[]}>
        {printed => <Box key={printed.key} width={width} flexDirection="column"><PrintedView printed={printed} expanded={expanded} width={width} {...info.cost === undefined ? {} : { cost: info.cost }} /></Box>}
      </Static>
    )
  }
  return (
    <Box flexDirection="column" width={width}>
      <Static key={epoch} items={store.printed as Printed[]}>
        {printed => <Box key={printed.key} width={width} flexDirection="column"><PrintedView printed={printed} expanded={expanded} width={width} {...info.cost === undefined ? {} : { cost: info.cost }} /></Box>}
      </Static>
      {live.map(item => <ItemView key={item.key} item={item} expanded={expanded} width={width} live={{ rows: liveRows, output: store.liveOutput }} />)}
      {[...store.children.values()].map(child => (
        <Text key={child.id} wrap="truncate-end">
          <Text dimColor>  ⎿ </Text><Text bold>{terminalSafe(child.label)}</Text><Text dimColor> · subagent · step {child.steps} · {terminalSafe(child.activity)}</Text>
        </Text>
      ))}
      <ActivityLine running={running} status={store.fold.status} items={live} since={runningSince.current} asking={question !== undefined} />
      {store.shell !== undefined ? <ShellLine command={store.shell.command} since={store.shell.since} /> : null}
      {queued.length > 0 ? (
        <Box flexDirection="column">
          {queued.map((text, index) => <Text key={index} dimColor wrap="truncate-end">↳ queued: {terminalSafe(text).replace(/\n/g, ' ')}</Text>)}
        </Box>
      ) : null}
      {approval !== undefined ? <ApprovalBox approval={approval} width={width} rows={size.rows} offset={store.approvalScroll?.id === approval.id ? store.approvalScroll.offset : 0}
        {...store.agent.session.header.cwd !== undefined && { folder: store.agent.session.header.cwd }} /> : null}
      {question !== undefined ? <QuestionView key={question.id} prompt={question} active={approval === undefined} /> : null}
      {store.rewind?.files !== undefined
        ? <RewindFiles point={store.rewind.files.point} changes={store.rewind.files.changes} choice={store.rewind.files.choice} folder={store.agent.session.header.cwd} />
        : store.rewind !== undefined ? <RewindList points={store.rewind.points} index={store.rewind.index} rows={rewindRows} /> : null}
      {store.resume !== undefined ? <SessionPicker sessions={store.resume.sessions} home={info.home ?? ''} rows={rewindRows} onPick={id => store.closeResume(id)} /> : null}
      <Box borderStyle="round" borderColor={c(running ? 'gray' : 'cyan')} paddingX={1} marginTop={queued.length > 0 || approval !== undefined || question !== undefined || store.rewind !== undefined || store.resume !== undefined ? 0 : 1}>
        <Text color={c('cyan')} bold>› </Text>
        <Box flexGrow={1}><EditorView state={editor} placeholder={placeholder} focused={approval === undefined && question === undefined} /></Box>
      </Box>
      {completion !== undefined ? (
        <Box flexDirection="column" paddingLeft={2}>
          {completion.kind === 'command'
            ? completion.options.slice(0, 8).map((command, index) => (
              <Text key={command.name} wrap="truncate-end" inverse={index === selectedIndex}>/{terminalSafe(command.name)} <Text dimColor>{terminalSafe(command.description)}</Text></Text>
            ))
            : completion.options.map((path, index) => <Text key={path} wrap="truncate-end" inverse={index === selectedIndex}>@{terminalSafe(path)}</Text>)}
        </Box>
      ) : null}
      <Box width={width}>
        <Text wrap="truncate-end" dimColor>
          {exitArmed ? <Text color={c('yellow')} dimColor={false}>Press Ctrl-C again to exit · </Text> : null}
          {escArmed ? <Text color={c('yellow')} dimColor={false}>Esc again to go back to an earlier prompt · </Text> : null}
          {terminalSafe(info.model)} · {terminalSafe(info.folder)} · {info.permission()} · {jobs > 0 ? <><Text color={c('yellow')} dimColor={false}>{jobs} job{jobs === 1 ? '' : 's'} running</Text> · </> : null}{contextUse}
        </Text>
      </Box>
    </Box>
  )
}
