/**
 * `read_image`: the model looks at an image file (PNG, JPEG, GIF or WebP). The file is checked
 * from its own bytes, stored with the session as an attachment (`ctx.sessions.attachments`,
 * content-addressed), and the result carries a short text line plus the image block, which the
 * adapter sends the way its wire format allows (docs/builtin-tools.md, "read_image").
 *
 * The tool is offered only to agents whose model takes image input (the catalogue's
 * `imageInput`), so a text-only route pays nothing for it; `always: true` offers it to every
 * agent, and it then refuses on a text-only route, naming the model.
 */
import { readFile, stat } from 'node:fs/promises'
import { basename } from 'node:path'
import type { Context } from 'cordis'
import type { Agent } from '../agent/api.js'
import type { Session } from '../session/api.js'
import { AttachmentError, MAX_IMAGE_BYTES } from '../session/attachments.js'
import type { Tool, ToolOutput } from '../tools/api.js'
import { ToolError } from '../tools/errors.js'
import { resolvePath } from '../tools/builtin/paths.js'

export interface ReadImageConfig {
  /** Offer the tool to every agent, not only to those whose model takes images (default false). */
  readonly always?: boolean
}

export const READ_IMAGE_DESCRIPTION = 'Look at an image file (PNG, JPEG, GIF or WebP): the result is the image itself, with its type and size. Use it to inspect screenshots, diagrams and rendered output, instead of installing image libraries or describing the file from its bytes. Independent images may be read in parallel.'

/** The route that asked for this call: the session's last `request/context`. */
function routeOf(session: Session): { provider: string; model: string } | undefined {
  for (let seq = session.length - 1; seq >= 0; seq--) {
    const event = session.events[seq]!
    if (event.type === 'request/context') {
      const data = event.data as { provider?: unknown; model?: unknown }
      if (typeof data.provider === 'string' && typeof data.model === 'string') return { provider: data.provider, model: data.model }
    }
  }
  return undefined
}

export function createReadImageTool(ctx: Context): Tool<{ file_path: string }> {
  return {
    name: 'read_image',
    description: READ_IMAGE_DESCRIPTION,
    parameters: {
      type: 'object',
      properties: { file_path: { type: 'string', minLength: 1, description: 'The image file; a relative path is resolved against the session folder.' } },
      required: ['file_path'],
      additionalProperties: false,
    },
    isConcurrencySafe: () => true,
    async execute(args, context): Promise<ToolOutput> {
      const session = context.session
      if (session === undefined) throw new ToolError('read_image stores the image with the session, and this call has none', 'NO_SESSION')
      const route = routeOf(session) ?? ctx.get('agents')?.get(session.id)?.config
      const model = route === undefined ? undefined : ctx.get('llm')?.model(route.provider, route.model)
      if (model?.imageInput !== true) {
        throw new ToolError(`cannot read "${args.file_path}" as an image: model "${route?.model ?? 'unknown'}" does not declare image input; switch to an image-capable model to read images`, 'IMAGE_INPUT_UNSUPPORTED')
      }
      const path = resolvePath(context.cwd, args.file_path)
      const info = await stat(path).catch((error: NodeJS.ErrnoException) => {
        throw new ToolError(error.code === 'ENOENT' ? `no such file: ${path}` : `cannot read ${path}: ${error.message}`, error.code === 'ENOENT' ? 'NOT_FOUND' : 'READ_FAILED')
      })
      if (!info.isFile()) throw new ToolError(`${path} is not a file`, 'NOT_A_FILE')
      if (info.size > MAX_IMAGE_BYTES) throw new ToolError(`${path} is ${info.size} bytes; images up to ${MAX_IMAGE_BYTES} bytes can be read`, 'TOO_LARGE')
      const data = await readFile(path)
      let block
      try {
        block = await ctx.sessions.attachments.addImage(session.id, data, { name: basename(path) })
      } catch (error) {
        if (error instanceof AttachmentError) throw new ToolError(`cannot read ${path} as an image: ${error.message}`, 'NOT_AN_IMAGE')
        throw error
      }
      const { mediaType, width, height, bytes } = block.attachment
      const text = `<path>${path}</path>\n<type>image</type>\n<content>\n${mediaType} image, ${width}x${height} px, ${bytes} bytes\n</content>`
      return { content: [{ type: 'text', text }, block], meta: { image: { path, mediaType, width: width ?? null, height: height ?? null, bytes: bytes ?? data.length } } }
    },
  }
}

/** The `tool-read-image` row: `read_image` for the agents whose model takes images (or all, with `always`). */
export class ReadImageToolPlugin {
  static readonly inject = ['tools', 'sessions']

  constructor(ctx: Context, config: ReadImageConfig = {}) {
    const tool = createReadImageTool(ctx)
    if (config.always === true) {
      ctx.effect(() => ctx.tools.register(tool))
      return
    }
    const registered = new Map<string, () => void>()
    const offer = (agent: Agent) => {
      if (registered.has(agent.id)) return
      if (ctx.get('llm')?.model(agent.config.provider, agent.config.model)?.imageInput !== true) return
      registered.set(agent.id, ctx.tools.register(tool, agent.scope))
    }
    const withdraw = (agent: Agent) => {
      registered.get(agent.id)?.()
      registered.delete(agent.id)
    }
    ctx.on('agent/created', offer)
    ctx.on('agent/disposed', withdraw)
    for (const agent of ctx.get('agents')?.list() ?? []) offer(agent)
    ctx.effect(() => () => {
      for (const off of registered.values()) off()
      registered.clear()
    }, 'read_image registrations')
  }
}
