/**
 * For the lsp tests: a small TypeScript project in a temp folder, the real
 * typescript-language-server of the project's node_modules, and the fake server's command.
 */
import { existsSync, mkdirSync, mkdtempSync, realpathSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..')

export const TS_SERVER = join(ROOT, 'node_modules', '.bin', 'typescript-language-server')
export const HAS_TS_SERVER = existsSync(TS_SERVER)
/** The one line a skipped test prints. */
export const TS_SERVER_MISSING = 'typescript-language-server is not installed (npm install brings the dev dependency)'

export const FAKE_SERVER = join(ROOT, 'test-support', 'lsp-fake-server.mjs')

/** A server entry that runs the fake server for `.fake` files. */
export function fakeServer(behaviour: 'hang' | 'crash' | 'answer', startsLog?: string) {
  return {
    fake: {
      extensions: ['fake'], command: process.execPath, args: [FAKE_SERVER, behaviour],
      ...(startsLog !== undefined ? { env: { LSP_FAKE_STARTS: startsLog } } : {}),
    },
  }
}

export const SHAPES_TS = `export interface Shape {
  area(): number
}

export class Square implements Shape {
  constructor(readonly side: number) {}
  area(): number {
    return this.side * this.side
  }
}

export const unit: number = 1
`

export const MAIN_TS = `import { Square, unit } from './shapes.js'

const square = new Square(unit)
export const total: number = square.area() + unit
`

/** A temp folder (real path) holding tsconfig.json, src/shapes.ts and src/main.ts. */
export function tsProject(): string {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-lsp-')))
  mkdirSync(join(dir, 'src'))
  writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify({ compilerOptions: { strict: true, target: 'es2022', module: 'nodenext', noEmit: true }, include: ['src'] }))
  writeFileSync(join(dir, 'src', 'shapes.ts'), SHAPES_TS)
  writeFileSync(join(dir, 'src', 'main.ts'), MAIN_TS)
  return dir
}

/** Whether process `pid` is still there. */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

/** Resolves once `condition` holds; rejects with `what` after `ms`. */
export async function until(condition: () => boolean, what: string, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise(resolve => setTimeout(resolve, 10))
  }
}
