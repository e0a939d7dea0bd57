import { describe, expect, it } from 'vitest'
import { bashParameters, todoWriteParameters } from './builtin/index.js'
import { schemaProblems } from './json-schema.js'

describe('schemaProblems (the JSON Schema subset the registry checks)', () => {
  it('T-7: conforming built-in arguments have no problems', () => {
    expect(schemaProblems(bashParameters, { command: 'ls', description: 'list', timeoutMs: 5, workdir: 'src' })).toEqual([])
    expect(schemaProblems(todoWriteParameters, { todos: [{ content: 'a', status: 'pending' }] })).toEqual([])
  })

  it('T-7: lists every problem with its path, in document order', () => {
    expect(schemaProblems(bashParameters, { command: '', timeoutMs: 0 })).toEqual([
      'description: required',
      'command: must not be shorter than 1 character',
      'timeoutMs: must be > 0',
    ])
    expect(schemaProblems(bashParameters, { command: 'ls', description: 'x', timeoutMs: 1.5 })).toEqual(['timeoutMs: expected integer, got number'])
    expect(schemaProblems(todoWriteParameters, { todos: [{ content: 'a', status: 'done' }, { status: 'pending' }] })).toEqual([
      'todos.0.status: expected one of "pending", "in_progress", "completed"',
      'todos.1.content: required',
    ])
    expect(schemaProblems(todoWriteParameters, [])).toEqual(['(arguments): expected object, got array'])
  })

  it('checks numeric and length bounds and array sizes', () => {
    const schema = { type: 'array', minItems: 1, maxItems: 2, items: { type: 'number', minimum: 0, maximum: 10, exclusiveMaximum: 10 } }
    expect(schemaProblems(schema, [])).toEqual(['(arguments): must have at least 1 item'])
    expect(schemaProblems(schema, [-1, 10, 3])).toEqual(['(arguments): must have at most 2 items', '0: must be >= 0', '1: must be < 10'])
    expect(schemaProblems({ type: 'string', maxLength: 2 }, '😀😀')).toEqual([])
    expect(schemaProblems({ type: 'string', maxLength: 2 }, 'abc')).toEqual(['(arguments): must not be longer than 2 characters'])
  })

  it('checks const (as JSON) and oneOf (exactly one alternative)', () => {
    expect(schemaProblems({ const: { a: 1 } }, { a: 1 })).toEqual([])
    expect(schemaProblems({ const: 'x' }, 'y')).toEqual(['(arguments): expected "x"'])
    const schema = { oneOf: [{ type: 'string' }, { type: 'number' }] }
    expect(schemaProblems(schema, 'a')).toEqual([])
    expect(schemaProblems(schema, true)).toEqual(['(arguments): must match exactly one of 2 alternatives (matches 0)'])
    expect(schemaProblems({ oneOf: [{ type: 'number' }, { type: 'integer' }] }, 3)).toEqual(['(arguments): must match exactly one of 2 alternatives (matches 2)'])
  })
})
