/**
 * The options of ACP `session/request_permission` (docs/protocols.md, "Approval") and what the
 * selected one answers the approval seam.
 */
import type { ApprovalAnswer, PendingApproval } from '../approval/api.js'
import type { JsonRpcPeer } from '../sdk/jsonrpc.js'
import { permissionOutcome } from './params.js'
import { parseArguments, toolKind, toolPath, toolTitle } from './updates.js'

/** The options offered with every permission request (as the original offers them). */
export const PERMISSION_OPTIONS = [
  { optionId: 'allow-once', name: 'Allow once', kind: 'allow_once' },
  { optionId: 'reject-once', name: 'Reject', kind: 'reject_once' },
] as const

/** The wider grants a request may offer (its `scopes`), as `allow_always` options and what each answers. */
const SCOPE_OPTIONS = {
  session: { option: { optionId: 'allow-session', name: 'Allow for this session', kind: 'allow_always' }, answer: 'allowed-session' },
  always: { option: { optionId: 'allow-settings', name: 'Always allow (add to settings)', kind: 'allow_always' }, answer: 'allowed-always' },
} as const

/**
 * A request's options: allow once, then the scopes it offers (session before settings), then
 * reject. Without scopes exactly `PERMISSION_OPTIONS` (recorded transcripts stay byte-equal).
 * When the grant is a permission rule (`grants`), its options name the rule as it will be written.
 */
export function permissionOptions(scopes: PendingApproval['scopes'], grants?: string): readonly { optionId: string; name: string; kind: string }[] {
  const offered = (['session', 'always'] as const).filter(scope => scopes?.includes(scope) === true)
  if (offered.length === 0) return PERMISSION_OPTIONS
  const named = (scope: 'session' | 'always') => {
    const option = SCOPE_OPTIONS[scope].option
    if (grants === undefined) return option
    return { ...option, name: scope === 'session' ? `Allow ${grants} for this session` : `Always allow ${grants} (add to settings)` }
  }
  return [PERMISSION_OPTIONS[0], ...offered.map(named), PERMISSION_OPTIONS[1]]
}

/** The answer a selected option gives: only options this request offered grant; anything else rejects. */
export function permissionAnswer(optionId: string, scopes: PendingApproval['scopes']): ApprovalAnswer {
  if (optionId === 'allow-once') return 'allowed-once'
  for (const scope of ['session', 'always'] as const) {
    if (SCOPE_OPTIONS[scope].option.optionId === optionId && scopes?.includes(scope) === true) return SCOPE_OPTIONS[scope].answer
  }
  return 'rejected'
}

/**
 * Asks the client with `session/request_permission`: in `full` mode the tool call carries its
 * title, kind, raw input and the file touched; otherwise only its id (AP-4). A cancelled request
 * or outcome is `'cancelled'`; an answer that is not an outcome is an error.
 */
export async function askPermission(peer: JsonRpcPeer, request: PendingApproval, full: boolean, cwd: string | undefined, signal: AbortSignal): Promise<ApprovalAnswer> {
  const toolCall = full ? permissionToolCall(request, cwd) : { toolCallId: request.callId }
  // Recorded mode sends what the original sends: a permission rule's wider grants are not offered.
  const scopes = !full && request.grants !== undefined ? undefined : request.scopes
  const answer = await peer.request('session/request_permission', {
    sessionId: request.sessionId,
    toolCall,
    options: permissionOptions(scopes, request.grants),
  })
  if (signal.aborted) return 'cancelled'
  const parsed = permissionOutcome.safeParse(answer)
  if (!parsed.success) throw new Error(`the client answered session/request_permission with ${JSON.stringify(answer)}`)
  const outcome = parsed.data.outcome
  if (outcome.outcome === 'cancelled') return 'cancelled'
  return permissionAnswer(outcome.optionId, scopes)
}

/**
 * The tool call a `full`-mode permission request shows: title, kind, raw input, the file touched,
 * and (#44.2) the whole command, never cut, with the folder it runs in and what it asks for, as
 * text content (an editor's tool-call title is one line; the content is not).
 */
export function permissionToolCall(request: PendingApproval, cwd: string | undefined) {
  const rawInput = parseArguments(request.arguments ?? '')
  const path = toolPath(request.toolName, rawInput, cwd)
  const command = typeof rawInput === 'object' && rawInput !== null && typeof (rawInput as { command?: unknown }).command === 'string' ? (rawInput as { command: string }).command : undefined
  const folder = request.cwd ?? cwd
  const details = [
    ...(command !== undefined ? [`$ ${command}`] : []),
    ...(command !== undefined && folder !== undefined ? [`in ${folder}`] : []),
    ...(request.reason !== '' ? [request.reason] : []),
    ...(request.askedBy !== undefined ? [`asked by the permission rule ${request.askedBy.text} (${request.askedBy.source})`] : []),
  ]
  return {
    toolCallId: request.callId,
    title: request.reason === '' ? toolTitle(request.toolName, rawInput, cwd) : `${toolTitle(request.toolName, rawInput, cwd)}: ${request.reason}`,
    kind: toolKind(request.toolName),
    rawInput,
    ...(path === undefined ? {} : { locations: [{ path }] }),
    ...(command !== undefined ? { content: [{ type: 'content', content: { type: 'text', text: details.join('\n') } }] } : {}),
  }
}
