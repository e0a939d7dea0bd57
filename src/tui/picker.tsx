/**
 * `dsh --resume`: a list of stored sessions (title, folder, age, turns), newest first. Up/Down
 * move, Enter opens, Esc leaves without opening anything.
 */
import type { ReactNode } from 'react'
import { Box, Text, useInput, useStdout } from 'ink'
import type { StoredSessionSummary } from '../persistence/api.js'
import { c } from './theme.js'
import { age } from '../host/age.js'
import { terminalSafe } from '../host/terminal-text.js'
import { useLatestState } from './latest-state.js'

export { age } from '../host/age.js'

export function SessionPicker(props: { sessions: readonly StoredSessionSummary[]; home: string; rows?: number; onPick(id: string | undefined): void }): ReactNode {
  // The key handler reads the index through a ref: Down and Enter can arrive before a render.
  const [index, indexRef, setIndex] = useLatestState(0)
  const { stdout } = useStdout()
  // Alone on the screen (`dsh --resume`) it takes the height; inside the app (`/resume`), `rows`.
  const rows = props.rows ?? Math.max(3, (stdout.rows || 24) - 4)
  const { sessions } = props
  useInput((input, key) => {
    if (key.upArrow) setIndex(value => Math.max(0, value - 1))
    else if (key.downArrow) setIndex(value => Math.min(sessions.length - 1, value + 1))
    else if (key.pageUp) setIndex(value => Math.max(0, value - rows))
    else if (key.pageDown) setIndex(value => Math.min(sessions.length - 1, value + rows))
    else if (key.return) props.onPick(sessions[indexRef.current]?.id)
    else if (key.escape || (key.ctrl && input === 'c')) props.onPick(undefined)
  })
  if (sessions.length === 0) {
    return <Text>No stored sessions yet. Press Esc.</Text>
  }
  const first = Math.max(0, Math.min(index - Math.floor(rows / 2), sessions.length - rows))
  const shown = sessions.slice(first, first + rows)
  const folder = (cwd: string | undefined) => cwd === undefined ? '-' : cwd.startsWith(props.home) ? `~${cwd.slice(props.home.length)}` : cwd
  return (
    <Box flexDirection="column">
      <Text bold>Resume a session <Text dimColor>(↑/↓ choose · Enter open · Esc cancel)</Text></Text>
      {shown.map((session, n) => {
        const selected = first + n === index
        return (
          <Text key={session.id} wrap="truncate-end" inverse={selected}>
            <Text color={selected ? undefined : c('cyan')}>{selected ? '›' : ' '} {terminalSafe(session.title ?? '(untitled)').replace(/\s+/g, ' ')}</Text>
            <Text dimColor={!selected}> · {terminalSafe(folder(session.cwd))} · {age(session.updatedAt)} · {session.turns} turn{session.turns === 1 ? '' : 's'}</Text>
          </Text>
        )
      })}
      <Text dimColor>{index + 1}/{sessions.length}</Text>
    </Box>
  )
}
