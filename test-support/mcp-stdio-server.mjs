// A small MCP server over stdio for tests, written with the official SDK.
//   MCP_TEST_MODE=basic (default): McpServer with echo, add, fail, mixed, slow, hang, crash, env, grow
//   MCP_TEST_MODE=weird: low-level Server listing a 100-character tool name, a $ref schema and a dotted name
//   MCP_TEST_LOG=file: appends one JSON line per event (start, list, call, cancelled) for assertions
import { appendFileSync } from 'node:fs'
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js'
import { Server } from '@modelcontextprotocol/sdk/server/index.js'
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js'
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js'
import { z } from 'zod'

const mode = process.env.MCP_TEST_MODE ?? 'basic'
const record = (event) => {
  if (process.env.MCP_TEST_LOG) appendFileSync(process.env.MCP_TEST_LOG, `${JSON.stringify({ pid: process.pid, ...event })}\n`)
}
record({ event: 'start', mode })
process.stderr.write(`test server ${mode} started\n`)

export const LONG_NAME = 'a'.repeat(40) + '_very_long_tool_name_' + 'b'.repeat(39)

if (mode === 'weird') {
  const server = new Server({ name: 'weird', version: '1.0.0' }, { capabilities: { tools: {} } })
  server.setRequestHandler(ListToolsRequestSchema, async () => {
    record({ event: 'list' })
    return {
      tools: [
        { name: LONG_NAME, description: 'a tool with a 100-character name', inputSchema: { type: 'object', properties: { x: { type: 'string' } } } },
        {
          name: 'lookup',
          description: 'a tool whose schema uses $ref',
          inputSchema: {
            $schema: 'http://json-schema.org/draft-07/schema#',
            type: 'object',
            properties: { where: { $ref: '#/$defs/place' }, when: { type: 'string', format: 'date-time' } },
            required: ['where'],
            $defs: { place: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } },
          },
        },
        { name: 'dotted.name', description: 'a tool with a dot', inputSchema: { anyOf: [{ type: 'object', properties: { a: { type: 'string' } }, required: ['a'] }, { type: 'object', properties: { b: { type: 'number' } } }] } },
      ],
    }
  })
  server.setRequestHandler(CallToolRequestSchema, async (request) => {
    record({ event: 'call', name: request.params.name, arguments: request.params.arguments })
    return { content: [{ type: 'text', text: JSON.stringify({ name: request.params.name, arguments: request.params.arguments }) }] }
  })
  await server.connect(new StdioServerTransport())
} else {
  const server = new McpServer({ name: 'basic', version: '1.0.0' }, { capabilities: { tools: { listChanged: true } } })
  server.registerTool('echo', { description: 'Echo the text back', inputSchema: { text: z.string() }, annotations: { readOnlyHint: true } },
    async ({ text }) => { record({ event: 'call', name: 'echo', arguments: { text } }); return { content: [{ type: 'text', text }] } })
  server.registerTool('add', { description: 'Add two numbers', inputSchema: { a: z.number(), b: z.number() } },
    async ({ a, b }) => ({ content: [{ type: 'text', text: String(a + b) }] }))
  server.registerTool('fail', { description: 'Always reports an error' },
    async () => ({ isError: true, content: [{ type: 'text', text: 'it broke' }] }))
  server.registerTool('mixed', { description: 'Returns every kind of content' },
    async () => ({
      content: [
        { type: 'text', text: 'first' },
        { type: 'image', data: 'iVBORw0KGgo=', mimeType: 'image/png' },
        { type: 'resource_link', uri: 'file:///tmp/report.txt', name: 'report.txt' },
        { type: 'audio', data: 'AAAA', mimeType: 'audio/wav' },
        { type: 'text', text: 'last' },
      ],
    }))
  server.registerTool('slow', { description: 'Waits until cancelled' },
    async (extra) => {
      record({ event: 'call', name: 'slow' })
      await new Promise((resolve) => extra.signal.addEventListener('abort', resolve, { once: true }))
      record({ event: 'cancelled', name: 'slow' })
      return { content: [{ type: 'text', text: 'cancelled' }] }
    })
  server.registerTool('hang', { description: 'Never answers' }, async () => { record({ event: 'call', name: 'hang' }); return new Promise(() => {}) })
  server.registerTool('crash', { description: 'Exits the server mid-call' }, async () => { record({ event: 'call', name: 'crash' }); process.exit(3) })
  server.registerTool('env', { description: 'Names of the credential variables this server can see', inputSchema: { names: z.array(z.string()) } },
    async ({ names }) => ({ content: [{ type: 'text', text: JSON.stringify(Object.fromEntries(names.map((name) => [name, process.env[name] ?? null]))) }] }))
  server.registerTool('grow', { description: 'Adds a tool named extra' }, async () => {
    server.registerTool('extra', { description: 'Appeared later', annotations: { readOnlyHint: true } }, async () => ({ content: [{ type: 'text', text: 'extra!' }] }))
    return { content: [{ type: 'text', text: 'grown' }] }
  })
  // Count tools/list requests without replacing the SDK's handler.
  const original = server.server._requestHandlers.get('tools/list')
  server.server._requestHandlers.set('tools/list', async (...args) => { record({ event: 'list' }); return original(...args) })
  await server.connect(new StdioServerTransport())
}
