/**
 * Moving a session between homes: the export file and its strict reader.
 *
 * A log without image references exports as the JSONL log itself (header line, one event per
 * line, unpacked). A log with images names bytes the recipient does not have, so it exports as
 * one JSON document (docs/session-format.md, "Export files"):
 *
 *   {"format": "dsh-session-export", "version": 1, "log": "<the JSONL>",
 *    "attachments": [{"attachmentId": "sha256:…", "mediaType": "image/png", "data": "<base64>"}],
 *    "missingAttachments": ["sha256:…"]}
 *
 * Reading is strict: every line must decode as a stored line would, seqs contiguous from 0,
 * and every attachment's bytes must hash to its id; a bad file is refused whole, naming the
 * line or the attachment.
 */
import { SessionFileError, encodeHeader, parseSessionFile } from '../session/codec.js'
import { IMAGE_MEDIA_TYPES, attachmentIdOf, isAttachmentId, referencedAttachments, type StoredAttachment } from '../session/attachments.js'
import type { UserMessage } from '../llm/types.js'
import type { SessionEvent, SessionHeader } from '../session/types.js'
import { isPlainObject } from '../session/validators.js'
import { PersistenceError } from './api.js'
import { encodeEvent } from './records.js'

export const EXPORT_FORMAT = 'dsh-session-export'
export const EXPORT_VERSION = 1

export interface ExchangedAttachment {
  readonly attachmentId: string
  readonly mediaType: string
  readonly data: Uint8Array
}

/** A session as it travels: its log and the bytes of the images the log references. */
export interface SessionExchange {
  readonly header: SessionHeader
  readonly events: readonly SessionEvent[]
  readonly attachments: readonly ExchangedAttachment[]
  /** Referenced images whose bytes the exporting store no longer had. */
  readonly missing: readonly string[]
}

/** A file that is not a session export; the message names what and where. */
export class ImportError extends PersistenceError {}

/**
 * Attachment ids referenced by user messages, tool results and messages queued in the agent
 * inbox (`agent/inbox/spliced`: sent while the agent was busy, delivered when the session goes
 * on), in order of first use, once each.
 */
export function loggedAttachments(events: readonly SessionEvent[]): string[] {
  const ids = new Set<string>()
  const add = (content: unknown) => {
    if (Array.isArray(content)) for (const id of referencedAttachments(content)) if (isAttachmentId(id)) ids.add(id)
  }
  for (const event of events) {
    if (event.type === 'user/message') add((event.data as UserMessage).content)
    else if (event.type === 'tool/result') add((event.data as { message?: UserMessage }).message?.content)
    else if (event.type === 'agent/inbox/spliced') for (const message of (event.data as { inserted?: UserMessage[] }).inserted ?? []) add(message?.content)
  }
  return [...ids]
}

/** The JSONL text of a log: header line, then one unpacked event per line. */
export function exchangeLog(header: SessionHeader, events: readonly SessionEvent[]): string {
  const lines = [encodeHeader(header)]
  for (const event of events) lines.push(encodeEvent(event))
  return `${lines.join('\n')}\n`
}

/** The export file of a session: `<id>.jsonl` without images, else `<id>.dsh-export.json`. */
export function encodeSessionExport(exchange: SessionExchange): { filename: string; text: string } {
  const log = exchangeLog(exchange.header, exchange.events)
  if (exchange.attachments.length === 0 && exchange.missing.length === 0) return { filename: `${exchange.header.id}.jsonl`, text: log }
  const document = {
    format: EXPORT_FORMAT,
    version: EXPORT_VERSION,
    log,
    attachments: exchange.attachments.map(a => ({ attachmentId: a.attachmentId, mediaType: a.mediaType, data: Buffer.from(a.data).toString('base64') })),
    ...(exchange.missing.length > 0 ? { missingAttachments: exchange.missing } : {}),
  }
  return { filename: `${exchange.header.id}.dsh-export.json`, text: `${JSON.stringify(document)}\n` }
}

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/

/**
 * Reads an export file: a JSONL log, or the JSON document with attachments. Refuses anything
 * else with an `ImportError` naming the problem (a line number for the log).
 */
export function parseSessionExport(text: string): SessionExchange {
  const trimmed = text.trimStart()
  if (trimmed === '') throw new ImportError('the file is empty: expected a session log (JSONL) or a dsh session export')
  let log = text
  const attachments: ExchangedAttachment[] = []
  if (trimmed.startsWith('{') && !looksLikeJsonl(trimmed)) {
    let document: unknown
    try {
      document = JSON.parse(trimmed)
    } catch (error) {
      throw new ImportError(`not a session export: ${error instanceof Error ? error.message : String(error)}`)
    }
    if (!isPlainObject(document) || document.format !== EXPORT_FORMAT) throw new ImportError(`not a session export: expected {"format": "${EXPORT_FORMAT}", ...} or a JSONL session log`)
    if (document.version !== EXPORT_VERSION) throw new ImportError(`session export version ${JSON.stringify(document.version)} is not supported (this dsh reads version ${EXPORT_VERSION})`)
    if (typeof document.log !== 'string') throw new ImportError('session export: "log" must be the JSONL text of the session')
    log = document.log
    const listed = document.attachments ?? []
    if (!Array.isArray(listed)) throw new ImportError('session export: "attachments" must be a list')
    listed.forEach((entry: unknown, index) => attachments.push(readAttachment(entry, index)))
    const listedMissing = document.missingAttachments ?? []
    if (!Array.isArray(listedMissing) || !listedMissing.every(id => typeof id === 'string' && isAttachmentId(id))) throw new ImportError('session export: "missingAttachments" must be a list of attachment ids')
  }
  let parsed
  try {
    parsed = parseSessionFile(log)
  } catch (error) {
    if (error instanceof SessionFileError) throw new ImportError(`not a valid session log: ${error.message}`)
    throw new ImportError(`not a valid session log: ${error instanceof Error ? error.message : String(error)}`)
  }
  const referenced = new Set(loggedAttachments(parsed.events))
  const carried = new Set(attachments.map(a => a.attachmentId))
  for (const a of attachments) {
    if (!referenced.has(a.attachmentId)) throw new ImportError(`session export: attachment ${a.attachmentId} is not referenced by the log`)
  }
  // Images the file does not carry are reported, not refused: the log is the record.
  const absent = [...referenced].filter(id => !carried.has(id))
  return { header: parsed.header, events: parsed.events, attachments, missing: absent }
}

/** A JSONL log starts with its header object on a line of its own, then more lines. */
function looksLikeJsonl(text: string): boolean {
  const newline = text.indexOf('\n')
  if (newline < 0) return false
  try {
    const first: unknown = JSON.parse(text.slice(0, newline))
    return isPlainObject(first) && first.format !== EXPORT_FORMAT
  } catch {
    return false
  }
}

function readAttachment(entry: unknown, index: number): ExchangedAttachment {
  const where = `session export: attachment ${index + 1}`
  if (!isPlainObject(entry)) throw new ImportError(`${where} is not an object`)
  const { attachmentId, mediaType, data } = entry
  if (typeof attachmentId !== 'string' || !isAttachmentId(attachmentId)) throw new ImportError(`${where}: "attachmentId" must be sha256:<64 hex digits>`)
  if (typeof mediaType !== 'string' || !IMAGE_MEDIA_TYPES.includes(mediaType)) throw new ImportError(`${where}: media type ${JSON.stringify(mediaType)} is not one of ${IMAGE_MEDIA_TYPES.join(', ')}`)
  if (typeof data !== 'string' || !BASE64.test(data)) throw new ImportError(`${where}: "data" must be base64`)
  const bytes = new Uint8Array(Buffer.from(data, 'base64'))
  if (attachmentIdOf(bytes) !== attachmentId) throw new ImportError(`${where}: its bytes do not hash to ${attachmentId} (damaged in transit?)`)
  return { attachmentId, mediaType, data: bytes }
}

/** The images a log references, read through `read`; the ones not found are named in `missing`. */
export async function gatherAttachments(events: readonly SessionEvent[], read: (attachmentId: string) => Promise<StoredAttachment | undefined>): Promise<{ attachments: ExchangedAttachment[]; missing: string[] }> {
  const attachments: ExchangedAttachment[] = []
  const missing: string[] = []
  for (const attachmentId of loggedAttachments(events)) {
    const found = await read(attachmentId)
    if (found === undefined) missing.push(attachmentId)
    else attachments.push({ attachmentId, mediaType: found.mediaType, data: found.data })
  }
  return { attachments, missing }
}
