/**
 * The approval box: a request of this session (a sandbox escalation, a hook that asks, a host the
 * network proxy was asked for) with the tool, the reason and the arguments. All three come from
 * the model or a hook: shown made safe for the terminal (security #42.6), so what is asked about
 * is what shows, with no escape acting on the terminal and no override reordering the command.
 *
 * Keys: `y` (or Enter) allows once, `n` (or Esc, Ctrl-C) rejects. A request that offers wider
 * grants (`scopes`) also takes `s` (allow for the rest of this session) and `a` (always: added to
 * the settings); a key for a scope it does not offer does nothing. When the grant is a permission
 * rule (`grants`), the box shows the rule as it will be written, and names the ask rule that made
 * it ask (`askedBy`).
 *
 * A stored key's first use with an endpoint (`keyUse`, key-use.ts) is asked in the same box, with
 * the endpoint in full (wrapped, never cut) and who chose it: `y` sends it, `n` (Esc, Ctrl-C) does
 * not; Enter does nothing, so the Enter that sent a prompt, pressed twice, sends no key.
 */
import type { ReactNode } from 'react'
import { Box, Text } from 'ink'
import type { ApprovalScope } from '../approval/api.js'
import type { ApprovalPrompt, TuiApprovalAnswer } from './store.js'
import { terminalSafe } from '../host/terminal-text.js'
import { c } from './theme.js'

/** The keys a prompt takes, in the order the box shows them. */
interface Choice {
  readonly key: string
  readonly label: string
  readonly answer: TuiApprovalAnswer
  readonly color: 'green' | 'cyan' | 'red'
}

const ONCE: Choice = { key: 'y', label: 'allow once', answer: 'allowed-once', color: 'green' }
const SCOPED: Readonly<Record<ApprovalScope, Choice>> = {
  session: { key: 's', label: 'for this session', answer: 'allowed-session', color: 'cyan' },
  always: { key: 'a', label: 'always (add to settings)', answer: 'allowed-always', color: 'cyan' },
}
const REJECT: Choice = { key: 'n', label: 'reject', answer: 'rejected', color: 'red' }

/** The choices of one request: once, the scopes it offers (session before always), reject. */
export function approvalChoices(scopes: readonly ApprovalScope[] | undefined, grants?: string): readonly Choice[] {
  const offered = (['session', 'always'] as const).filter(scope => scopes?.includes(scope) === true)
  const scoped = offered.map(scope => grants === undefined || scope === 'session' ? SCOPED[scope] : { ...SCOPED[scope], label: 'always (settings.yaml)' })
  return [ONCE, ...scoped, REJECT]
}

/** The answer a key press gives the pending request, or undefined (the key does nothing). */
export function approvalKey(approval: Pick<ApprovalPrompt, 'scopes' | 'keyUse'>, input: string, key: { return?: boolean; escape?: boolean; ctrl?: boolean }): TuiApprovalAnswer | undefined {
  if (key.ctrl) return input === 'c' ? 'rejected' : undefined
  if (key.return) return approval.keyUse === undefined ? 'allowed-once' : undefined
  if (key.escape) return 'rejected'
  return approvalChoices(approval.scopes).find(choice => choice.key === input.toLowerCase())?.answer
}

/**
 * What will run, in full (#44.2): a `command` argument as `$ command` with its own line breaks,
 * then every other argument as `name: value`, each wrapped at the box's width and never cut, so
 * the end of a long command (a `touch` outside the folder after `&&`) is on screen when the user
 * decides. Arguments that are not a JSON object show as they are.
 */
export function argumentLines(raw: string | undefined): { readonly kind: 'command' | 'field'; readonly text: string }[] {
  if (raw === undefined || raw === '') return []
  let value: unknown
  try {
    value = JSON.parse(raw)
  } catch {
    return [{ kind: 'field', text: raw }]
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return [{ kind: 'field', text: raw }]
  const lines: { kind: 'command' | 'field'; text: string }[] = []
  const record = value as Record<string, unknown>
  if (typeof record.command === 'string') lines.push({ kind: 'command', text: `$ ${record.command}` })
  for (const [name, field] of Object.entries(record)) {
    if (name === 'command' && typeof field === 'string') continue
    lines.push({ kind: 'field', text: `${name}: ${typeof field === 'string' ? field : JSON.stringify(field)}` })
  }
  return lines
}

export function ApprovalBox({ approval, folder }: { approval: ApprovalPrompt; folder?: string }): ReactNode {
  if (approval.keyUse !== undefined) return <KeyUseBox use={approval.keyUse} />
  const choices = approvalChoices(approval.scopes, approval.grants)
  const lines = argumentLines(approval.arguments)
  return (
    <Box flexDirection="column" borderStyle="round" borderColor={c('yellow')} paddingX={1}>
      <Text bold>Allow {terminalSafe(approval.toolName)}?{folder !== undefined ? <Text dimColor> in {terminalSafe(folder)}</Text> : null}</Text>
      <Text wrap="wrap">{terminalSafe(approval.reason)}</Text>
      {lines.map((line, index) => line.kind === 'command'
        ? <Text key={index} wrap="wrap" color={c('cyan')}>{terminalSafe(line.text)}</Text>
        : <Text key={index} wrap="wrap" dimColor>{terminalSafe(line.text)}</Text>)}
      {approval.askedBy !== undefined ? <Text wrap="wrap" dimColor>asked by the rule {terminalSafe(approval.askedBy)}</Text> : null}
      {approval.grants !== undefined && approval.scopes !== undefined && approval.scopes.length > 0
        ? <Text wrap="wrap" dimColor>{approval.scopes.includes('always') ? 's / a' : 's'} add the rule <Text color={c('cyan')}>{terminalSafe(approval.grants)}</Text></Text>
        : null}
      <Text>
        {choices.map((choice, index) => (
          <Text key={choice.key}>{index > 0 ? ' · ' : ''}<Text color={c(choice.color)} bold>{choice.key}</Text> {choice.label}</Text>
        ))}
      </Text>
    </Box>
  )
}

function KeyUseBox({ use }: { use: NonNullable<ApprovalPrompt['keyUse']> }): ReactNode {
  return (
    <Box flexDirection="column" borderStyle="round" borderColor={c('yellow')} paddingX={1}>
      <Text bold>Send your stored {terminalSafe(use.keyName)} to a new endpoint?</Text>
      <Text color={c('cyan')}>{terminalSafe(use.endpoint)}</Text>
      <Text>It has not been sent there before. {terminalSafe(use.chosenBy)} chose it.</Text>
      <Text>
        <Text color={c('green')} bold>y</Text> send it, and remember this endpoint · <Text color={c('red')} bold>n</Text> do not send (nothing leaves)
      </Text>
    </Box>
  )
}
