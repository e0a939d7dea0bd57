/**
 * `--dump-config`: the composed plugin tree as loadable YAML (a bundle-shaped list of rows),
 * each run of rows preceded by a comment naming the layer it came from.
 */
import type { YAMLSeq } from 'yaml'
import { stripTracking, type TrackedRow } from './rows.js'
import { loadYaml } from './yaml.js'

function annotate(seq: YAMLSeq, rows: readonly TrackedRow[]): void {
  const { isMap, isSeq } = loadYaml()
  let previous: string | undefined
  rows.forEach((row, index) => {
    const node = seq.items[index]
    if (!isMap(node)) return
    const notes: string[] = []
    if (row.source !== previous) notes.push(` from ${row.source}`)
    if (row.patchedBy.length > 0) notes.push(` row "${row.id}" patched by ${row.patchedBy.join(', ')}`)
    if (notes.length > 0) node.commentBefore = notes.join('\n')
    previous = row.source
    const children = node.get('rows', true)
    if (row.rows && isSeq(children)) annotate(children, row.rows)
  })
}

export function dumpConfig(rows: readonly TrackedRow[], header?: string): string {
  const { Document, isSeq } = loadYaml()
  const doc = new Document(rows.map(stripTracking))
  if (header !== undefined) doc.commentBefore = ` ${header}`
  if (isSeq(doc.contents)) annotate(doc.contents, rows)
  return doc.toString({ lineWidth: 0 })
}
