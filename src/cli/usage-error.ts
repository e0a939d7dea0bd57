/**
 * A command-line usage mistake: the launcher and the apps print its message with the usage text
 * and exit 2. In a module of its own so the apps need not import the launcher (in the bundle,
 * `dsh --version` then loads the launcher's code as one file).
 */
export class UsageError extends Error {}

/**
 * How a subcommand (`dsh mcp`, `dsh trust`) ends on an error: a usage mistake prints the message
 * and the usage text and exits 2, anything else prints the message and exits 1.
 */
export function commandFailure(error: unknown, name: string, usage: string, stderr: NodeJS.WritableStream): number {
  if (error instanceof UsageError) {
    stderr.write(`${name}: ${error.message}\n${usage}`)
    return 2
  }
  stderr.write(`${name}: ${error instanceof Error ? error.message : String(error)}\n`)
  return 1
}
