import fc from 'fast-check'
import { mkdtempSync, readFileSync, statSync, writeFileSync, mkdirSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { parse as parseYaml } from 'yaml'
import { dumpConfig } from './dump.js'
import { environmentLayers, parseDotenv, writeCredential, writeSettings, readSettings } from './home.js'
import { compose, ConfigError, stripTracking, type Layer } from './rows.js'
import { patchLayer } from './profile.js'

const bundle = (source: string, items: unknown[]): Layer => ({ source, kind: 'bundle', items })
const patch = (source: string, items: unknown[]): Layer => ({ source, kind: 'patch', items })

describe('composition', () => {
  const base = bundle('bundle base', [
    { id: 'sessions', name: 'sessions' },
    { id: 'model', name: 'llm-deepseek', config: { baseUrl: 'a', timeoutMs: 5 } },
    { id: 'tools', name: 'group', rows: [{ id: 'bash', name: 'tool-bash' }] },
  ])

  it('applies bundles then patches in layer order', () => {
    const { rows } = compose([
      base,
      bundle('bundle headless', [{ id: 'app', name: 'headless' }]),
      patch('profile patch', [{ id: 'model', config: { baseUrl: 'b' } }]),
      patch('home patch', [{ id: 'model', config: { baseUrl: 'c' } }]),
    ])
    expect(rows.map(row => row.id)).toEqual(['sessions', 'model', 'tools', 'app'])
    expect(rows[1].config).toEqual({ baseUrl: 'c' })
    expect(rows[1].patchedBy).toEqual(['profile patch', 'home patch'])
  })

  it('config assignment replaces the whole config (no deep merge)', () => {
    const { rows } = compose([base, patch('p', [{ id: 'model', config: { baseUrl: 'x' } }])])
    expect(rows[1].config).toEqual({ baseUrl: 'x' })
  })

  it('{insert} appends top-level rows and {id, insert} appends into a group', () => {
    const { rows } = compose([base, patch('p', [
      { insert: [{ id: 'extra', name: 'tool-read' }] },
      { id: 'tools', insert: [{ id: 'grep', name: 'tool-grep' }] },
    ])])
    expect(rows.map(row => row.id)).toEqual(['sessions', 'model', 'tools', 'extra'])
    expect(rows[2].rows?.map(row => row.id)).toEqual(['bash', 'grep'])
  })

  it('a name assignment swaps the plugin of a row; disabled turns it off', () => {
    const { rows } = compose([base, patch('p', [
      { id: 'model', name: 'llm-replay', config: { script: 's.jsonl' } },
      { id: 'bash', disabled: true },
    ])])
    expect(stripTracking(rows[1])).toEqual({ id: 'model', name: 'llm-replay', config: { script: 's.jsonl' } })
    expect(rows[2].rows?.[0].disabled).toBe(true)
  })

  it('an unknown id is a warning, not an error; a guarded insert into the wrong plugin is skipped', () => {
    const { rows, warnings } = compose([base, patch('p.yml', [
      { id: 'nope', config: {} },
      { id: 'tools', name: 'other', insert: [{ id: 'x', name: 'tool-x' }] },
    ])])
    expect(warnings).toHaveLength(2)
    expect(warnings[0]).toMatch(/p\.yml \(element 1\).*"nope" matched no row/)
    expect(rows[2].rows).toHaveLength(1)
  })

  it('errors name the file, the row id and the key', () => {
    expect(() => compose([base, patch('home/cordis.patch.yml', [{ id: 'model', colour: 'red' }])]))
      .toThrowError(/home\/cordis\.patch\.yml \(element 1\), row "model", key "colour": unknown patch key/)
    expect(() => compose([bundle('bundle x', [{ id: 'a', name: 'sessions', disabled: 'yes' }])]))
      .toThrowError(/bundle x, row "a", key "disabled"/)
    expect(() => compose([bundle('bundle x', [{ id: 'a', name: 'p' }, { id: 'a', name: 'q' }])]))
      .toThrowError(/row "a", key "id": duplicate row id/)
    expect(() => compose([base, patch('p', [{ insert: [{ id: 'sessions', name: 'z' }] }])])).toThrowError(ConfigError)
  })

  it('a patch file of [] is a no-op layer; an empty file is an error', () => {
    const dir = mkdtempSync(join(tmpdir(), 'dsh-cfg-'))
    writeFileSync(join(dir, 'empty.yml'), '')
    writeFileSync(join(dir, 'none.yml'), '[]\n')
    expect(patchLayer(join(dir, 'none.yml')).items).toEqual([])
    expect(() => patchLayer(join(dir, 'empty.yml'))).toThrowError(/is empty \(write \[\] to disable a layer\)/)
    writeFileSync(join(dir, 'map.yml'), 'a: 1\n')
    expect(() => patchLayer(join(dir, 'map.yml'))).toThrowError(/must be a YAML list/)
  })

  it('the dumped YAML loads back to the same tree, with source comments', () => {
    const { rows } = compose([base, patch('home patch', [{ id: 'model', config: { baseUrl: 'z' } }, { id: 'tools', insert: [{ id: 'grep', name: 'tool-grep' }] }])])
    const text = dumpConfig(rows, 'header')
    expect(text).toContain('# from bundle base')
    expect(text).toContain('row "model" patched by home patch')
    const again = compose([bundle('dump', parseYaml(text) as unknown[])])
    expect(again.rows.map(stripTracking)).toEqual(rows.map(stripTracking))
  })
})

describe('home folder', () => {
  it('credentials resolve: environment, then .credentials.yaml, then ./.env, then $DSH_HOME/.env', () => {
    const home = mkdtempSync(join(tmpdir(), 'dsh-home-'))
    const cwd = mkdtempSync(join(tmpdir(), 'dsh-cwd-'))
    writeFileSync(join(home, '.env'), 'A=home-env\nB=home-env\nC=home-env\nD=home-env\n')
    writeFileSync(join(cwd, '.env'), 'A=cwd-env\nB=cwd-env\nC=cwd-env\n')
    writeCredential(home, 'A', 'credentials')
    writeCredential(home, 'B', 'credentials')
    const layers = environmentLayers({ home, cwd, env: { A: 'process' }, projectTrusted: true })
    expect(layers.value('A')).toBe('process')
    expect(layers.get('B')).toEqual({ value: 'credentials', source: join(home, '.credentials.yaml') })
    expect(layers.value('C')).toBe('cwd-env')
    expect(layers.value('D')).toBe('home-env')
    expect(layers.value('E')).toBeUndefined()
    expect(statSync(join(home, '.credentials.yaml')).mode & 0o777).toBe(0o600)
    // Untrusted (security #42.2), the workspace .env gives API keys only.
    writeFileSync(join(cwd, '.env'), 'C=cwd-env\nC_API_KEY=cwd-key\n')
    const untrusted = environmentLayers({ home, cwd, env: {} })
    expect(untrusted.value('C')).toBe('home-env')
    expect(untrusted.value('C_API_KEY')).toBe('cwd-key')
    expect(untrusted.ignoredProjectVariables).toEqual(['C'])
  })

  it('security: a workspace .env never sets a DSH_* variable (any name), trusted or not; the user\'s own $DSH_HOME/.env may', () => {
    fc.assert(fc.property(fc.stringMatching(/^DSH_[A-Z0-9_]{1,20}$/), fc.stringMatching(/^[A-Za-z0-9]{1,30}$/), (name, value) => {
      const home = mkdtempSync(join(tmpdir(), 'dsh-home-'))
      const cwd = mkdtempSync(join(tmpdir(), 'dsh-cwd-'))
      writeFileSync(join(cwd, '.env'), `${name}=${value}\nexport ${name}="${value}"\nPLAIN_VALUE=${value}\n`)
      const layers = environmentLayers({ home, cwd, env: {}, projectTrusted: true })
      expect(layers.value(name)).toBeUndefined()
      expect(layers.value('PLAIN_VALUE')).toBe(value)
      expect(environmentLayers({ home, cwd, env: {} }).value(name)).toBeUndefined()
      writeFileSync(join(home, '.env'), `${name}=${value}\n`)
      expect(environmentLayers({ home, cwd, env: {} }).get(name)).toEqual({ value, source: join(home, '.env') })
    }), { numRuns: 50 })
  })

  it('settings writes are atomic and read back', () => {
    const home = mkdtempSync(join(tmpdir(), 'dsh-home-'))
    writeSettings(home, { model: { default: 'deepseek-v4-pro' } })
    expect(readSettings(home)).toEqual({ model: { default: 'deepseek-v4-pro' } })
    expect(readFileSync(join(home, 'settings.yaml'), 'utf8')).toContain('deepseek-v4-pro')
  })

  it('parses dotenv quoting, export and comments', () => {
    expect(parseDotenv('export A="x y"\nB=\'q\' \n# c\nC=v # note\nbad line\n')).toEqual({ A: 'x y', B: 'q', C: 'v' })
  })
})
