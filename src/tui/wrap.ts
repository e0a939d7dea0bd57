/**
 * Word wrap for the terminal app's prose, done before Ink sees the text. Ink wraps with
 * `wrap-ansi` keeping whitespace (`trim: false`), so a row that a word filled exactly starts the
 * next row with the space after it: a stray indent in every paragraph now and then. Here the space
 * a row breaks at is dropped, rows are cut to `width` display columns (wide characters count two),
 * a word wider than a row is cut by grapheme, and a line's own leading spaces (indentation) stay.
 * Every row then fits, so Ink's own pass leaves it as it is.
 */
import { displayWidth } from './width.js'
import { withoutSequences } from '../host/terminal-text.js'

/** A row of the wrapped text: the source range `[start, end)` it shows. */
export type Row = readonly [start: number, end: number]

let graphemes: Intl.Segmenter | undefined

/** The source rows of `text` in `width` columns: its own line breaks, and breaks between words. */
export function wrapRows(text: string, width: number): Row[] {
  const rows: Row[] = []
  let lineStart = 0
  while (true) {
    const newline = text.indexOf('\n', lineStart)
    const lineEnd = newline < 0 ? text.length : newline
    wrapLine(text, lineStart, lineEnd, width, rows)
    if (newline < 0) return rows
    lineStart = newline + 1
  }
}

/** `text` with line breaks where `wrapRows` breaks it. */
export function wrapText(text: string, width: number): string {
  return wrapRows(text, width).map(([start, end]) => text.slice(start, end)).join('\n')
}

function wrapLine(text: string, start: number, end: number, width: number, rows: Row[]): void {
  if (width < 1 || displayWidth(text.slice(start, end)) <= width) {
    rows.push([start, end])
    return
  }
  let rowStart = start
  let rowWidth = 0
  /** Ends the open row before `at`, without the spaces it ended on. */
  const close = (at: number) => {
    let last = at
    while (last > rowStart && text[last - 1] === ' ') last--
    rows.push([rowStart, last])
  }
  /** Cuts the word `[at, next)` by grapheme into the open row and as many rows after it as it needs. */
  const cut = (at: number, next: number) => {
    graphemes ??= new Intl.Segmenter()
    for (const { segment, index } of graphemes.segment(text.slice(at, next))) {
      const cell = displayWidth(segment)
      if (rowWidth + cell > width && rowWidth > 0) {
        rows.push([rowStart, at + index])
        rowStart = at + index
        rowWidth = 0
      }
      rowWidth += cell
    }
  }
  let at = start
  while (at < end) {
    const space = text[at] === ' '
    let next = at
    while (next < end && (text[next] === ' ') === space) next++
    const runWidth = space ? next - at : displayWidth(text.slice(at, next))
    if (rowWidth + runWidth <= width) {
      rowWidth += runWidth
    } else if (space) {
      // The row breaks at these spaces: they end it, and the next row starts after them.
      close(at)
      rowStart = next
      rowWidth = 0
    } else if (runWidth <= width || longWordStartsNextRow(runWidth, width - rowWidth, width)) {
      if (rowWidth > 0) {
        close(at)
        rowStart = at
        rowWidth = 0
      }
      if (runWidth <= width) rowWidth = runWidth
      else cut(at, next)
    } else {
      cut(at, next)
    }
    at = next
  }
  if (rowStart < end) close(end)
}

/** A word wider than a row starts the next row only when that saves a break (as a terminal wraps). */
function longWordStartsNextRow(wordWidth: number, room: number, width: number): boolean {
  const fromHere = 1 + Math.floor((wordWidth - room - 1) / width)
  const fromNext = Math.floor((wordWidth - 1) / width)
  return fromNext < fromHere
}

/**
 * A line of command output as a terminal would leave it: what follows the last carriage return
 * (a progress bar redrawn in place), without its escape sequences (colours, cursor moves, titles,
 * clipboard writes), which would move Ink's drawing or act on the terminal; any other control
 * or bidirectional character shows as a visible stand-in (src/host/terminal-text.ts).
 */
export function terminalLine(text: string): string {
  const line = text.replace(/\r+$/, '')
  return withoutSequences(line.slice(line.lastIndexOf('\r') + 1))
}
