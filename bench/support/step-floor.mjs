// The floor under a read step: a bare Node process doing only the I/O a step of any harness
// with dsh's durability must do, and nothing else. Per step: one streamed chat-completions
// request over node:http (keep-alive) with the body dsh sent (same system prompt and tool
// schemas, the conversation growing by the same two messages a step), the SSE parsed with
// eventsource-parser and JSON.parse, three appends to a JSONL log each followed by fdatasync
// (D-3's checkpoints: before pre-step, before the request, before the tool), and the file read
// through fs/promises. Prints the mean cycle of the steady steps (all but the first) in ms.
//   node bench/support/step-floor.mjs URL STEPS REQUEST.json WORKDIR
// REQUEST.json holds a request body dsh sent (model, messages, tools, ...); the script answers
// whatever the server streams: a tool call reads WORKDIR/notes.txt, anything else ends the run.
import { request, Agent } from 'node:http'
import { readFileSync, writeSync } from 'node:fs'
import { open, readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { createParser } from 'eventsource-parser'

const [url, stepsArg, requestFile, workdir] = process.argv.slice(2)
const steps = Number(stepsArg)
const base = JSON.parse(readFileSync(requestFile, 'utf8'))
const messages = [...base.messages]
const agent = new Agent({ keepAlive: true })
const log = await open(join(workdir, 'floor.jsonl'), 'a', 0o600)
let seq = 0

async function append(...events) {
  writeSync(log.fd, events.map(data => `${JSON.stringify({ seq: seq++, time: Date.now(), data })}\n`).join(''))
  await log.datasync()
}

/** One streamed request; resolves with the tool call it carried, if any. */
function post(body) {
  return new Promise((resolve, reject) => {
    const req = request(`${url}/chat/completions`, {
      method: 'POST', agent,
      headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), authorization: 'Bearer floor' },
    }, res => {
      const call = { id: '', name: '', arguments: '' }
      const parser = createParser({
        onEvent(event) {
          if (event.data === '[DONE]') return
          const delta = JSON.parse(event.data).choices?.[0]?.delta?.tool_calls?.[0]
          if (delta === undefined) return
          call.id ||= delta.id ?? ''
          call.name ||= delta.function?.name ?? ''
          call.arguments += delta.function?.arguments ?? ''
        },
      })
      res.setEncoding('utf8')
      res.on('data', text => parser.feed(text))
      res.on('end', () => resolve(call.name === '' ? undefined : call))
      res.on('error', reject)
    })
    req.on('error', reject)
    req.end(body)
  })
}

const starts = []
for (let step = 0; step <= steps; step++) {
  starts.push(performance.now())
  await append({ type: 'step/end' })
  await append({ type: 'step/start' })
  const call = await post(JSON.stringify({ ...base, messages }))
  if (call === undefined) break
  const assistant = { role: 'assistant', content: '', tool_calls: [{ id: call.id, type: 'function', function: { name: call.name, arguments: call.arguments } }] }
  messages.push(assistant)
  await append({ type: 'assistant/message', assistant }, { type: 'tool/call', call })
  const text = await readFile(join(workdir, JSON.parse(call.arguments).file_path), 'utf8')
  messages.push({ role: 'tool', tool_call_id: call.id, content: text })
}
await log.close()
agent.destroy()
const steady = starts.slice(1)
process.stdout.write(`${(steady[steady.length - 1] - steady[0]) / (steady.length - 1)}\n`)
