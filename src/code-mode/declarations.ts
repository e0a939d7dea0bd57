/**
 * The TypeScript declarations of the tools a `run_code` program may call, as the system
 * prompt's SDK section shows them: `ToolArgsMap` from each tool's JSON Schema (descriptions as
 * JSDoc), `ToolOutputMap` from each tool's `outputType` (`JsonValue` when it has none), and the
 * `tools` object typed by both.
 */
import type { ToolSchema } from '../llm/types.js'

const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/
const INDENT = '  '

type Schema = { readonly [key: string]: unknown }

const isSchema = (value: unknown): value is Schema => typeof value === 'object' && value !== null && !Array.isArray(value)

const key = (name: string) => IDENTIFIER.test(name) ? name : JSON.stringify(name)

function doc(description: unknown, indent: string): string {
  if (typeof description !== 'string' || description.trim() === '') return ''
  return `${indent}/** ${description.replace(/\*\//g, '*\\/').replace(/\s*\n\s*/g, ' ')} */\n`
}

/** The type of `schema` written at nesting `depth` (its inner lines indented one step more). */
export function schemaType(schema: unknown, depth: number): string {
  if (!isSchema(schema)) return 'JsonValue'
  if (Array.isArray(schema.enum)) return schema.enum.map((value) => JSON.stringify(value)).join(' | ')
  if ('const' in schema) return JSON.stringify(schema.const)
  const union = Array.isArray(schema.oneOf) ? schema.oneOf : Array.isArray(schema.anyOf) ? schema.anyOf : undefined
  if (union !== undefined) return union.map((member) => schemaType(member, depth)).join(' | ')
  const type = schema.type
  if (Array.isArray(type)) return type.map((member) => schemaType({ ...schema, type: member }, depth)).join(' | ')
  switch (type) {
    case 'string': return 'string'
    case 'number':
    case 'integer': return 'number'
    case 'boolean': return 'boolean'
    case 'null': return 'null'
    case 'array': {
      const item = schemaType(schema.items, depth)
      return /^[A-Za-z0-9_"]+$/.test(item) ? `${item}[]` : `(${item})[]`
    }
    case 'object': return objectType(schema, depth)
    default: return isSchema(schema.properties) ? objectType(schema, depth) : 'JsonValue'
  }
}

function objectType(schema: Schema, depth: number): string {
  const properties = isSchema(schema.properties) ? Object.entries(schema.properties) : []
  const closed = schema.additionalProperties === false
  if (properties.length === 0) return closed ? '{}' : 'Record<string, JsonValue>'
  const required = new Set(Array.isArray(schema.required) ? schema.required.filter((name): name is string => typeof name === 'string') : [])
  const inner = INDENT.repeat(depth + 1)
  const lines = properties.map(([name, property]) =>
    `${doc(isSchema(property) ? property.description : undefined, inner)}${inner}${key(name)}${required.has(name) ? '' : '?'}: ${schemaType(property, depth + 1)};\n`)
  return `{\n${lines.join('')}${INDENT.repeat(depth)}}${closed ? '' : ' & Record<string, JsonValue>'}`
}

/** `text` (a type written at depth 0) moved to `depth`: every line after the first indented. */
function indentType(text: string, depth: number): string {
  return text.split('\n').map((line, index) => index === 0 || line === '' ? line : `${INDENT.repeat(depth)}${line}`).join('\n')
}

export interface DeclaredTool {
  readonly schema: ToolSchema
  /** The TypeScript type of the tool's value (`Tool.outputType`). */
  readonly outputType?: string
}

/** The `ts` block of the SDK section, for `tools` sorted by name. */
export function toolDeclarations(tools: readonly DeclaredTool[]): string {
  const sorted = [...tools].sort((a, b) => a.schema.name < b.schema.name ? -1 : a.schema.name > b.schema.name ? 1 : 0)
  const args = sorted.map(({ schema }) => `${doc(schema.description, INDENT)}${INDENT}${key(schema.name)}: ${schemaType(schema.parameters, 1)};\n`).join('')
  const outputs = sorted.map(({ schema, outputType }) => `${INDENT}${key(schema.name)}: ${outputType !== undefined ? indentType(outputType.trim(), 1) : 'JsonValue'};\n`).join('')
  return [
    'type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue }',
    '',
    `interface ToolArgsMap {\n${args}}`,
    '',
    `interface ToolOutputMap {\n${outputs}}`,
    '',
    'type ToolName = keyof ToolOutputMap',
    '',
    'declare class ToolCallError extends Error {\n  readonly name: "ToolCallError";\n  readonly toolName: ToolName;\n}',
    '',
    'declare const tools: {\n  [K in ToolName]: (args: ToolArgsMap[K]) => Promise<ToolOutputMap[K]>;\n}',
  ].join('\n')
}
