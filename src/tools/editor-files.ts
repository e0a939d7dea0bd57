/**
 * Files held by an editor client (ACP `fs/read_text_file`, `fs/write_text_file`): while a
 * surface provides them for an agent's scope, the built-in file tools read what the editor has
 * (unsaved buffers included) and write through the editor, after the same sandbox fence checks.
 * Everything else (bash, glob, grep, subagents in their own scopes) uses the local disk.
 */
import type { ScopeKey } from '../scope/index.js'

export interface EditorFiles {
  /** The file's text. A file the editor cannot find rejects with an error whose `code` is 'ENOENT'. */
  readonly readText?: (path: string) => Promise<string>
  readonly writeText?: (path: string, text: string) => Promise<void>
}

const providers = new WeakMap<ScopeKey, EditorFiles>()

/** Routes the file tools of `scope` through `files`; the disposer restores the local disk. */
export function provideEditorFiles(scope: ScopeKey, files: EditorFiles): () => void {
  providers.set(scope, files)
  return () => { if (providers.get(scope) === files) providers.delete(scope) }
}

/** The editor files provided for a tool call's scope, if any. */
export function editorFiles(scope: ScopeKey | undefined): EditorFiles | undefined {
  return scope === undefined ? undefined : providers.get(scope)
}
