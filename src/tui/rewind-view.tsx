/**
 * The boxes of going back to an earlier prompt (Esc Esc, `/rewind`): the list of earlier
 * prompts, and the question whether to put back the files their turns changed. Prompts and
 * paths are shown made safe for the terminal (security #42.6).
 */
import type { ReactNode } from 'react'
import { Box, Text } from 'ink'
import type { RewindPoint } from '../host/rewind.js'
import type { FileChanges } from '../tools/file-changes.js'
import { displayPath } from '../tools/builtin/paths.js'
import { plural } from '../host/numbers.js'
import { age } from '../host/age.js'
import { terminalSafe } from '../host/terminal-text.js'
import { c } from './theme.js'

/** The earlier prompts to go back to, newest first, the chosen one highlighted (`rows` at most). */
export function RewindList(props: { points: readonly RewindPoint[]; index: number; rows: number }): ReactNode {
  const { points, index, rows } = props
  const first = Math.max(0, Math.min(index - Math.floor(rows / 2), points.length - rows))
  return (
    <Box flexDirection="column" borderStyle="round" borderColor={c('cyan')} paddingX={1}>
      <Text bold>Go back to before an earlier prompt <Text dimColor>(↑/↓ choose · Enter go back · Esc close)</Text></Text>
      <Text dimColor wrap="truncate-end">The conversation continues in a copy from there, the prompt in the input box to edit; this session stays stored as it is.</Text>
      {points.slice(first, first + rows).map((point, n) => {
        const selected = first + n === index
        return (
          <Text key={point.turn} wrap="truncate-end" inverse={selected}>
            {selected ? '› ' : '  '}<Text dimColor={!selected}>turn {point.turn} · {age(point.time)} · </Text>{terminalSafe(point.label).replace(/\s+/g, ' ')}
          </Text>
        )
      })}
      {points.length > rows ? <Text dimColor>{index + 1}/{points.length}</Text> : null}
    </Box>
  )
}

/** After picking a point whose turns changed files: put them back, or leave them. */
export function RewindFiles(props: { point: RewindPoint; changes: FileChanges; choice: number; folder?: string }): ReactNode {
  const { point, changes, choice } = props
  const names = changes.paths.map(path => terminalSafe(props.folder === undefined ? path : displayPath(props.folder, path)))
  const shown = names.length > 4 ? `${names.slice(0, 4).join(', ')} and ${names.length - 4} more` : names.join(', ')
  const commands = [...changes.otherCalls].map(([name, count]) => `${terminalSafe(name)} ran ${plural(count, 'time')}`).join(', ')
  const options = [`Go back and put ${names.length === 1 ? 'that file' : 'those files'} back as ${names.length === 1 ? 'it was' : 'they were'}`, `Go back and leave the files as they are`]
  return (
    <Box flexDirection="column" borderStyle="round" borderColor={c('cyan')} paddingX={1}>
      <Text bold>Go back to before turn {point.turn} <Text dimColor>(↑/↓ choose · Enter · Esc back to the list)</Text></Text>
      <Text wrap="wrap">From there on, write and edit changed {plural(names.length, 'file')}: {shown}.</Text>
      {commands !== '' ? <Text dimColor wrap="wrap">Also {commands}: what {changes.otherCalls.size === 1 && [...changes.otherCalls.values()][0] === 1 ? 'it' : 'they'} changed is not put back.</Text> : null}
      {options.map((option, index) => (
        <Text key={index} wrap="truncate-end" inverse={index === choice}>{index === choice ? '› ' : '  '}{option}</Text>
      ))}
    </Box>
  )
}
