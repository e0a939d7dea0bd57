/**
 * The parameters of the ACP methods the agent serves (zod schemas: a bad request is a
 * JSON-RPC invalid-params error naming the field) and the prompt's content blocks as dsh content.
 */
import { z } from 'zod'
import type { ContentBlock } from '../llm/types.js'

const textBlock = z.object({ type: z.literal('text'), text: z.string() }).loose()
const imageBlock = z.object({ type: z.literal('image'), data: z.string().min(1), mimeType: z.string() }).loose()
const resourceLink = z.object({ type: z.literal('resource_link'), uri: z.string(), name: z.string().optional() }).loose()
const resource = z.object({ type: z.literal('resource'), resource: z.object({ uri: z.string(), text: z.string().optional() }).loose() }).loose()
export const promptBlock = z.discriminatedUnion('type', [textBlock, imageBlock, resourceLink, resource])

export const initializeParams = z.object({
  protocolVersion: z.number().int().nonnegative(),
  clientCapabilities: z.object({
    fs: z.object({ readTextFile: z.boolean().optional(), writeTextFile: z.boolean().optional() }).loose().optional(),
    terminal: z.boolean().optional(),
    elicitation: z.object({ form: z.object({}).loose().nullish() }).loose().nullish(),
  }).loose().optional(),
}).loose()
export const newSessionParams = z.object({ cwd: z.string(), mcpServers: z.array(z.unknown()).optional() }).loose()
export const promptParams = z.object({ sessionId: z.string().min(1), prompt: z.array(promptBlock).min(1, 'needs at least one content block') }).loose()
export const cancelParams = z.object({ sessionId: z.string().min(1) }).loose()
export const sessionParams = z.object({ sessionId: z.string().min(1) }).loose()
export const loadParams = z.object({ sessionId: z.string().min(1), cwd: z.string().optional(), mcpServers: z.array(z.unknown()).optional() }).loose()
export const setModeParams = z.object({ sessionId: z.string().min(1), modeId: z.string().min(1) }).loose()
export const listParams = z.object({ cwd: z.string().nullish(), cursor: z.string().nullish() }).loose()
export const permissionOutcome = z.object({
  outcome: z.discriminatedUnion('outcome', [
    z.object({ outcome: z.literal('cancelled') }).loose(),
    z.object({ outcome: z.literal('selected'), optionId: z.string() }).loose(),
  ]),
}).loose()

/** ACP content blocks -> dsh content: text and images as such, resources as text. */
export function toContentBlocks(prompt: readonly z.output<typeof promptBlock>[]): ContentBlock[] {
  return prompt.map((block): ContentBlock => {
    switch (block.type) {
      case 'text': return { type: 'text', text: block.text }
      case 'image': return { type: 'image', data: block.data, mimeType: block.mimeType }
      case 'resource_link': return { type: 'text', text: `[resource ${block.name ?? block.uri}](${block.uri})` }
      case 'resource': return { type: 'text', text: block.resource.text ?? `[resource ${block.resource.uri}]` }
    }
  })
}
