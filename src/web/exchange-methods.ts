/**
 * Export and import of a session in the web UI (docs/web.md, "Export"): the same file as
 * `dsh sessions export` / `import` (persistence/exchange.ts), images included.
 */
import type { Context } from 'cordis'
import { SessionExistsError, SessionNotStoredError } from '../persistence/api.js'
import { ImportError, exchangeLog, parseSessionExport } from '../persistence/exchange.js'
import { WebApiError, type WebMethod } from './api.js'
import { str } from './params.js'
import '../persistence/api.js'

export interface ExchangeHost {
  readonly root: Context
  /** The folder an imported session gets (the launch folder). */
  cwd(): string
  /** An imported session's summary. */
  view(id: string): Promise<{ summary: unknown }>
}

export function registerExchangeMethods(host: ExchangeHost, add: (name: string, method: WebMethod) => void): void {
  const { root } = host
  add('sessions.export', async params => {
    const id = str(params, 'id')
    // The same log and images as `dsh sessions export` (persistence/exchange.ts).
    let exchange
    try {
      exchange = await root.sessionPersistence.exportSession(id)
    } catch (error) {
      if (error instanceof SessionNotStoredError) throw new WebApiError(404, 'NO_SESSION', `no session "${id}"`)
      throw error
    }
    const exported = { filename: `${exchange.header.id}.jsonl`, jsonl: exchangeLog(exchange.header, exchange.events) }
    // A log with images also carries their bytes (docs/web.md, "Export"); without, it is the log alone.
    if (exchange.attachments.length === 0 && exchange.missing.length === 0) return exported
    const attachments = exchange.attachments.map(a => ({ attachmentId: a.attachmentId, mediaType: a.mediaType, data: Buffer.from(a.data).toString('base64') }))
    return { ...exported, attachments, ...(exchange.missing.length > 0 ? { missingAttachments: exchange.missing } : {}) }
  })

  // Import (docs/web.md): a file another home exported (`dsh sessions export`, the Export button).
  add('sessions.import', async params => {
    let exchange
    try {
      exchange = parseSessionExport(str(params, 'text'))
    } catch (error) {
      if (error instanceof ImportError) throw new WebApiError(400, 'BAD_IMPORT', error.message)
      throw error
    }
    try {
      // The file's folder and permission knobs are never kept: the launch folder and this home's defaults apply.
      const result = await root.sessionPersistence.importSession(exchange, { newId: params.newId === true, cwd: host.cwd() })
      return { ...result, session: (await host.view(result.id)).summary }
    } catch (error) {
      if (error instanceof SessionExistsError) throw new WebApiError(409, 'EXISTS', error.message)
      if (error instanceof ImportError) throw new WebApiError(400, 'BAD_IMPORT', error.message)
      throw error
    }
  })
}
