/**
 * `@` mentions in the web UI: src/host/mentions.ts (shared with the terminal app), its errors
 * answered as the web API's 400s.
 */
import { mentionBlocks as readMentions, MentionError, type MentionBlock } from '../host/mentions.js'
import { WebApiError } from './api.js'

export { isMentionBlock, MAX_MENTION_BYTES, MAX_MENTION_TOTAL_BYTES, MAX_MENTIONS } from '../host/mentions.js'

/** Reads mentioned files as reference blocks; a bad mention is a 400 naming it. */
export function mentionBlocks(root: string, mentions: unknown): MentionBlock[] {
  try {
    return readMentions(root, mentions)
  } catch (error) {
    if (error instanceof MentionError) throw new WebApiError(400, error.code, error.message)
    throw error
  }
}
