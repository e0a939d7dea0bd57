/** The texts of the terminal tools' results (docs/pty-terminals.md, "Results"). */
import type { TerminalStatus, WaitReason } from './terminal.js'

export const TRUNCATED = '[output truncated]'

/** The last lines that fit both bounds; `truncated` when some were left out. */
export function boundedTail(lines: readonly string[], maxLines: number, maxBytes: number): { text: string; truncated: boolean } {
  let kept = lines.length > maxLines ? lines.slice(lines.length - maxLines) : [...lines]
  let truncated = kept.length < lines.length
  let text = kept.join('\n')
  if (Buffer.byteLength(text) > maxBytes) {
    truncated = true
    const bytes = Buffer.from(text)
    let start = bytes.length - maxBytes
    // Not in the middle of a UTF-8 sequence.
    while (start < bytes.length && (bytes[start]! & 0xc0) === 0x80) start++
    text = bytes.subarray(start).toString('utf8')
    kept = text.split('\n')
  }
  return { text, truncated }
}

export function statusText(status: TerminalStatus): string {
  if (status.kind === 'running') return 'running'
  return status.signal !== undefined ? `exited (signal ${status.signal})` : `exited (exit code ${status.exitCode})`
}

export function waitLines(reason: WaitReason, status: TerminalStatus, truncated: boolean): string {
  return `[wait: ${reason}]\n[session: ${statusText(status)}]${truncated ? `\n${TRUNCATED}` : ''}`
}

export function label(id: string, name: string | undefined): string {
  return name !== undefined ? `${id} (${name})` : id
}
