/**
 * An out-of-tree plugin installed as an npm package, with its own `import 'cordis'`, loaded by
 * the built `dsh` (the code-cached bundle, which carries its own copy of Cordis): it provides a
 * service built on its Cordis' `Service`, a second plugin injects it, and both see dsh's agent
 * events. Cordis keys what two copies share (`Context.is`, services, effects) on global symbols.
 */
import { mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { FakeDeepSeek, streamResponse } from '../../test-support/fake-deepseek.js'
import { runDsh, tempHome, withoutSessionHint } from '../../test-support/run-dsh.js'

let server: FakeDeepSeek
beforeAll(async () => { server = await FakeDeepSeek.start() })
afterAll(async () => { await server.close() })

const PLUGIN = `import { Context, Service } from 'cordis'
import { writeFileSync } from 'node:fs'

class Audit extends Service {
  constructor(ctx, config) {
    super(ctx, 'audit')
    this.file = config.file
    this.lines = []
  }
  note(line) {
    this.lines.push(line)
    writeFileSync(this.file, this.lines.join('\\n') + '\\n')
  }
}

export default {
  name: 'audit-plugin',
  apply(ctx, config) {
    ctx.plugin(Audit, config)
    ctx.plugin({
      name: 'audit-user',
      inject: ['audit'],
      apply(inner) {
        inner.audit.note('a context: ' + Context.is(inner))
        inner.on('agent/turn-end', (agent, turn, reason) => { inner.audit.note('turn ' + turn + ' ' + reason.kind) })
        inner.effect(() => () => { inner.audit.note('unloaded') })
      },
    })
  },
}
`

describe('an npm plugin package with its own Cordis', () => {
  it('provides a service from its own Service class, injects it, hears the agent and is unloaded at exit', async () => {
    const { home, cwd } = tempHome()
    const cordis = join(import.meta.dirname, '..', '..', 'node_modules', 'cordis')
    const modules = join(cwd, 'node_modules')
    mkdirSync(join(modules, 'dsh-audit-plugin'), { recursive: true })
    symlinkSync(cordis, join(modules, 'cordis'), 'dir')
    writeFileSync(join(modules, 'dsh-audit-plugin', 'package.json'), JSON.stringify({ name: 'dsh-audit-plugin', type: 'module', exports: './index.js' }))
    writeFileSync(join(modules, 'dsh-audit-plugin', 'index.js'), PLUGIN)
    const file = join(cwd, 'audit.txt')
    const patch = join(cwd, 'audit.yml')
    writeFileSync(patch, `- insert:\n    - id: audit\n      name: dsh-audit-plugin\n      config: {file: ${JSON.stringify(file)}}\n`)
    server.enqueue(streamResponse([{ text: 'done' }, { finish: 'stop', usage: { prompt_tokens: 5, completion_tokens: 1 } }]))
    const result = await runDsh(['--profile', 'headless', '--patch', patch, 'say done'], {
      cwd, env: { DSH_HOME: home, DEEPSEEK_BASE_URL: server.url, DEEPSEEK_API_KEY: 'test-key' },
    })
    expect(withoutSessionHint(result.stderr)).toBe('')
    expect(result.code).toBe(0)
    expect(result.stdout).toBe('done\n')
    expect(readFileSync(file, 'utf8')).toBe('a context: true\nturn 1 completed\nunloaded\n')
  })
})
