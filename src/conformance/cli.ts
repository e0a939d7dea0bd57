/** `npm run conformance -- <dir>...`: see docs/conformance.md. */
import { runConformance } from './runner.js'

const roots = process.argv.slice(2).filter((arg) => arg !== '--')
if (roots.length === 0) {
  process.stderr.write('usage: npm run conformance -- <dir>...\n')
  process.exitCode = 2
} else {
  const summary = await runConformance(roots)
  process.exitCode = summary.exitCode
}
