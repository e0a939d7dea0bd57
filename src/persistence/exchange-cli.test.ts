/**
 * `dsh sessions export` then `dsh sessions import` into a fresh home, through the real binary,
 * carries the session's images: one in a prompt, and one in a message still queued in the agent
 * inbox (`agent/inbox/spliced`, delivered when the session continues), on JSONL and SQLite
 * (issue #38.4d). The images are read back through the importing home's attachment store.
 */
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { Context } from 'cordis'
import { describe, expect, it } from 'vitest'
import { runDsh, tempHome } from '../../test-support/run-dsh.js'
import { pngImage } from '../../test-support/images.js'
import { JsonlBackend } from './jsonl/backend.js'
import { SqliteBackend } from './sqlite/backend.js'
import { SessionPersistence } from './service.js'
import { SessionsServicePlugin } from '../session/service.js'
import type { PersistenceBackend } from './api.js'

const stores: [string, (home: string) => PersistenceBackend, string | undefined][] = [
  ['JSONL', home => new JsonlBackend({ root: join(home, 'sessions'), fsync: false }), undefined],
  ['SQLite', home => new SqliteBackend({ file: join(home, 'sessions.db') }), '- id: persistence\n  name: persistence-sqlite\n'],
]

async function open(backend: PersistenceBackend): Promise<Context> {
  const ctx = new Context()
  await ctx.plugin(SessionsServicePlugin).await()
  await ctx.plugin(SessionPersistence, { backend, maxDelayMs: 1 }).await()
  return ctx
}

async function close(ctx: Context): Promise<void> {
  await ctx.registry.delete(SessionPersistence)
  await ctx.registry.delete(SessionsServicePlugin)
}

describe.each(stores)('dsh sessions export/import with images (%s)', (_name, backendOf, patch) => {
  it('the export carries every image the log references, and an import in a fresh home restores them', async () => {
    const source = tempHome()
    const ctx = await open(backendOf(source.home))
    const session = ctx.sessions.create({ cwd: source.cwd })
    const shown = await ctx.sessions.attachments.addImage(session.id, pngImage(3, 2))
    const queued = await ctx.sessions.attachments.addImage(session.id, pngImage(5, 4))
    session.append('turn/start', { turn: 1 })
    session.append('user/message', { id: 'm1', role: 'user', content: [{ type: 'text', text: 'look' }, shown], source: { kind: 'user' } }, { surfaceOp: 'append' })
    session.append('turn/end', { turn: 1, reason: { kind: 'completed' } })
    // Sent while the agent was busy, still waiting for the next turn when the session was left.
    session.append('agent/inbox/spliced', { target: 'next-turn', start: 0, inserted: [{ id: 'm2', role: 'user', content: [{ type: 'text', text: 'and this' }, queued], source: { kind: 'user' } }] })
    await ctx.sessionPersistence.flushAll()
    await close(ctx)

    const patchArgs = (home: string) => {
      if (patch === undefined) return []
      writeFileSync(join(home, 'store.yml'), patch)
      return ['--patch', join(home, 'store.yml')]
    }
    const file = join(source.cwd, 'export.json')
    const exported = await runDsh([...patchArgs(source.home), 'sessions', 'export', session.id, '-o', file], { cwd: source.cwd, env: { DSH_HOME: source.home } })
    expect(exported.code, exported.stderr).toBe(0)
    expect(exported.stderr).toContain('2 images')
    const document = JSON.parse(readFileSync(file, 'utf8')) as { attachments: { attachmentId: string }[]; missingAttachments?: string[] }
    expect(document.attachments.map(a => a.attachmentId).sort()).toEqual([shown.attachment.attachmentId, queued.attachment.attachmentId].sort())
    expect(document.missingAttachments).toBeUndefined()

    const target = tempHome()
    const imported = await runDsh([...patchArgs(target.home), 'sessions', 'import', file], { cwd: target.cwd, env: { DSH_HOME: target.home } })
    expect(imported.code, imported.stderr).toBe(0)
    expect(imported.stdout).toContain(`imported session ${session.id} (`)
    expect(imported.stdout).toContain(', 2 images)')
    expect(imported.stderr).not.toContain('not in the file')

    const reader = await open(backendOf(target.home))
    try {
      await reader.sessionPersistence.load(session.id)
      for (const [block, png] of [[shown, pngImage(3, 2)], [queued, pngImage(5, 4)]] as const) {
        const stored = await reader.sessions.attachments.read(session.id, block.attachment.attachmentId)
        expect(stored?.mediaType).toBe('image/png')
        expect(Buffer.from(stored!.data).equals(png)).toBe(true)
      }
    } finally {
      await close(reader)
    }
  })
})
