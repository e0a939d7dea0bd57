// A stand-in language server for the lsp tests: `node lsp-fake-server.mjs <behaviour>`.
//   hang     answers initialize, then never answers anything else
//   crash    exits with code 3 before answering initialize (after a line on stderr)
//   answer   answers initialize, a hover with whether DEEPSEEK_API_KEY reached it, and anything
//            else with two locations in the queried file
// Each start appends a line to $LSP_FAKE_STARTS when it is set, so a test can count starts.
import { appendFileSync } from 'node:fs'

const behaviour = process.argv[2] ?? 'answer'
if (process.env.LSP_FAKE_STARTS) appendFileSync(process.env.LSP_FAKE_STARTS, `${behaviour} ${process.pid}\n`)
if (behaviour === 'crash') {
  process.stderr.write('fake server: cannot start\n')
  process.exit(3)
}

let buffer = Buffer.alloc(0)
const send = (message) => {
  const body = Buffer.from(JSON.stringify({ jsonrpc: '2.0', ...message }))
  process.stdout.write(Buffer.concat([Buffer.from(`Content-Length: ${body.length}\r\n\r\n`), body]))
}
process.stdin.on('data', (chunk) => {
  buffer = Buffer.concat([buffer, chunk])
  for (;;) {
    const end = buffer.indexOf('\r\n\r\n')
    if (end < 0) return
    const length = Number(/Content-Length: (\d+)/i.exec(buffer.subarray(0, end).toString())[1])
    if (buffer.length < end + 4 + length) return
    const message = JSON.parse(buffer.subarray(end + 4, end + 4 + length).toString())
    buffer = buffer.subarray(end + 4 + length)
    handle(message)
  }
})

function handle(message) {
  if (message.id === undefined) {
    if (message.method === 'exit') process.exit(0)
    return
  }
  if (message.method === 'initialize') return send({ id: message.id, result: { capabilities: { definitionProvider: true } } })
  if (message.method === 'shutdown') return send({ id: message.id, result: null })
  if (behaviour === 'hang') return
  // The hover tells whether a credential of dsh's environment reached the server.
  if (message.method === 'textDocument/hover') return send({ id: message.id, result: { contents: { kind: 'plaintext', value: `DEEPSEEK_API_KEY ${process.env.DEEPSEEK_API_KEY === undefined ? 'unset' : 'set'}` } } })
  const uri = message.params?.textDocument?.uri
  const at = (line, character) => ({ start: { line, character }, end: { line, character: character + 1 } })
  send({ id: message.id, result: [{ uri, range: at(0, 6) }, { uri, range: at(1, 0) }] })
}
