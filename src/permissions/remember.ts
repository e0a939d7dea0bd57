/**
 * "Always allow": the rule the user was shown is appended to `permissions.allow` of the user's
 * `settings.yaml`, editing the file as a YAML document so its other content (keys, order,
 * comments) stays as it was. A file that does not parse, or whose `permissions.allow` is not a
 * list, is left alone: the error says so and the grant holds for the session.
 */
import { existsSync, readFileSync } from 'node:fs'
import { writeFileAtomic } from '../config/home.js'
import { describeYamlError, loadYaml } from '../config/yaml.js'

export function rememberAllowRule(file: string, rule: string): void {
  const { Document, parseDocument, isMap, isSeq } = loadYaml()
  const text = existsSync(file) ? readFileSync(file, 'utf8') : ''
  const doc = text.trim() === '' ? new Document({}) : parseDocument(text)
  if (doc.errors.length > 0) throw new Error(`${file}: invalid YAML ${describeYamlError(doc.errors[0])}; the rule ${rule} was not saved`)
  if (doc.contents !== null && !isMap(doc.contents)) throw new Error(`${file}: expected a mapping of namespaces; the rule ${rule} was not saved`)
  const permissions = doc.get('permissions', true)
  if (permissions !== undefined && permissions !== null && !isMap(permissions)) throw new Error(`${file}: permissions must be a mapping; the rule ${rule} was not saved`)
  const list = doc.getIn(['permissions', 'allow'], true)
  if (list === undefined || list === null) doc.setIn(['permissions', 'allow'], doc.createNode([rule]))
  else if (!isSeq(list)) throw new Error(`${file}: permissions.allow must be a list; the rule ${rule} was not saved`)
  else if (!list.items.some(item => (item as { value?: unknown }).value === rule || item === rule)) list.add(doc.createNode(rule))
  writeFileAtomic(file, doc.toString(), 0o600)
}
