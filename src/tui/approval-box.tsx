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
 * A box whose arguments do not fit the screen scrolls (`approvalLayout`): ↑/↓, PgUp/PgDn, Home
 * and End move it, a line says which lines show and how many there are, and `y`, `s`, `a` and
 * Enter do nothing until the end of the arguments has been on screen, so nothing past the fold
 * is allowed unseen. `n` rejects at any time.
 *
 * A stored key's first use with an endpoint (`keyUse`, key-use.ts) is asked in the same box, with
 * the endpoint in full (wrapped, never cut) and who chose it: `y` sends it, `n` (Esc, Ctrl-C) does
 * not; Enter does nothing, so the Enter that sent a prompt, pressed twice, sends no key.
 */
import type { ReactNode } from 'react'
import { Box, Text } from 'ink'
import type { ApprovalScope } from '../approval/api.js'
import type { ApprovalPrompt, TuiApprovalAnswer, TuiStore } from './store.js'
import { terminalSafe } from '../host/terminal-text.js'
import { c } from './theme.js'
import { wrapText } from './wrap.js'

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

/**
 * The answer a key press gives the pending request, or undefined (the key does nothing). `unseen`:
 * part of the arguments has not been on screen yet, so only a rejection answers.
 */
export function approvalKey(approval: Pick<ApprovalPrompt, 'scopes' | 'keyUse'>, input: string, key: { return?: boolean; escape?: boolean; ctrl?: boolean }, unseen = false): TuiApprovalAnswer | undefined {
  if (key.ctrl) return input === 'c' ? 'rejected' : undefined
  if (key.escape) return 'rejected'
  const answer = key.return ? (approval.keyUse === undefined ? 'allowed-once' : undefined)
    : approvalChoices(approval.scopes).find(choice => choice.key === input.toLowerCase())?.answer
  return unseen && answer !== 'rejected' ? undefined : answer
}

/** The argument rows of a box `width` columns wide, and how many fit in `rows` screen rows. */
export interface ApprovalLayout {
  readonly lines: readonly { readonly kind: 'command' | 'field'; readonly text: string }[]
  /** Rows the arguments may take; fewer than `lines.length` means the box scrolls. */
  readonly window: number
}

/**
 * Screen rows the arguments leave to the rest: the box's border, title, reason, rule lines, scroll
 * line and keys, and below it the prompt box, the activity line and the footer.
 */
const BOX_CHROME = 15

export function approvalLayout(approval: Pick<ApprovalPrompt, 'arguments'>, width: number, rows: number): ApprovalLayout {
  const inner = Math.max(10, width - 4)
  const lines = argumentLines(approval.arguments).flatMap(line =>
    wrapText(terminalSafe(line.text), inner).split('\n').map(text => ({ kind: line.kind, text })))
  return { lines, window: Math.max(3, rows - BOX_CHROME) }
}

/** The scroll position after a key (↑ ↓ PgUp PgDn Home End), or undefined when the key does not scroll. */
export function scrollKey(layout: ApprovalLayout, offset: number, key: { upArrow?: boolean; downArrow?: boolean; pageUp?: boolean; pageDown?: boolean; home?: boolean; end?: boolean }): number | undefined {
  const last = Math.max(0, layout.lines.length - layout.window)
  if (last === 0) return undefined
  const step = key.upArrow ? -1 : key.downArrow ? 1 : key.pageUp ? -(layout.window - 1) : key.pageDown ? layout.window - 1 : key.home ? -Infinity : key.end ? Infinity : undefined
  if (step === undefined) return undefined
  return Math.min(last, Math.max(0, offset + step))
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

/**
 * A key press while `approval` is pending: it scrolls a box taller than the screen, or answers;
 * what has not been on screen cannot be allowed (only a rejection answers until the end was shown).
 */
export function approvalKeyPress(store: Pick<TuiStore, 'approvalScroll' | 'scrollApproval'>, approval: ApprovalPrompt, input: string,
  key: Parameters<typeof approvalKey>[2] & Parameters<typeof scrollKey>[2], size: { readonly columns: number; readonly rows: number }): void {
  const layout = approvalLayout(approval, Math.max(20, size.columns), size.rows)
  const scroll = store.approvalScroll?.id === approval.id ? store.approvalScroll : { offset: 0, seenEnd: false }
  const seenEnd = scroll.seenEnd || layout.lines.length <= layout.window + scroll.offset
  const moved = scrollKey(layout, scroll.offset, key)
  if (moved !== undefined) return store.scrollApproval(approval.id, moved, seenEnd || moved + layout.window >= layout.lines.length)
  const answer = approvalKey(approval, input, key, !seenEnd)
  if (answer !== undefined) approval.answer(answer)
}

export function ApprovalBox({ approval, folder, width = 80, rows = 24, offset = 0 }: { approval: ApprovalPrompt; folder?: string; width?: number; rows?: number; offset?: number }): ReactNode {
  if (approval.keyUse !== undefined) return <KeyUseBox use={approval.keyUse} />
  const choices = approvalChoices(approval.scopes, approval.grants)
  const layout = approvalLayout(approval, width, rows)
  const scrolls = layout.lines.length > layout.window
  const from = scrolls ? Math.min(offset, layout.lines.length - layout.window) : 0
  const shown = scrolls ? layout.lines.slice(from, from + layout.window) : layout.lines
  const atEnd = !scrolls || from + layout.window >= layout.lines.length
  return (
    <Box flexDirection="column" borderStyle="round" borderColor={c('yellow')} paddingX={1}>
      <Text bold>Allow {terminalSafe(approval.toolName)}?{folder !== undefined ? <Text dimColor> in {terminalSafe(folder)}</Text> : null}</Text>
      <Text wrap="wrap">{terminalSafe(approval.reason)}</Text>
      {shown.map((line, index) => line.kind === 'command'
        ? <Text key={index} color={c('cyan')}>{line.text}</Text>
        : <Text key={index} dimColor>{line.text}</Text>)}
      {scrolls
        ? <Text color={c('yellow')}>lines {from + 1}–{from + shown.length} of {layout.lines.length} · ↑↓ PgUp PgDn scroll{atEnd ? '' : ' · y works once you have seen the end'}</Text>
        : null}
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
