/**
 * Images in the composer and the conversation. The composer collects images from paste, drag and
 * drop and a file picker (thumbnails with a remove button); they are sent with the prompt as
 * base64 and stored by the server with the session. The conversation shows a message's images
 * from `GET /api/attachment` (stored ones) or their inline data.
 */
import { useCallback, useEffect, useRef, useState, type ClipboardEvent, type DragEvent } from 'react'
import type { MessageImage } from './fold'
import './attachments.css'

/** What the server accepts (docs/web.md). */
export const IMAGE_TYPES = ['image/png', 'image/jpeg', 'image/gif', 'image/webp']
export const MAX_IMAGE_BYTES = 10 * 1024 * 1024
export const MAX_IMAGES = 8

export interface PendingImage {
  readonly key: string
  readonly name: string
  readonly mediaType: string
  /** Base64 without the `data:` prefix. */
  readonly data: string
  /** Object URL of the file, for the thumbnail. */
  readonly url: string
  readonly bytes: number
}

/** The `images` parameter of `prompt` / `steer`. */
export function imageParams(images: readonly PendingImage[]): { data: string; mediaType: string; name: string }[] {
  return images.map(image => ({ data: image.data, mediaType: image.mediaType, name: image.name }))
}

/** Retry of a prompt with images: its stored images again, by attachment id. */
export function retryImages(ids: readonly string[] | undefined): { images?: { attachmentId: string }[] } {
  return ids && ids.length > 0 ? { images: ids.map(attachmentId => ({ attachmentId })) } : {}
}

function readBase64(file: File): Promise<string> {
  return new Promise((resolve, reject) => {
    const reader = new FileReader()
    reader.onload = () => resolve(String(reader.result).replace(/^data:[^,]*,/, ''))
    reader.onerror = () => reject(reader.error ?? new Error(`cannot read ${file.name}`))
    reader.readAsDataURL(file)
  })
}

function sizeText(bytes: number): string {
  return bytes >= 1024 * 1024 ? `${(bytes / 1024 / 1024).toFixed(1)} MB` : `${Math.max(1, Math.round(bytes / 1024))} KB`
}

let counter = 0

export interface ImageAttachments {
  readonly images: readonly PendingImage[]
  readonly error: string
  readonly dragging: boolean
  add(files: Iterable<File>): Promise<void>
  remove(key: string): void
  /** Forgets every image (after a successful send). */
  clear(): void
  onPaste(event: ClipboardEvent<HTMLElement>): void
  readonly dropProps: {
    onDragOver(event: DragEvent<HTMLElement>): void
    onDragLeave(event: DragEvent<HTMLElement>): void
    onDrop(event: DragEvent<HTMLElement>): void
  }
}

/** The composer's images: add from files, remove, and the paste and drop handlers. */
export function useImageAttachments(): ImageAttachments {
  const [images, setImages] = useState<PendingImage[]>([])
  const [error, setError] = useState('')
  const [dragging, setDragging] = useState(false)
  const latest = useRef(images)
  latest.current = images
  useEffect(() => () => { for (const image of latest.current) URL.revokeObjectURL(image.url) }, [])

  const add = useCallback(async (files: Iterable<File>) => {
    const problems: string[] = []
    const added: PendingImage[] = []
    for (const file of files) {
      const name = file.name || 'pasted image'
      if (!IMAGE_TYPES.includes(file.type)) { problems.push(`${name} is not a PNG, JPEG, GIF or WebP image`); continue }
      if (file.size > MAX_IMAGE_BYTES) { problems.push(`${name} is ${sizeText(file.size)}; at most ${sizeText(MAX_IMAGE_BYTES)} per image`); continue }
      if (latest.current.length + added.length >= MAX_IMAGES) { problems.push(`at most ${MAX_IMAGES} images per message`); break }
      try {
        added.push({ key: `img-${++counter}`, name, mediaType: file.type, data: await readBase64(file), url: URL.createObjectURL(file), bytes: file.size })
      } catch (caught) {
        problems.push((caught as Error).message)
      }
    }
    setError(problems.join('; '))
    if (added.length > 0) setImages(list => [...list, ...added])
  }, [])

  const remove = useCallback((key: string) => {
    setImages(list => {
      const gone = list.find(image => image.key === key)
      if (gone) URL.revokeObjectURL(gone.url)
      return list.filter(image => image.key !== key)
    })
    setError('')
  }, [])

  const clear = useCallback(() => {
    for (const image of latest.current) URL.revokeObjectURL(image.url)
    setImages([])
    setError('')
  }, [])

  const onPaste = useCallback((event: ClipboardEvent<HTMLElement>) => {
    const files = [...event.clipboardData.items].filter(item => item.kind === 'file').map(item => item.getAsFile()).filter((file): file is File => file !== null)
    if (files.length === 0) return
    // Pasted files are attached; pasted text goes into the text area as usual (a copied picture
    // from a web page brings both: the text is kept and the image attached).
    if (!event.clipboardData.types.includes('text/plain')) event.preventDefault()
    void add(files)
  }, [add])

  const hasFiles = (event: DragEvent<HTMLElement>) => [...event.dataTransfer.types].includes('Files')
  const dropProps = {
    onDragOver(event: DragEvent<HTMLElement>) {
      if (!hasFiles(event)) return
      event.preventDefault()
      event.dataTransfer.dropEffect = 'copy'
      setDragging(true)
    },
    onDragLeave(event: DragEvent<HTMLElement>) {
      if (event.currentTarget.contains(event.relatedTarget as Node | null)) return
      setDragging(false)
    },
    onDrop(event: DragEvent<HTMLElement>) {
      setDragging(false)
      if (event.dataTransfer.files.length === 0) return
      event.preventDefault()
      void add(event.dataTransfer.files)
    },
  }
  return { images, error, dragging, add, remove, clear, onPaste, dropProps }
}

/** Thumbnails of the composer's images, each with a remove button; and the last problem. */
export function AttachmentTray({ attachments }: { attachments: ImageAttachments }) {
  if (attachments.images.length === 0 && attachments.error === '') return null
  return (
    <div className="attachment-tray" data-testid="attachment-tray">
      {attachments.images.map(image => (
        <figure className="attachment-thumb" key={image.key} data-testid="attachment-thumb" title={`${image.name} · ${sizeText(image.bytes)}`}>
          <img src={image.url} alt={image.name} />
          <button type="button" className="attachment-remove" aria-label={`Remove ${image.name}`} onClick={() => attachments.remove(image.key)} data-testid="attachment-remove">×</button>
        </figure>
      ))}
      {attachments.error ? <div className="attachment-error" role="alert" data-testid="attachment-error">{attachments.error}</div> : null}
    </div>
  )
}

/** The composer's "attach images" button and its hidden file input. */
export function AttachButton({ attachments }: { attachments: ImageAttachments }) {
  const input = useRef<HTMLInputElement>(null)
  return (
    <>
      <input ref={input} type="file" accept={IMAGE_TYPES.join(',')} multiple hidden data-testid="attach-input"
        onChange={event => { const files = [...event.target.files ?? []]; event.target.value = ''; void attachments.add(files) }} />
      <button type="button" className="icon-button attach-button" aria-label="Attach images" title="Attach images (or paste, or drop them here)"
        onClick={() => input.current?.click()} data-testid="attach">
        <svg viewBox="0 0 24 24" width="18" height="18" aria-hidden="true"><path fill="currentColor" d="M16.5 6.5v10.1a4.5 4.5 0 0 1-9 0V5.8a3 3 0 0 1 6 0v9.8a1.5 1.5 0 0 1-3 0V6.5H9v9.1a3 3 0 0 0 6 0V5.8a4.5 4.5 0 0 0-9 0v10.8a6 6 0 0 0 12 0V6.5z" /></svg>
      </button>
    </>
  )
}

/** The URL of a message image: the stored attachment, or its inline data. */
export function imageUrl(sessionId: string, image: MessageImage): string {
  if (image.data !== undefined) return `data:${image.mediaType};base64,${image.data}`
  return `/api/attachment?${new URLSearchParams({ session: sessionId, id: image.attachmentId ?? '' })}`
}

/** A message's images, shown as a row of thumbnails that open the full image. */
export function MessageImages({ sessionId, images }: { sessionId: string; images: readonly MessageImage[] }) {
  return (
    <div className="message-images">
      {images.map((image, index) => {
        const url = imageUrl(sessionId, image)
        const label = image.name ?? `image ${index + 1}`
        return (
          <a key={`${image.attachmentId ?? 'inline'}-${index}`} href={url} target="_blank" rel="noreferrer" className="message-image" title={label}>
            <img src={url} alt={label} loading="lazy" data-testid="message-image"
              {...image.width && image.height ? { width: image.width, height: image.height } : {}} />
          </a>
        )
      })}
    </div>
  )
}
