/**
 * While the conversation screen is drawn, anything written to stderr (an MCP server failing, a
 * hook file rejected, a Node warning, `console.error` through Ink's console patch) would land in
 * the middle of Ink's frame and shift every later redraw. The app routes such writes, a line at a
 * time, into the conversation as notices instead, and puts the stream back when it closes.
 */
import { terminalLine } from './wrap.js'

type Write = NodeJS.WriteStream['write']

export function routeStderr(stream: NodeJS.WriteStream, onLine: (line: string) => void): () => void {
  const original = stream.write
  let partial = ''
  const routed = function (chunk: string | Uint8Array, encoding?: BufferEncoding | ((error?: Error | null) => void), callback?: (error?: Error | null) => void): boolean {
    const text = typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString(typeof encoding === 'string' ? encoding : 'utf8')
    const lines = (partial + text).split('\n')
    partial = lines.pop() ?? ''
    for (const line of lines) {
      const clean = terminalLine(line).trimEnd()
      if (clean.trim() !== '') onLine(clean)
    }
    const done = typeof encoding === 'function' ? encoding : callback
    if (done !== undefined) queueMicrotask(() => done(null))
    return true
  }
  stream.write = routed as Write
  return () => {
    if (stream.write === routed) stream.write = original
    // A last line without its newline goes to the real stream, after the screen.
    if (partial !== '') original.call(stream, `${partial}\n`)
    partial = ''
  }
}
