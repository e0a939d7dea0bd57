/**
 * A terminal's screen: the PTY's bytes go through a headless terminal emulator (`@xterm/headless`,
 * loaded on first use), so cursor movement, clears and colours end up as the text a person would
 * see. Only characters are kept (attributes are dropped). The emulator keeps `scrollback` lines
 * above the visible rows; older ones are gone for good.
 *
 * Flow control: the emulator parses in slices between event-loop turns. While more than
 * `HIGH_WATER` bytes wait to be parsed, `onPressure(true)` asks the owner to pause the PTY (the
 * program then blocks on its writes); it is resumed below `LOW_WATER`. A flood costs bounded
 * memory and never starves the event loop.
 */
import type { IMarker, Terminal as XTerm } from '@xterm/headless'

const HIGH_WATER = 512 * 1024
const LOW_WATER = 64 * 1024

type XTermClass = new (options: Record<string, unknown>) => XTerm
let loading: Promise<XTermClass> | undefined

/** The emulator class, imported on the first terminal. */
export function loadEmulator(): Promise<XTermClass> {
  loading ??= import('@xterm/headless').then((mod) => {
    const m = mod as unknown as { Terminal?: XTermClass; default?: { Terminal: XTermClass } }
    return (m.Terminal ?? m.default!.Terminal)
  })
  return loading
}

/** A place in the output (the start of a send's answer); it moves with the scrollback. */
export interface Mark {
  readonly marker: IMarker | undefined
  readonly column: number
}

export class Screen {
  private readonly term: XTerm
  private pending = 0
  private paused = false
  /** Bumped when a parsed slice changed the screen (the waits watch it). */
  version = 0
  private readonly parsedListeners = new Set<() => void>()

  constructor(Emulator: XTermClass, cols: number, rows: number, scrollback: number, private readonly onPressure: (pause: boolean) => void) {
    this.term = new Emulator({ cols, rows, scrollback, allowProposedApi: true, convertEol: false })
  }

  /** Feeds PTY output; the screen changes once the emulator parsed it. */
  write(data: string): void {
    this.pending += data.length
    if (!this.paused && this.pending > HIGH_WATER) {
      this.paused = true
      this.onPressure(true)
    }
    this.term.write(data, () => {
      this.pending -= data.length
      this.version++
      if (this.paused && this.pending < LOW_WATER) {
        this.paused = false
        this.onPressure(false)
      }
      for (const listener of this.parsedListeners) listener()
    })
  }

  /** Resolves once everything written so far is parsed. */
  settled(): Promise<void> {
    return new Promise(resolve => this.term.write('', resolve))
  }

  onParsed(listener: () => void): () => void {
    this.parsedListeners.add(listener)
    return () => { this.parsedListeners.delete(listener) }
  }

  /** Marks where the cursor is now. */
  mark(): Mark {
    return { marker: this.term.registerMarker(0), column: this.term.buffer.active.cursorX }
  }

  /**
   * The logical lines (wrapped rows joined) from the first row of the buffer, or from `from`, to
   * the cursor's row; trailing blanks are trimmed except on the cursor's row up to the cursor
   * (a prompt's space stays). Rows below the cursor that hold text are kept too.
   */
  lines(from?: Mark): string[] {
    const buffer = this.term.buffer.active
    const cursorRow = buffer.baseY + buffer.cursorY
    let last = cursorRow
    for (let row = buffer.length - 1; row > cursorRow; row--) {
      if ((buffer.getLine(row)?.translateToString(true) ?? '') !== '') { last = row; break }
    }
    let first = 0
    let firstColumn = 0
    if (from !== undefined) {
      if (from.marker !== undefined && !from.marker.isDisposed && from.marker.line >= 0) {
        first = from.marker.line
        firstColumn = from.column
      }
    }
    const out: string[] = []
    for (let row = first; row <= last; row++) {
      const line = buffer.getLine(row)
      if (line === undefined) continue
      const start = row === first ? firstColumn : 0
      const text = row === cursorRow && buffer.cursorX > 0
        ? line.translateToString(false, start, Math.max(start, buffer.cursorX)) + line.translateToString(true, Math.max(start, buffer.cursorX))
        : line.translateToString(true, start)
      if (line.isWrapped && out.length > 0 && row !== first) out[out.length - 1] += text
      else out.push(text)
    }
    // A cleared screen leaves blank rows above the cursor's: they carry nothing.
    while (out.length > 1 && out[0] === '' && from === undefined) out.shift()
    return out
  }

  dispose(): void {
    this.parsedListeners.clear()
    this.term.dispose()
  }
}
