/**
 * Where permission rules come from (docs/security.md, "Permission rules"), in order:
 *
 * 1. `--deny RULE` / `--allow RULE` on the command line (this run only);
 * 2. the user's `settings.yaml`, `permissions: {allow, ask, deny}`;
 * 3. the project's `.dsh/settings.yaml`, the same key: its deny and ask rules always apply, its
 *    allow rules only once the folder is trusted (a cloned repository cannot allow itself
 *    anything);
 * 4. for a trusted folder only, `.claude/settings.json` and `.claude/settings.local.json`
 *    `permissions` as Claude Code writes them, each as pinned when the folder was trusted (a file
 *    changed since waits for trust again, as its hooks do). Started in the home folder they are
 *    the user's own files and need no trust.
 *
 * Rules of dsh's own files and flags must parse (an error names the rule and the file); a
 * Claude Code file's rule dsh cannot read is skipped with one line saying so.
 */
import { existsSync, readFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { describeYamlError, loadYaml } from '../config/yaml.js'
import { isTrusted, pinnedAsIs, readTrustList } from '../trust/index.js'
import type { RuleSet } from './match.js'
import { parseRule, RULE_KINDS, RuleError, type PermissionRule, type RuleKind } from './rules.js'

/** Rule lists as a settings file holds them. */
export interface RuleLists {
  readonly allow?: unknown
  readonly ask?: unknown
  readonly deny?: unknown
}

export interface RuleSources {
  /** The project root: relative path patterns resolve against it, and its files are read. */
  readonly root: string
  /** The user's home folder (`~/` in patterns). */
  readonly home?: string
  /** dsh's home: the trust list lives there. */
  readonly dshHome?: string
  /** The user's `settings.yaml` `permissions` value and the file's path (for messages). */
  readonly user?: unknown
  readonly userFile?: string
  /** `--allow` / `--deny` values of this run. */
  readonly flags?: { readonly allow?: readonly string[]; readonly deny?: readonly string[] }
}

export interface LoadedRules {
  readonly rules: RuleSet
  /** Lines to say once at start (rules skipped, files ignored until trusted). */
  readonly notices: readonly string[]
}

export const PROJECT_SETTINGS = join('.dsh', 'settings.yaml')
const CLAUDE_FILES = [join('.claude', 'settings.json'), join('.claude', 'settings.local.json')]

function lists(value: unknown, where: string): RuleLists {
  if (value === undefined || value === null) return {}
  if (typeof value !== 'object' || Array.isArray(value)) throw new RuleError(`${where}: permissions must be a mapping with allow, ask and deny lists`)
  const record = value as Record<string, unknown>
  for (const kind of RULE_KINDS) {
    const list = record[kind]
    if (list !== undefined && (!Array.isArray(list) || !list.every(item => typeof item === 'string'))) throw new RuleError(`${where}: permissions.${kind} must be a list of rules such as "Bash(npm run test:*)"`)
  }
  return record
}

export function loadRules(sources: RuleSources): LoadedRules {
  const out: Record<RuleKind, PermissionRule[]> = { deny: [], ask: [], allow: [] }
  const notices: string[] = []
  const options = { root: sources.root, ...(sources.home !== undefined ? { home: sources.home } : {}) }
  const add = (from: RuleLists, source: string, kinds: readonly RuleKind[], lenient = false) => {
    for (const kind of kinds) {
      for (const text of (from[kind] ?? []) as string[]) {
        try {
          out[kind].push(parseRule(text, kind, source, options))
        } catch (error) {
          if (!lenient || !(error instanceof RuleError)) throw error
          notices.push(`dsh: ${error.message}; skipped`)
        }
      }
    }
  }
  add({ deny: sources.flags?.deny ?? [], allow: sources.flags?.allow ?? [] }, 'command line', ['deny', 'allow'])
  const userFile = sources.userFile ?? 'settings.yaml'
  add(lists(sources.user, userFile), 'user settings', RULE_KINDS)
  const trust = sources.dshHome !== undefined ? readTrustList(sources.dshHome) : { projects: [], pins: {} }
  // Started in the home folder, ~/.claude/settings.json is the user's own file, as for hooks.
  const own = sources.home !== undefined && resolve(sources.root) === resolve(sources.home)
  const trusted = own || isTrusted(sources.root, trust.projects)
  const project = join(sources.root, PROJECT_SETTINGS)
  // In the home folder, ~/.dsh/settings.yaml may be the user's settings themselves: read once.
  if (existsSync(project) && (sources.userFile === undefined || resolve(sources.userFile) !== resolve(project))) {
    const text = readFileSync(project, 'utf8')
    let value: unknown
    try {
      value = loadYaml().parse(text)
    } catch (error) {
      throw new RuleError(`${project}: invalid YAML ${describeYamlError(error)}`)
    }
    const from = lists(typeof value === 'object' && value !== null ? (value as Record<string, unknown>).permissions : undefined, project)
    add(from, PROJECT_SETTINGS, trusted ? RULE_KINDS : ['deny', 'ask'])
    if (!trusted && Array.isArray(from.allow) && from.allow.length > 0) {
      notices.push(`dsh: the allow rules of ${PROJECT_SETTINGS} are ignored until this folder is trusted (dsh trust on); its deny and ask rules apply`)
    }
  }
  for (const file of CLAUDE_FILES) {
    const path = join(sources.root, file)
    if (!existsSync(path)) continue
    const text = readFileSync(path, 'utf8')
    let json: unknown
    try {
      json = JSON.parse(text)
    } catch {
      notices.push(`dsh: ${file} is not valid JSON; its permission rules are ignored`)
      continue
    }
    const permissions = typeof json === 'object' && json !== null ? (json as Record<string, unknown>).permissions : undefined
    if (permissions === undefined) continue
    if (!trusted) {
      notices.push(`dsh: the permission rules of ${file} are ignored: this folder is not trusted (dsh trust on)`)
      continue
    }
    if (!own && !pinnedAsIs(trust, path, text)) {
      notices.push(`dsh: the permission rules of ${file} are ignored: the file is new or changed since the folder was trusted (dsh trust on)`)
      continue
    }
    let from: RuleLists
    try {
      from = lists(permissions, file)
    } catch (error) {
      notices.push(`dsh: ${(error as Error).message}; ignored`)
      continue
    }
    add(from, file, RULE_KINDS, true)
  }
  return { rules: out, notices }
}
