/**
 * The allow rule an answer "for this session" or "always" would add, shown to the user as it
 * would be written. Narrow on purpose: a single command gives `Bash(git push:*)` when its second
 * word is a subcommand, else the exact command; a compound command, one with a substitution or
 * a redirection, or a word the syntax cannot hold gives none (allow once only); so do a network
 * host, a plan review and a `cordis_*` run, which keep grants of their own.
 */
import { isAbsolute, relative, resolve } from 'node:path'
import { PATH_ARGUMENT } from './rules.js'
import { splitCommand } from './shell.js'

const PATH_NAMES: Readonly<Record<string, string>> = { read: 'Read', edit: 'Edit', write: 'Write', glob: 'Glob', grep: 'Grep', read_image: 'Read', str_replace_editor: 'Edit' }

export function suggestRule(tool: string, args: Record<string, unknown>, root: string, cwd: string): string | undefined {
  if (tool === 'bash') {
    if (typeof args.command !== 'string') return undefined
    const split = splitCommand(args.command)
    if (split.dynamic || split.redirects || split.commands.length !== 1) return undefined
    const words = split.commands[0]!
    if (words.some(word => word === '' || /[\s*()]/.test(word)) || /^[A-Za-z_][A-Za-z0-9_]*=/.test(words[0]!)) return undefined
    if (words.length >= 2 && /^[a-z][a-z0-9._-]*$/.test(words[1]!)) return `Bash(${words[0]} ${words[1]}:*)`
    return `Bash(${words.join(' ')})`
  }
  const key = PATH_ARGUMENT[tool]
  if (key !== undefined) {
    const given = args[key]
    const path = resolve(cwd, typeof given === 'string' && given !== '' ? given : '.')
    const inside = relative(resolve(root), path)
    const text = inside === '' ? '.' : !inside.startsWith('..') && !isAbsolute(inside) ? inside : `/${path}`
    if (/[*?()\s]/.test(text)) return undefined
    return `${PATH_NAMES[tool]}(${text})`
  }
  if (tool === 'web_fetch') {
    try {
      const host = new URL(String(args.url)).hostname.toLowerCase()
      return host === '' ? undefined : `WebFetch(domain:${host})`
    } catch {
      return undefined
    }
  }
  return /^[a-z][a-z0-9_-]*$|^mcp__/.test(tool) && !UNSUGGESTED.test(tool) ? tool : undefined
}

/**
 * Requests whose "allow" is not a permission to grant for good: a network host has grants of its
 * own, a plan is reviewed each time, and a `cordis_*` run has its per-plugin grants.
 */
const UNSUGGESTED = /^(network|exit_plan_mode|cordis_.*)$/
