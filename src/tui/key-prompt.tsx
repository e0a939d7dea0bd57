/**
 * First run without a model key: instead of refusing to open, the terminal app asks for the key
 * once, shows only its length while it is typed or pasted, and hands it back to be stored in
 * `$DSH_HOME/.credentials.yaml` (mode 0600). Enter stores, Esc or Ctrl-C leaves.
 */
import { useState, type ReactNode } from 'react'
import { Box, Text, useInput } from 'ink'
import { c } from './theme.js'
import { useLatestState } from './latest-state.js'
import { terminalSafe } from '../host/terminal-text.js'

/** What a key may hold: printable ASCII without spaces (a pasted key often brings a newline). */
export function cleanKey(text: string): string {
  return text.replace(/[^\x21-\x7e]/g, '')
}

export function KeyPrompt(props: { name: string; file: string; onDone(key: string | undefined): void }): ReactNode {
  // Read through a ref in the key handler: Enter can arrive before the paste's render.
  const [key, keyRef, setKey] = useLatestState('')
  const [warning, setWarning] = useState<string | undefined>(undefined)
  useInput((input, press) => {
    if (press.escape || (press.ctrl && input === 'c')) return props.onDone(undefined)
    // What was typed is clean already: only cleaned input is ever added.
    if (press.return) return keyRef.current === '' ? setWarning('Nothing typed yet: paste the key, or press Esc to leave.') : props.onDone(keyRef.current)
    if (press.backspace || press.delete) return setKey(value => value.slice(0, -1))
    if (press.ctrl || press.meta) return
    // A paste can end in a newline: it is part of the paste, not an Enter.
    const added = cleanKey(input)
    if (added !== '') {
      setKey(value => value + added)
      setWarning(undefined)
    }
  })
  return (
    <Box flexDirection="column">
      <Text bold>{props.name} is not set.</Text>
      <Text>Paste your key: it is stored, readable by you only, in</Text>
      <Text color={c('cyan')}>  {terminalSafe(props.file)}</Text>
      <Text>Or press Esc and set {props.name} in the environment.</Text>
      <Box marginTop={1}>
        <Text color={c('cyan')} bold>key › </Text>
        <Text>{key === '' ? <Text dimColor>(hidden as you type)</Text> : `${'•'.repeat(Math.min(key.length, 40))} ${key.length} characters`}</Text>
      </Box>
      {warning !== undefined ? <Text color={c('yellow')}>{warning}</Text> : null}
      <Text dimColor>Enter store · Esc leave</Text>
    </Box>
  )
}
