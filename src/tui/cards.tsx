/**
 * Compact tool cards: one header line (state, tool, what it works on, a short outcome) and at
 * most a few lines of body: the tail of a bash command's output, a coloured diff of an edit or
 * overwrite, counts for glob and grep. Unknown tools show their arguments on one line.
 */
import type { ReactNode } from 'react'
import { Box, Text } from 'ink'
import type { ToolCallView } from './fold.js'
import { c } from './theme.js'
import { terminalLine } from './wrap.js'
import { terminalSafe } from '../host/terminal-text.js'

const BASH_TAIL = 4
const DIFF_LINES = 12

function parse(raw: string): Record<string, unknown> | undefined {
  try {
    const value = JSON.parse(raw) as unknown
    return value !== null && typeof value === 'object' ? value as Record<string, unknown> : undefined
  } catch {
    return undefined
  }
}

function str(value: unknown): string {
  return typeof value === 'string' ? value : ''
}

/** `text` on one line for a card or a notice, made safe for the terminal (security #42.6). */
export function oneLine(text: string, max = 120): string {
  const flat = terminalSafe(text).replace(/\s*\n\s*/g, ' ⏎ ').trim()
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat
}

function meta(call: ToolCallView): Record<string, unknown> {
  const value = call.result?.meta
  if (value === null || typeof value !== 'object') return {}
  const record = value as Record<string, unknown>
  return typeof record.value === 'object' && record.value !== null && 'spilled' in record ? record.value as Record<string, unknown> : record
}

/**
 * `failed` overrides the tool's own verdict: a command that exited non-zero ran, but failed. The
 * title, detail and outcome come from the model and the tool: made safe here, for every card.
 */
function Header(props: { call: ToolCallView; running: boolean; title: string; detail?: string; outcome?: string; failed?: boolean }): ReactNode {
  const { call } = props
  const failed = props.failed ?? call.result?.isError === true
  const mark = call.result === undefined ? (props.running ? '…' : '·') : failed ? '✗' : '✓'
  const markColor = call.result === undefined ? c('yellow') : failed ? c('red') : c('green')
  return (
    <Text wrap="truncate-end">
      <Text color={markColor}>{mark} </Text>
      <Text bold>{terminalSafe(props.title)}</Text>
      {props.detail ? <Text> {terminalSafe(props.detail)}</Text> : null}
      {props.outcome ? <Text dimColor> · {terminalSafe(props.outcome)}</Text> : null}
    </Text>
  )
}

/** A background job's state in a result's meta (`meta.job`, docs/jobs.md). */
interface JobMeta { readonly id: string; readonly status: string; readonly detail?: string }

function jobOf(m: Record<string, unknown>): JobMeta | undefined {
  const job = m.job as Partial<JobMeta> | undefined
  return typeof job?.id === 'string' && typeof job.status === 'string' ? job as JobMeta : undefined
}

function jobStatus(job: JobMeta): string {
  return job.detail !== undefined ? `${job.status} (${job.detail})` : job.status
}

function DiffLines(props: { diff: string }): ReactNode {
  const lines = terminalSafe(props.diff).split('\n').filter(line => !line.startsWith('---') && !line.startsWith('+++') && !line.startsWith('Index:') && !/^=+$/.test(line) && line !== '')
  const shown = lines.slice(0, DIFF_LINES)
  return (
    <Box flexDirection="column" paddingLeft={2}>
      {shown.map((line, index) => (
        <Text key={index} wrap="truncate-end" color={line.startsWith('+') ? c('green') : line.startsWith('-') ? c('red') : line.startsWith('@@') ? c('cyan') : undefined} dimColor={line.startsWith('@@')}>{line}</Text>
      ))}
      {lines.length > shown.length ? <Text dimColor>… {lines.length - shown.length} more diff lines</Text> : null}
    </Box>
  )
}

/** The last lines of a command's output as a terminal leaves them (a bash card, a `!command`). */
export function outputTail(text: string): string[] {
  return bashTail(text)
}

function bashTail(text: string): string[] {
  // The header says how it exited: the result's own exit-code line would only repeat it.
  const lines = text.replace(/\n+$/, '').split('\n').filter(line => !/^(\[exit code: -?\d+\]$|(exit code|Exit code)[: ])/.test(line))
  return lines.slice(-BASH_TAIL).map(terminalLine)
}

function firstLine(text: string): string {
  return oneLine(text.split('\n')[0] ?? '')
}

/** `live`: the latest output of a call still running (bash), shown until its result is. */
export function ToolCardView(props: { call: ToolCallView; running: boolean; live?: string }): ReactNode {
  const { call, running } = props
  const args = parse(call.arguments) ?? {}
  const m = meta(call)
  const result = call.result
  const error = result?.isError ? firstLine(result.text) : undefined
  switch (call.name) {
    case 'bash': {
      const job = jobOf(m)
      if (job !== undefined) {
        // Started in the background: the card says which job; its output comes with job_output.
        return <Header call={call} running={running} title="$" detail={oneLine(str(args.command)) || '…'} outcome={`background job ${job.id}`} />
      }
      const exit = typeof m.exitCode === 'number' ? `exit ${m.exitCode}` : m.timedOut ? 'timed out' : m.aborted ? 'aborted' : undefined
      const failed = result !== undefined && (result.isError || (typeof m.exitCode === 'number' && m.exitCode !== 0) || m.timedOut === true)
      const tail = result === undefined ? (props.live === undefined ? [] : bashTail(props.live)) : bashTail(result.text)
      return (
        <Box flexDirection="column">
          <Header call={call} running={running} title="$" detail={oneLine(str(args.command)) || '…'} outcome={exit} failed={failed} />
          {tail.length > 0 ? (
            <Box flexDirection="column" paddingLeft={2}>
              {tail.map((line, index) => <Text key={index} wrap="truncate-end" dimColor={!failed} color={failed ? c('red') : undefined}>{line}</Text>)}
            </Box>
          ) : null}
        </Box>
      )
    }
    case 'read': {
      const outcome = error ?? (typeof m.totalLines === 'number' ? `lines ${m.firstLine}-${m.lastLine} of ${m.totalLines}` : undefined)
      return <Header call={call} running={running} title="read" detail={str(args.file_path) || str(args.path)} outcome={outcome} />
    }
    case 'write': {
      const outcome = error ?? (result === undefined ? undefined : `${m.created ? 'created' : 'overwrote'}, ${m.lines} line${m.lines === 1 ? '' : 's'}`)
      return (
        <Box flexDirection="column">
          <Header call={call} running={running} title="write" detail={str(args.file_path)} outcome={outcome} />
          {typeof m.diff === 'string' ? <DiffLines diff={m.diff} /> : null}
        </Box>
      )
    }
    case 'edit': {
      const outcome = error ?? (typeof m.replacements === 'number' ? `${m.replacements} replacement${m.replacements === 1 ? '' : 's'}` : undefined)
      return (
        <Box flexDirection="column">
          <Header call={call} running={running} title="edit" detail={str(args.file_path)} outcome={outcome} />
          {typeof m.diff === 'string' ? <DiffLines diff={m.diff} /> : null}
        </Box>
      )
    }
    case 'glob': {
      const outcome = error ?? (typeof m.count === 'number' ? `${m.count} file${m.count === 1 ? '' : 's'}` : undefined)
      return <Header call={call} running={running} title="glob" detail={str(args.pattern)} outcome={outcome} />
    }
    case 'grep': {
      const outcome = error ?? (typeof m.matches === 'number' ? `${m.matches} match${m.matches === 1 ? '' : 'es'}${m.limitReached ? ' (limit)' : ''}` : undefined)
      return <Header call={call} running={running} title="grep" detail={str(args.pattern)} outcome={outcome} />
    }
    case 'web_search': {
      const queries = Array.isArray(args.queries) ? (args.queries as unknown[]).filter((query): query is string => typeof query === 'string') : []
      const sources = Array.isArray(m.sources) ? m.sources.length : undefined
      const outcome = error ?? (sources === undefined ? undefined : `${sources} source${sources === 1 ? '' : 's'}`)
      return <Header call={call} running={running} title="search" detail={oneLine(queries.join(', ')) || '…'} outcome={outcome} />
    }
    case 'todo_write': {
      const todos = Array.isArray(args.todos) ? args.todos as { content?: string; status?: string }[] : []
      return (
        <Box flexDirection="column">
          <Header call={call} running={running} title="plan" outcome={error ?? `${todos.filter(todo => todo.status === 'completed').length}/${todos.length} done`} />
          <Box flexDirection="column" paddingLeft={2}>
            {todos.map((todo, index) => (
              <Text key={index} wrap="truncate-end" dimColor={todo.status === 'completed'}>
                {todo.status === 'completed' ? '☑' : todo.status === 'in_progress' ? '▸' : '☐'} {terminalSafe(String(todo.content ?? ''))}
              </Text>
            ))}
          </Box>
        </Box>
      )
    }
    case 'read_image': {
      const image = m.image as { mediaType?: string; width?: number; height?: number } | undefined
      const outcome = error ?? (image?.mediaType !== undefined ? `${image.mediaType}, ${image.width}x${image.height} px` : undefined)
      return <Header call={call} running={running} title="image" detail={str(args.file_path)} outcome={outcome} />
    }
    case 'job_output': {
      const job = jobOf(m)
      const body = result === undefined ? '' : result.text.replace(/\n?\[status: [^\]]*\]$/, '')
      const tail = result === undefined || result.isError || body === '(no new output)' ? [] : bashTail(body)
      const failed = job?.status === 'failed'
      return (
        <Box flexDirection="column">
          <Header call={call} running={running} title="job" detail={str(args.job_id)} outcome={error ?? (job === undefined ? undefined : jobStatus(job))} failed={result?.isError === true || failed} />
          {tail.length > 0 ? (
            <Box flexDirection="column" paddingLeft={2}>
              {tail.map((line, index) => <Text key={index} wrap="truncate-end" dimColor>{line}</Text>)}
            </Box>
          ) : null}
        </Box>
      )
    }
    case 'job_kill':
      return <Header call={call} running={running} title="kill job" detail={str(args.job_id)} outcome={error ?? (result === undefined ? undefined : firstLine(result.text))} />
    case 'job_list': {
      const jobs = Array.isArray(m.jobs) ? m.jobs as { status?: string }[] : undefined
      const running = jobs?.filter(job => job.status === 'running' || job.status === 'stopping').length
      return <Header call={call} running={props.running} title="jobs" outcome={error ?? (jobs === undefined ? undefined : `${jobs.length} job${jobs.length === 1 ? '' : 's'}, ${running} running`)} />
    }
    case 'terminal_open':
    case 'terminal_send':
    case 'terminal_read':
    case 'terminal_signal':
    case 'terminal_list':
    case 'terminal_close':
      return <TerminalCard call={call} running={running} args={args} meta={m} error={error} />
    case 'run_code': {
      // The program's calls nest under it, live, each drawn as its own card.
      const inner = call.inner ?? []
      const outcome = error ?? (inner.length > 0 ? `${inner.length} call${inner.length === 1 ? '' : 's'}` : undefined)
      return (
        <Box flexDirection="column">
          <Header call={call} running={running} title="code" detail={oneLine(str(args.description)) || '…'} outcome={outcome} />
          {inner.length > 0 ? (
            <Box flexDirection="column" paddingLeft={2}>
              {inner.map(one => <ToolCardView key={one.id} call={one} running={running && one.result === undefined} />)}
            </Box>
          ) : null}
        </Box>
      )
    }
    default:
      return <Header call={call} running={running} title={call.name} detail={oneLine(call.arguments, 80)} outcome={error ?? (result === undefined ? undefined : firstLine(result.text))} />
  }
}

const TERMINAL_LINES = 6

/**
 * A terminal tool call (docs/pty-terminals.md): which terminal and what was sent, how the wait
 * ended, and the last lines of the screen the result shows.
 */
function TerminalCard(props: { call: ToolCallView; running: boolean; args: Record<string, unknown>; meta: Record<string, unknown>; error?: string }): ReactNode {
  const { call, running, args, meta: m } = props
  const result = call.result
  const id = str(args.sessionId) || str((m.terminal as { id?: unknown } | undefined)?.id)
  const verb = call.name.slice('terminal_'.length)
  const detail = call.name === 'terminal_send' ? `${id} ${oneLine(str(args.text), 60)}` : call.name === 'terminal_signal' ? `${id} ${str(args.signal)}` : call.name === 'terminal_open' ? str(args.type) : id
  const status = m.sessionStatus as { kind?: string; exitCode?: number } | undefined
  const waited = typeof m.waitReason === 'string' ? `wait: ${m.waitReason}${status?.kind === 'exited' ? `, exited ${status.exitCode ?? ''}`.trimEnd() : ''}` : undefined
  const outcome = props.error ?? waited ?? (result === undefined ? undefined : firstLine(result.text))
  const screen = result === undefined || result.isError ? [] : typeof m.viewport === 'string' ? m.viewport.split('\n') : []
  const shown = screen.slice(-TERMINAL_LINES).map(terminalLine)
  return (
    <Box flexDirection="column">
      <Header call={call} running={running} title={`terminal ${verb}`} detail={detail} outcome={outcome} />
      {shown.length > 0 ? (
        <Box flexDirection="column" paddingLeft={2}>
          {shown.map((line, index) => <Text key={index} wrap="truncate-end" dimColor>{line}</Text>)}
        </Box>
      ) : null}
    </Box>
  )
}
