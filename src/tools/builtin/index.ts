/**
 * The built-in tools, each a small Cordis plugin registering one tool on `ctx.tools`.
 * `BuiltinToolsPlugin` loads the default set (everything but `web_fetch`) plus the read ledger
 * service the file tools share. See docs/builtin-tools.md.
 */
import { Context } from 'cordis'
import { BashToolPlugin, type BashToolConfig } from './bash.js'
import { EditToolPlugin, type EditToolConfig } from './edit.js'
import { GlobToolPlugin, type GlobToolConfig } from './glob.js'
import { GrepToolPlugin, type GrepToolConfig } from './grep.js'
import { ReadLedger } from './ledger.js'
import { ReadToolPlugin, type ReadToolConfig } from './read.js'
import { TodoWriteToolPlugin, type TodoWriteConfig } from './todo.js'
import { WriteToolPlugin, type WriteToolConfig } from './write.js'
import { removeSessionSpill, setSpillRoot } from './spill.js'
import type {} from '../../session/api.js'

export * from './bash.js'
export * from './edit.js'
export * from './errors.js'
export * from './glob.js'
export * from './grep.js'
export * from './html.js'
export * from './ledger.js'
export * from './read.js'
export * from './session-event-read.js'
export * from './spill.js'
export * from './todo.js'
export * from './web-fetch.js'
export * from './write.js'

/** Per-tool configuration; `false` leaves that tool out. */
export interface BuiltinToolsConfig {
  /**
   * Folder that keeps each session's spilled outputs until the session is deleted (the command
   * line uses `$DSH_HOME/tool-output`). Without it, spills go to a temp folder removed at exit.
   */
  readonly spillRoot?: string
  readonly bash?: BashToolConfig | false
  readonly read?: ReadToolConfig | false
  readonly write?: WriteToolConfig | false
  readonly edit?: EditToolConfig | false
  readonly glob?: GlobToolConfig | false
  readonly grep?: GrepToolConfig | false
  readonly todo_write?: false | TodoWriteConfig
}

export class BuiltinToolsPlugin {
  static readonly inject = ['tools']
  constructor(ctx: Context, config: BuiltinToolsConfig = {}) {
    const spillRoot = config.spillRoot
    if (spillRoot !== undefined) {
      ctx.effect(() => setSpillRoot(spillRoot))
      // A session's spill files are part of it: they go when it goes.
      ctx.on('session/deleted', (id) => removeSessionSpill(id, spillRoot))
    }
    ctx.plugin(ReadLedger)
    // Each tool plugin's registration is an effect of the context it gets: the tools that need
    // only `ctx.tools` register on this plugin's own, the file tools on one child that also
    // injects the read ledger (they reload together when it changes). Two fibers instead of
    // seven: each Cordis fiber costs its start and its teardown (docs/benchmarks.md, round six).
    if (config.bash !== false) new BashToolPlugin(ctx, config.bash ?? {})
    const { read, write, edit } = config
    if (read !== false || write !== false || edit !== false) {
      ctx.plugin({
        name: 'file-tools',
        inject: ['tools', 'readLedger'],
        apply: (files: Context) => {
          if (read !== false) new ReadToolPlugin(files, read ?? {})
          if (write !== false) new WriteToolPlugin(files, write ?? {})
          if (edit !== false) new EditToolPlugin(files, edit ?? {})
        },
      })
    }
    if (config.glob !== false) new GlobToolPlugin(ctx, config.glob ?? {})
    if (config.grep !== false) new GrepToolPlugin(ctx, config.grep ?? {})
    if (config.todo_write !== false) new TodoWriteToolPlugin(ctx, config.todo_write ?? {})
  }
}
