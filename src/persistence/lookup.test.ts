/** Ids as people type them: the start of a stored id stands for it when nothing has the id typed. */
import { describe, expect, it } from 'vitest'
import { SessionNotStoredError, type StoredSessionSummary } from './api.js'
import { byIdOrPrefix, storedId } from './lookup.js'

const summary = (id: string): StoredSessionSummary => ({ id, title: null, createdAt: 0, updatedAt: 0, turns: 1, length: 3 })
const store = (...ids: string[]) => {
  let lists = 0
  return { list: async () => { lists += 1; return ids.map(summary) }, lists: () => lists }
}

describe('session ids by their start', () => {
  it('the whole id, the one id a start names, several named is an error, too short or none gives the typed text back', async () => {
    const stored = store('1699dc95-b8d5-43d2-bafa-b1d60db4037f', 'f87ac530-1887-4059-8b4f-15e77e2b94b4', 'f87ac999-0000-4000-8000-000000000000', 'abcd')
    expect(await storedId(stored, 'f87ac530-1887-4059-8b4f-15e77e2b94b4')).toBe('f87ac530-1887-4059-8b4f-15e77e2b94b4')
    expect(await storedId(stored, '1699dc95')).toBe('1699dc95-b8d5-43d2-bafa-b1d60db4037f')
    // An id that is also the start of none but itself stays itself.
    expect(await storedId(stored, 'abcd')).toBe('abcd')
    await expect(storedId(stored, 'f87ac')).rejects.toThrow(/2 stored sessions' ids start with it \(f87ac530-.*, f87ac999-.*\): give more of the id/)
    expect(await storedId(stored, '169')).toBe('169')
    expect(await storedId(stored, 'nothing-like-it')).toBe('nothing-like-it')
  })

  it('byIdOrPrefix reads the listing only when the id typed is not stored, and rethrows what else fails', async () => {
    const stored = store('1699dc95-b8d5-43d2-bafa-b1d60db4037f')
    const load = async (id: string) => {
      if (id !== '1699dc95-b8d5-43d2-bafa-b1d60db4037f') throw new SessionNotStoredError(`session ${id} is not stored`, id)
      return id
    }
    expect(await byIdOrPrefix(stored, '1699dc95-b8d5-43d2-bafa-b1d60db4037f', load)).toBe('1699dc95-b8d5-43d2-bafa-b1d60db4037f')
    expect(stored.lists()).toBe(0)
    expect(await byIdOrPrefix(stored, '1699dc95', load)).toBe('1699dc95-b8d5-43d2-bafa-b1d60db4037f')
    expect(stored.lists()).toBe(1)
    await expect(byIdOrPrefix(stored, 'ffffffff', load)).rejects.toThrow('session ffffffff is not stored')
    await expect(byIdOrPrefix(stored, '1699dc95', async () => { throw new Error('disk on fire') })).rejects.toThrow('disk on fire')
  })
})
