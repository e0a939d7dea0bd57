import { existsSync, readFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { describe, expect, it } from 'vitest'
import { schemaType, toolDeclarations } from './declarations.js'
import { CODE_ONLY_TEXT, RUN_CODE_DESCRIPTION, RUN_CODE_PARAMETERS, SDK_HEAD } from './texts.js'
import { BASH_OUTPUT_TYPE } from '../tools/builtin/bash-value.js'
import { READ_OUTPUT_TYPE } from '../tools/builtin/read.js'
import { RUN_OUTPUT_TYPE } from '../workflow/api.js'

const snapshots = resolve(import.meta.dirname, '../../../shared/fixtures/dsh/examples/acp-agent/tests/snapshots')
const recorded = existsSync(join(snapshots, 'code-mode-turn'))
if (!recorded) console.warn('skipping the recorded code-mode prompt checks: ../shared/fixtures/dsh absent')

describe('the SDK declarations of code mode (#36)', () => {
  it('JSON Schema to TypeScript: optional members, enums, closed objects, arrays of objects, unions', () => {
    expect(schemaType({ type: 'object', properties: {} }, 1)).toBe('Record<string, JsonValue>')
    expect(schemaType({ type: 'array', items: { type: 'string' } }, 1)).toBe('string[]')
    expect(schemaType({ type: 'string', enum: ['a', 'b'] }, 1)).toBe('"a" | "b"')
    expect(schemaType({ type: ['string', 'null'] }, 1)).toBe('string | null')
    expect(schemaType({ type: 'array', items: { type: 'object', additionalProperties: false, properties: { n: { type: 'integer', description: 'A */ count.' } }, required: ['n'] } }, 1))
      .toBe('({\n    /** A *\\/ count. */\n    n: number;\n  })[]')
    expect(schemaType({ type: 'object', properties: { 'odd-name': { type: 'boolean' } } }, 0)).toBe('{\n  "odd-name"?: boolean;\n} & Record<string, JsonValue>')
    expect(schemaType({}, 0)).toBe('JsonValue')
  })

  it.skipIf(!recorded)('gives the recorded block byte for byte from the recorded schemas (code-mode-turn), and the built-in output types are the recorded ones', () => {
    const prompt = readFileSync(join(snapshots, 'code-mode-turn/system-prompt.expected.md'), 'utf8')
    const schemas = JSON.parse(readFileSync(join(snapshots, 'text-turn/tool-schemas.expected.json'), 'utf8')).initial as { name: string; description: string; parameters: Record<string, unknown> }[]
    const block = prompt.slice(prompt.indexOf('```ts\n') + 6, prompt.lastIndexOf('\n```'))
    const outputs = block.slice(block.indexOf('interface ToolOutputMap {\n') + 26, block.indexOf('\n}\n\ntype ToolName'))
    const outputTypes = new Map<string, string>()
    for (const match of `${outputs}\n`.matchAll(/^ {2}([a-z_]+): ([\s\S]*?);\n(?= {2}[a-z_]+: |$)/gm)) {
      outputTypes.set(match[1]!, match[2]!.split('\n').map((line, index) => index === 0 ? line : line.slice(2)).join('\n'))
    }
    expect(outputTypes.get('bash')).toBe(BASH_OUTPUT_TYPE)
    expect(outputTypes.get('read')).toBe(READ_OUTPUT_TYPE)
    expect(outputTypes.get('workflow')).toBe(RUN_OUTPUT_TYPE)
    expect(outputTypes.get('ralph')).toBe(RUN_OUTPUT_TYPE)
    const declared = schemas.filter((schema) => outputTypes.has(schema.name)).map((schema) => ({ schema, outputType: outputTypes.get(schema.name) }))
    expect(declared.length).toBeGreaterThan(15)
    expect(toolDeclarations(declared)).toBe(block)
    // The texts around it, and the run_code schema, are the recorded ones.
    expect(prompt).toContain(`\n\n${CODE_ONLY_TEXT}\n\n`)
    expect(prompt).toContain(`\n\n${SDK_HEAD}\n\n\`\`\`ts\n`)
    const runCode = JSON.parse(readFileSync(join(snapshots, 'code-mode-turn/tool-schemas.expected.json'), 'utf8')).initial[0]
    expect({ description: runCode.description, parameters: runCode.parameters }).toEqual({ description: RUN_CODE_DESCRIPTION, parameters: RUN_CODE_PARAMETERS })
  })
})
