/**
 * Live progress for a terminal: one status line on stderr with the current turn, step and tool,
 * redrawn in place. Only used when stderr is a TTY, so piped output stays clean.
 */
import type { SessionEvent } from '../session/types.js'
import { terminalSafe } from '../host/terminal-text.js'

const FRAMES = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏']
const TICK_MS = 100

export class Progress {
  private step = 0
  private turn = 0
  private activity = 'starting'
  private frame = 0
  private readonly timer: NodeJS.Timeout

  constructor(private readonly out: NodeJS.WritableStream) {
    this.timer = setInterval(() => this.draw(), TICK_MS)
    this.timer.unref()
  }

  observe(event: SessionEvent): void {
    const data = event.data as { turn?: number; step?: number; name?: string; chunk?: { type: string } }
    if (event.type === 'step/start') {
      this.turn = data.turn ?? this.turn
      this.step = data.step ?? this.step
      this.activity = 'waiting for the model'
    } else if (event.type === 'assistant/chunk' && data.chunk?.type.endsWith('delta')) {
      this.activity = data.chunk.type === 'reasoning-delta' ? 'thinking' : data.chunk.type === 'tool-call-delta' ? 'writing a tool call' : 'writing'
    } else if (event.type === 'tool/call') {
      // The tool's name comes from the model: made safe for the terminal (security #42.6).
      this.activity = `running ${terminalSafe(String(data.name)).replace(/\s+/g, ' ')}`
    } else if (event.type === 'llm/retry') {
      this.activity = 'retrying the model request'
    }
  }

  private draw(): void {
    this.frame = (this.frame + 1) % FRAMES.length
    this.out.write(`\r\x1b[2K${FRAMES[this.frame]} turn ${this.turn} · step ${this.step} · ${this.activity}`)
  }

  done(): void {
    clearInterval(this.timer)
    this.out.write('\r\x1b[2K')
  }
}
