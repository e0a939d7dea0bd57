/**
 * The composer's completion helpers in Node: which `@word` the caret is in, and which taken
 * mentions are still written in the message (a deleted `@path` is not sent).
 */
import { describe, expect, it } from 'vitest'
import { mentionAt, mentionsIn } from '../../web/src/completion.js'
import { LogFold } from '../../web/src/fold.js'

describe('composer completion', () => {
  it('finds the @word at the caret, only at a word start and without spaces', () => {
    expect(mentionAt('look at @src/ma', 15)).toEqual({ start: 8, query: 'src/ma' })
    expect(mentionAt('@', 1)).toEqual({ start: 0, query: '' })
    expect(mentionAt('mail me@example.com', 19)).toBeUndefined()
    expect(mentionAt('@src/main.ts and more', 21)).toBeUndefined()
    expect(mentionAt('@src/main.ts and more', 4)).toEqual({ start: 0, query: 'src' })
  })

  it('sends only the mentions still written as @path, with punctuation after them', () => {
    const taken = ['notes/a.md', 'src/b.ts', 'c(1).txt']
    expect(mentionsIn('see @notes/a.md, and @c(1).txt', taken)).toEqual(['notes/a.md', 'c(1).txt'])
    expect(mentionsIn('see notes/a.md and @src/b.tsx', taken)).toEqual([])
  })
})

describe('a user message with mentions in the conversation', () => {
  it('shows the typed text and the attached paths, not the files\' text', () => {
    const fold = new LogFold()
    fold.apply([{ type: 'user/message', seq: 0, time: 1, data: { role: 'user', source: { kind: 'user' }, content: [
      { type: 'text', text: 'compare @a.md and @x&quot;.md' },
      { type: 'text', text: '<file path="a.md">\nsecret body\n</file>' },
      { type: 'text', text: '<file path="x&quot;.md" truncated="true" bytes="9">\nmore\n</file>' },
    ] } }])
    expect(fold.items[0]).toMatchObject({ kind: 'user', text: 'compare @a.md and @x&quot;.md', references: ['a.md', 'x".md'] })
    // Retry after a failed turn sends the prompt with the same mentions.
    fold.apply([{ type: 'turn/end', seq: 1, time: 2, data: { turn: 1, reason: { kind: 'error', error: { code: 'X' } } } }])
    expect(fold.items[1]).toMatchObject({ kind: 'turn-end', prompt: 'compare @a.md and @x&quot;.md', mentions: ['a.md', 'x".md'] })
  })
})
