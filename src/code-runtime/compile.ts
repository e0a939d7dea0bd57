/**
 * A program's text as the model sends it (the body of an async TypeScript function) to the
 * JavaScript a code run evaluates: the body is wrapped in an async arrow, so `await` and
 * `return` work at its top, and its types are stripped by esbuild (loaded with the first run).
 */

/** A program that does not compile: the message names the line as the model wrote it. */
export class ProgramSyntaxError extends Error {
  override readonly name = 'SyntaxError'
}

const OPEN = '(async () => {\n'

export async function compileProgram(code: string): Promise<string> {
  if (typeof code !== 'string') throw new ProgramSyntaxError('the program must be a string')
  const { transform } = await import('esbuild')
  try {
    const { code: compiled } = await transform(`${OPEN}${code}\n})`, { loader: 'ts', target: 'es2022', sourcefile: 'run_code.ts', logLevel: 'silent' })
    return compiled
  } catch (error) {
    const first = (error as { errors?: { text: string; location?: { line: number; column: number } | null }[] }).errors?.[0]
    if (first === undefined) throw new ProgramSyntaxError(error instanceof Error ? error.message : String(error))
    const at = first.location ? ` (line ${Math.max(1, first.location.line - 1)}, column ${first.location.column + 1})` : ''
    throw new ProgramSyntaxError(`${first.text}${at}`)
  }
}
