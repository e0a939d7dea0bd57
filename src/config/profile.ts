/**
 * Profiles: named compositions. A profile lists bundles; the layers applied, in order, are each
 * bundle, the profile's shipped patch (if any), the home profile patch
 * (`$DSH_HOME/profiles/<name>/cordis.patch.yml`), the home-wide `$DSH_HOME/cordis.patch.yml`,
 * then every `--patch` file.
 */
import { existsSync, readFileSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { homePaths } from './home.js'
import { compose, ConfigError, type ComposeResult, type Layer } from './rows.js'
import { packageRoot, shippedDocument } from './shipped.js'
import { describeYamlError, loadYaml } from './yaml.js'

export { packageRoot }
const shippedBundles = join(packageRoot, 'bundles')
const shippedProfiles = join(packageRoot, 'profiles')

export interface ProfileDefinition {
  readonly name: string
  readonly description?: string
  readonly bundles: readonly string[]
  /** Folder of the profile (resolves out-of-tree plugins, holds its patch). */
  readonly folder: string
  readonly shipped: boolean
}

function readYamlDocument(path: string, what: string): unknown {
  const shipped = shippedDocument(path)
  if (shipped !== undefined) return shipped.value
  let text: string
  try {
    text = readFileSync(path, 'utf8')
  } catch (error) {
    throw new ConfigError(path, undefined, undefined, `cannot read ${what}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`)
  }
  if (text.trim() === '') throw new ConfigError(path, undefined, undefined, `${what} is empty (write [] to disable a layer)`)
  try {
    return loadYaml().parse(text)
  } catch (error) {
    throw new ConfigError(path, undefined, undefined, `invalid YAML ${describeYamlError(error)}`)
  }
}

function readList(path: string, what: string): unknown[] {
  const value = readYamlDocument(path, what)
  if (!Array.isArray(value)) throw new ConfigError(path, undefined, undefined, `${what} must be a YAML list`)
  return value
}

export function bundleLayer(name: string): Layer {
  const path = join(shippedBundles, `${name}.yml`)
  if (!existsSync(path)) throw new ConfigError(`bundle ${name}`, undefined, undefined, `no bundle named "${name}"`)
  return { source: `bundle ${name}`, kind: 'bundle', items: readList(path, 'a bundle') }
}

export function patchLayer(path: string, source = path): Layer {
  return { source, kind: 'patch', items: readList(path, 'a patch file') }
}

export function resolveProfile(name: string, home: string): ProfileDefinition {
  if (!/^[A-Za-z0-9._-]+$/.test(name)) throw new ConfigError('--profile', undefined, undefined, `invalid profile name "${name}"`)
  const shipped = join(shippedProfiles, name, 'profile.yml')
  const userFolder = homePaths(home).profile(name)
  const user = join(userFolder, 'profile.yml')
  const path = existsSync(shipped) ? shipped : existsSync(user) ? user : undefined
  if (path === undefined) {
    if (existsSync(userFolder)) return { name, bundles: ['base'], folder: userFolder, shipped: false }
    throw new ConfigError('--profile', undefined, undefined, `unknown profile "${name}" (shipped: ${listShippedProfiles().join(', ')}; others live in ${join(home, 'profiles')})`)
  }
  const value = readYamlDocument(path, 'a profile')
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new ConfigError(path, undefined, undefined, 'a profile must be a mapping')
  const { bundles, description } = value as { bundles?: unknown; description?: unknown }
  if (!Array.isArray(bundles) || bundles.some(item => typeof item !== 'string')) throw new ConfigError(path, undefined, 'bundles', 'must be a list of bundle names')
  return {
    name,
    bundles: bundles as string[],
    description: typeof description === 'string' ? description : undefined,
    folder: path === shipped ? userFolder : dirname(path),
    shipped: path === shipped,
  }
}

export function listShippedProfiles(): string[] {
  try {
    return (readFileSync(join(shippedProfiles, 'index.txt'), 'utf8')).split(/\s+/).filter(Boolean)
  } catch {
    return []
  }
}

export interface ProfileLayersOptions {
  readonly home: string
  readonly patches?: readonly string[]
  /** Bundles only (`--dump-default-config`). */
  readonly bundlesOnly?: boolean
}

export function profileLayers(profile: ProfileDefinition, options: ProfileLayersOptions): Layer[] {
  const layers = profile.bundles.map(bundleLayer)
  if (options.bundlesOnly) return layers
  const shippedPatch = join(shippedProfiles, profile.name, 'cordis.patch.yml')
  if (profile.shipped && existsSync(shippedPatch)) layers.push(patchLayer(shippedPatch, `profile ${profile.name} patch`))
  const paths = homePaths(options.home)
  if (existsSync(paths.profilePatch(profile.name))) layers.push(patchLayer(paths.profilePatch(profile.name)))
  if (existsSync(paths.patch)) layers.push(patchLayer(paths.patch))
  for (const patch of options.patches ?? []) layers.push(patchLayer(resolve(patch)))
  return layers
}

export function composeProfile(profile: ProfileDefinition, options: ProfileLayersOptions): ComposeResult {
  return compose(profileLayers(profile, options))
}
