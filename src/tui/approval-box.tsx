/**
 * The approval box: a request of this session (a sandbox escalation, a hook that asks) with the
 * tool, the reason and the arguments. All three come from the model or a hook: shown made safe
 * for the terminal (security #42.6), so what is asked about is what shows, with no escape acting
 * on the terminal and no override reordering the command.
 */
import type { ReactNode } from 'react'
import { Box, Text } from 'ink'
import type { ApprovalPrompt } from './store.js'
import { terminalSafe } from '../host/terminal-text.js'
import { c } from './theme.js'

export function ApprovalBox({ approval }: { approval: ApprovalPrompt }): ReactNode {
  return (
    <Box flexDirection="column" borderStyle="round" borderColor={c('yellow')} paddingX={1}>
      <Text bold>Allow {terminalSafe(approval.toolName)}?</Text>
      <Text wrap="truncate-end">{terminalSafe(approval.reason)}</Text>
      {approval.arguments ? <Text dimColor wrap="truncate-end">{terminalSafe(approval.arguments)}</Text> : null}
      <Text><Text color={c('green')} bold>y</Text> allow once · <Text color={c('red')} bold>n</Text> reject</Text>
    </Box>
  )
}
