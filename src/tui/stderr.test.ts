/**
 * While the conversation screen is drawn, stderr writes become notices, a line at a time, and
 * never reach the terminal in the middle of Ink's frame.
 */
import { PassThrough } from 'node:stream'
import { describe, expect, it } from 'vitest'
import { routeStderr } from './stderr.js'

function fakeStderr(): { stream: NodeJS.WriteStream; written: string[] } {
  const written: string[] = []
  const stream = new PassThrough() as unknown as NodeJS.WriteStream
  stream.write = ((chunk: string | Uint8Array) => { written.push(String(chunk)); return true }) as NodeJS.WriteStream['write']
  return { stream, written }
}

describe('routeStderr', () => {
  it('turns writes into lines, joining pieces and dropping escapes and blank lines; callbacks still run', async () => {
    const { stream, written } = fakeStderr()
    const lines: string[] = []
    const release = routeStderr(stream, line => lines.push(line))
    stream.write('dsh: MCP server "demo" is reco')
    stream.write('nnecting: closed\n\n\x1b[31mred\x1b[0m text\r\n')
    const done = new Promise<Error | null | undefined>(resolve => stream.write(Buffer.from('bytes too\n'), error => resolve(error)))
    expect(await done).toBeNull()
    expect(lines).toEqual(['dsh: MCP server "demo" is reconnecting: closed', 'red text', 'bytes too'])
    expect(written).toEqual([])
    release()
    stream.write('after\n')
    expect(written).toEqual(['after\n'])
  })

  it('a last line without its newline reaches the real stream when the screen closes', () => {
    const { stream, written } = fakeStderr()
    const lines: string[] = []
    const release = routeStderr(stream, line => lines.push(line))
    stream.write('half a line')
    expect(lines).toEqual([])
    release()
    expect(written).toEqual(['half a line\n'])
  })
})
