/**
 * The web UI's approval and permission methods (docs/web.md). A pending request is in the log
 * (`approval/asked`) and, with the wider grants it offers, in the event stream (`approvals`,
 * server.ts); the page draws a card and `approval.answer` settles it. `permission.get` /
 * `permission.set` are the header's preset picker (AP-5), `permission.setNetwork` its network
 * switch (the network mode of sandboxed commands, `sandbox/network`).
 *
 * - `approval.answer {approvalId, outcome}`: `allowed-once`, `rejected`, or a wider grant the
 *   request offered (`allowed-session`, `allowed-always`); naming one it did not offer is a 400
 *   and the request stays open (the seam would fail it closed).
 * - `permission.get {id}` → `{preset, mode, policy, presets, network, networks}`, or null for a
 *   stored session that is not open (looking never loads it).
 * - `permission.set {id, preset}`, `permission.setNetwork {id, network}` → the same view.
 */
import type { Context } from 'cordis'
import type { ApprovalAnswer, ApprovalScope, ApprovalService, PendingApproval, PresetName } from '../approval/api.js'
import { isNetworkMode, NETWORK_MODES } from '../sandbox/modes.js'
import { WebApiError, type WebMethod } from './api.js'
import { str } from './params.js'
import '../session/api.js'

const SCOPE_OF: Readonly<Record<string, ApprovalScope>> = { 'allowed-session': 'session', 'allowed-always': 'always' }
const OUTCOMES = ['allowed-once', 'allowed-session', 'allowed-always', 'rejected']

export function registerApprovalMethods(ctx: Context, register: (name: string, method: WebMethod) => void): void {
  const waiting = new Map<string, { request: PendingApproval; resolve(answer: ApprovalAnswer): void }>()
  ctx.inject(['approval'], (ctx) => {
    ctx.approval.answerer((request, signal) => new Promise<ApprovalAnswer>(resolve => {
      waiting.set(request.id, { request, resolve })
      signal.addEventListener('abort', () => { waiting.delete(request.id); resolve('cancelled') }, { once: true })
    }))
  })
  const approval = () => {
    const service = ctx.get('approval') as ApprovalService | undefined
    if (service === undefined) throw new WebApiError(501, 'NO_APPROVAL', 'this profile has no approval row')
    return service
  }
  const live = (id: string) => {
    const session = ctx.sessions.get(id)
    if (session === undefined) throw new WebApiError(404, 'NO_SESSION', `no live session "${id}"`)
    return session
  }
  register('approval.answer', params => {
    const id = str(params, 'approvalId')
    const outcome = str(params, 'outcome')
    if (!OUTCOMES.includes(outcome)) throw new WebApiError(400, 'BAD_PARAMS', `"outcome" must be ${OUTCOMES.join(', ')}`)
    const entry = waiting.get(id)
    if (entry === undefined) throw new WebApiError(404, 'NO_APPROVAL', `no pending approval "${id}" (already answered or cancelled)`)
    const scope = SCOPE_OF[outcome]
    if (scope !== undefined && entry.request.scopes?.includes(scope) !== true) {
      throw new WebApiError(400, 'BAD_PARAMS', `approval "${id}" does not offer ${outcome} (it offers ${['allowed-once', ...(entry.request.scopes ?? []).map(s => `allowed-${s}`), 'rejected'].join(', ')})`)
    }
    waiting.delete(id)
    entry.resolve(outcome as ApprovalAnswer)
    return { ok: true }
  })
  const view = (id: string) => {
    const session = live(id)
    const service = approval()
    return {
      preset: service.preset(session), mode: service.mode(session), policy: service.policy(session), presets: service.presets().map(p => p.name),
      network: service.network(session), networks: [...NETWORK_MODES],
    }
  }
  register('permission.get', params => {
    const id = str(params, 'id')
    return ctx.sessions.get(id) === undefined ? null : view(id)
  })
  register('permission.set', params => {
    const id = str(params, 'id')
    const preset = str(params, 'preset')
    const service = approval()
    if (!service.presets().some(p => p.name === preset)) throw new WebApiError(400, 'BAD_PARAMS', `unknown preset "${preset}" (expected ${service.presets().map(p => p.name).join(', ')})`)
    service.selectPreset(live(id), preset as PresetName)
    return view(id)
  })
  register('permission.setNetwork', params => {
    const id = str(params, 'id')
    const network = str(params, 'network')
    const service = approval()
    if (!isNetworkMode(network)) throw new WebApiError(400, 'BAD_PARAMS', `unknown network mode "${network}" (expected ${NETWORK_MODES.join(', ')})`)
    service.setNetwork(live(id), network)
    return view(id)
  })
}
