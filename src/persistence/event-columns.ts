/**
 * The columns of an SQL store's `events` and `trash_events` rows after their key column, one
 * definition for both databases (SQLite and PostgreSQL): the schemas, the queries and
 * `eventRowValues` (records.ts, which gives the values in this order) all follow it.
 */
export const EVENT_COLUMNS = [
  { name: 'seq', sqlite: 'INTEGER NOT NULL', postgres: 'integer NOT NULL', array: 'integer[]' },
  { name: 'count', sqlite: 'INTEGER NOT NULL', postgres: 'integer NOT NULL', array: 'integer[]' },
  { name: 'type', sqlite: 'TEXT NOT NULL', postgres: 'text NOT NULL', array: 'text[]' },
  { name: 'time', sqlite: 'INTEGER NOT NULL', postgres: 'bigint NOT NULL', array: 'bigint[]' },
  { name: 'data', sqlite: 'TEXT NOT NULL', postgres: 'text NOT NULL', array: 'text[]' },
  { name: 'ignorable', sqlite: 'INTEGER', postgres: 'smallint', array: 'smallint[]' },
  { name: 'surface_op', sqlite: 'TEXT', postgres: 'text', array: 'text[]' },
  { name: 'source_event_seqs', sqlite: 'TEXT', postgres: 'text', array: 'text[]' },
] as const

/** `seq, count, type, ...` for SELECT and INSERT lists. */
export const EVENT_COLUMN_LIST = EVENT_COLUMNS.map((column) => column.name).join(', ')

/** The column definitions of a CREATE TABLE, one per line. */
export function eventColumnDefinitions(dialect: 'sqlite' | 'postgres'): string {
  return EVENT_COLUMNS.map((column) => `  ${column.name} ${column[dialect]},`).join('\n')
}

/** PostgreSQL: `unnest($first::integer[], ...)` of one array parameter per column, from `$first`. */
export function eventColumnArrays(first: number): string {
  return `unnest(${EVENT_COLUMNS.map((column, i) => `$${first + i}::${column.array}`).join(', ')})`
}
