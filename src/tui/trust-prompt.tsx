/**
 * Starting in a folder whose project files would run code (hook files, `.mcp.json` servers) that
 * is not trusted: the terminal app says what they run and asks once, before the conversation
 * opens (docs/security.md, "Project trust"). y trusts the folder; n or Esc starts without them;
 * Ctrl-C leaves.
 */
import type { ReactNode } from 'react'
import { Box, Text, useInput } from 'ink'
import { c } from './theme.js'
import { terminalSafe } from '../host/terminal-text.js'

export type TrustAnswer = 'trust' | 'skip'

export function TrustPrompt(props: { folder: string; code: readonly string[]; changed: boolean; onDone(answer: TrustAnswer | undefined): void }): ReactNode {
  useInput((input, press) => {
    if (press.ctrl && input === 'c') return props.onDone(undefined)
    if (input === 'y' || input === 'Y') return props.onDone('trust')
    if (input === 'n' || input === 'N' || press.escape) return props.onDone('skip')
  })
  return (
    <Box flexDirection="column">
      <Text bold>Do you trust the files in this folder?</Text>
      <Text color={c('cyan')}>  {terminalSafe(props.folder)}</Text>
      <Text>{props.changed ? 'Its .mcp.json changed since you trusted it. ' : ''}These project files run commands on your machine, with your rights, outside the sandbox:</Text>
      {props.code.map(line => <Text key={line}>  {terminalSafe(line)}</Text>)}
      <Box marginTop={1} flexDirection="column">
        <Text><Text color={c('green')} bold>y</Text> trust this folder: run them now and from now on</Text>
        <Text><Text color={c('yellow')} bold>n</Text> not now: start without them (Esc does the same)</Text>
      </Box>
      <Text dimColor>Later: /trust shows this, /trust on trusts, /trust off revokes.</Text>
    </Box>
  )
}
