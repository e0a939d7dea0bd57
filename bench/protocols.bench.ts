/**
 * Protocol framing benchmark (prints numbers, never pass/fail):
 *   npx tsx bench/protocols.bench.ts
 * - LineSplitter over many small frames arriving in 64 KiB pieces (frames/s, MB/s);
 * - one 16 MiB frame (an inline image) arriving in 64 KiB pieces: each piece is scanned once,
 *   so the time should be close to a single pass over the bytes;
 * - a JsonRpcPeer writing `session.event`-sized notifications to a sink (frames/s).
 */
import { PassThrough, Writable } from 'node:stream'
import { JsonRpcPeer, LineSplitter } from '../src/sdk/jsonrpc.js'

const PIECE = 64 * 1024

function pieces(text: string): string[] {
  const out: string[] = []
  for (let at = 0; at < text.length; at += PIECE) out.push(text.slice(at, at + PIECE))
  return out
}

function timeSplit(label: string, text: string, frames: number): void {
  const input = pieces(text)
  const start = performance.now()
  const splitter = new LineSplitter()
  let count = 0
  for (const piece of input) count += splitter.push(piece).length
  const ms = performance.now() - start
  if (count !== frames) throw new Error(`${label}: expected ${frames} frames, got ${count}`)
  const mb = text.length / 1024 / 1024
  console.log(`${label}: ${frames} frame(s), ${mb.toFixed(1)} MB in ${ms.toFixed(1)} ms (${(frames / ms * 1000).toFixed(0)} frames/s, ${(mb / ms * 1000).toFixed(0)} MB/s)`)
}

const event = { type: 'assistant/chunk', seq: 12345, time: 1764670000000, data: { turn: 3, step: 2, chunk: { type: 'text-delta', index: 1, text: 'some streamed words\u2028' } } }
const small = JSON.stringify({ jsonrpc: '2.0', method: 'session.event', params: { sessionId: 'b2c1f0d2-1111-4c1a-9d7e-0123456789ab', event } })
const many = 200_000
timeSplit('small frames', `${small}\n`.repeat(many), many)
const big = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'session/prompt', params: { contentBlocks: [{ type: 'image', mimeType: 'image/png', data: 'A'.repeat(16 * 1024 * 1024) }] } })
timeSplit('one 16 MiB frame', `${big}\n`, 1)

const sink = new Writable({ write(_chunk, _encoding, callback) { callback() } })
const peer = new JsonRpcPeer({ input: new PassThrough(), output: sink })
const start = performance.now()
for (let i = 0; i < many; i++) peer.notify('session.event', { sessionId: 'b2c1f0d2-1111-4c1a-9d7e-0123456789ab', event })
await peer.drain()
const ms = performance.now() - start
console.log(`notify: ${many} session.event frames in ${ms.toFixed(1)} ms (${(many / ms * 1000).toFixed(0)} frames/s)`)
