/**
 * Session attachments: images kept with a session and referenced from its log by content hash.
 *
 * A user message carries `{type: 'image', attachment: {attachmentId: 'sha256:<hex>', mediaType,
 * width, height, bytes}}` instead of inline base64, so the log stays small and one image stored
 * once may be referenced many times. The bytes live in an `AttachmentStore`: in memory by
 * default, the persistence backend's store when one is loaded (JSONL: files next to the log,
 * SQLite/PostgreSQL: a table), so they survive restarts and go to the trash with the session.
 *
 * Content addressing makes the model request a pure function of the log (A-11): the id names
 * exactly one byte string, and adapters read it back when they serialise the request.
 */
import { createHash } from 'node:crypto'
import type { AttachedImageBlock } from '../llm/types.js'
import type { SessionHeader } from './types.js'

export type AttachmentRef = AttachedImageBlock['attachment']

export interface StoredAttachment {
  readonly data: Uint8Array
  readonly mediaType: string
}

/** Where attachment bytes are kept, per session. Backends implement it to make them durable. */
export interface AttachmentStore {
  /** Stores `attachment` under `attachmentId` for the session (idempotent: same id, same bytes). */
  put(header: SessionHeader, attachmentId: string, attachment: StoredAttachment): Promise<void>
  get(sessionId: string, attachmentId: string): Promise<StoredAttachment | undefined>
}

/** Image types every image-capable route takes. */
export const IMAGE_MEDIA_TYPES: readonly string[] = ['image/png', 'image/jpeg', 'image/gif', 'image/webp']
/** Largest image accepted (bytes). */
export const MAX_IMAGE_BYTES = 10 * 1024 * 1024

/** A bad attachment (not an image of a supported type, too large...); the message is one line. */
export class AttachmentError extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'AttachmentError'
  }
}

/** `sha256:<hex>` of the bytes. */
export function attachmentIdOf(data: Uint8Array): string {
  return `sha256:${createHash('sha256').update(data).digest('hex')}`
}

const ATTACHMENT_ID = /^sha256:[0-9a-f]{64}$/

export function isAttachmentId(id: string): boolean {
  return ATTACHMENT_ID.test(id)
}

/** The image type and size read from the file's own header; undefined when it is none of ours. */
export function sniffImage(data: Uint8Array): { mediaType: string; width: number; height: number } | undefined {
  const b = data
  const u16be = (i: number) => (b[i]! << 8) | b[i + 1]!
  const u16le = (i: number) => b[i]! | (b[i + 1]! << 8)
  const u24le = (i: number) => b[i]! | (b[i + 1]! << 8) | (b[i + 2]! << 16)
  const u32be = (i: number) => ((b[i]! << 24) >>> 0) + ((b[i + 1]! << 16) | (b[i + 2]! << 8) | b[i + 3]!)
  const ascii = (i: number, n: number) => String.fromCharCode(...b.subarray(i, i + n))
  if (b.length >= 24 && b[0] === 0x89 && ascii(1, 3) === 'PNG' && ascii(12, 4) === 'IHDR') {
    return { mediaType: 'image/png', width: u32be(16), height: u32be(20) }
  }
  if (b.length >= 10 && (ascii(0, 6) === 'GIF87a' || ascii(0, 6) === 'GIF89a')) {
    return { mediaType: 'image/gif', width: u16le(6), height: u16le(8) }
  }
  if (b.length >= 30 && ascii(0, 4) === 'RIFF' && ascii(8, 4) === 'WEBP') {
    const kind = ascii(12, 4)
    if (kind === 'VP8 ' && b.length >= 30) return { mediaType: 'image/webp', width: u16le(26) & 0x3fff, height: u16le(28) & 0x3fff }
    if (kind === 'VP8L' && b.length >= 25) {
      const bits = b[21]! | (b[22]! << 8) | (b[23]! << 16) | (b[24]! << 24)
      return { mediaType: 'image/webp', width: (bits & 0x3fff) + 1, height: ((bits >>> 14) & 0x3fff) + 1 }
    }
    if (kind === 'VP8X') return { mediaType: 'image/webp', width: u24le(24) + 1, height: u24le(27) + 1 }
    return undefined
  }
  if (b.length >= 4 && b[0] === 0xff && b[1] === 0xd8) {
    // JPEG: walk the segments to the first start-of-frame marker.
    let i = 2
    while (i + 9 < b.length) {
      if (b[i] !== 0xff) return undefined
      const marker = b[i + 1]!
      if (marker === 0xff) { i++; continue }
      const length = u16be(i + 2)
      const sof = marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc
      if (sof) return { mediaType: 'image/jpeg', width: u16be(i + 7), height: u16be(i + 5) }
      i += 2 + length
    }
    return undefined
  }
  return undefined
}

/**
 * Checks an image and describes it as an attachment reference. The type is read from the bytes;
 * a declared `mediaType` that disagrees is refused (a `.png` name on a JPEG is fine, a claim in
 * the request that it is a PNG is not).
 */
export function describeImage(data: Uint8Array, declared?: string, name?: string): AttachmentRef {
  if (data.length === 0) throw new AttachmentError('the image is empty')
  if (data.length > MAX_IMAGE_BYTES) throw new AttachmentError(`the image is ${data.length} bytes; at most ${MAX_IMAGE_BYTES} bytes are accepted`)
  const sniffed = sniffImage(data)
  if (sniffed === undefined) throw new AttachmentError(`${name !== undefined ? `"${name}" is` : 'the data is'} not a PNG, JPEG, GIF or WebP image`)
  if (declared !== undefined && declared !== '' && declared.toLowerCase() !== sniffed.mediaType) {
    throw new AttachmentError(`the image was declared ${declared} but its bytes are ${sniffed.mediaType}`)
  }
  const attachmentId = attachmentIdOf(data)
  const { mediaType, width, height } = sniffed
  // Key order as the recorded logs have it: a named image (a file the model read) gives its size
  // first, an unnamed one (a prompt's) last.
  return name !== undefined && name !== ''
    ? { attachmentId, mediaType, bytes: data.length, width, height, name: name.slice(0, 200) }
    : { attachmentId, mediaType, width, height, bytes: data.length }
}

/** The default store: bytes in memory, per session; gone with the process. */
export class MemoryAttachmentStore implements AttachmentStore {
  private readonly bySession = new Map<string, Map<string, StoredAttachment>>()

  async put(header: SessionHeader, attachmentId: string, attachment: StoredAttachment): Promise<void> {
    let map = this.bySession.get(header.id)
    if (map === undefined) this.bySession.set(header.id, map = new Map())
    map.set(attachmentId, { data: Uint8Array.from(attachment.data), mediaType: attachment.mediaType })
  }

  async get(sessionId: string, attachmentId: string): Promise<StoredAttachment | undefined> {
    return this.bySession.get(sessionId)?.get(attachmentId)
  }

  drop(sessionId: string): void {
    this.bySession.delete(sessionId)
  }
}

/** Every attachment id a list of blocks references (user images and tool-result images). */
export function referencedAttachments(content: readonly unknown[]): string[] {
  const ids: string[] = []
  for (const block of content as { type?: string; attachment?: { attachmentId?: unknown }; content?: unknown[] }[]) {
    if (block?.type === 'image' && typeof block.attachment?.attachmentId === 'string') ids.push(block.attachment.attachmentId)
    else if (block?.type === 'tool-result' && Array.isArray(block.content)) ids.push(...referencedAttachments(block.content))
  }
  return ids
}
