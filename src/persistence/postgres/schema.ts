/**
 * The PostgreSQL store's layout: its version and format marks, the tables of one schema and the
 * rows the backend reads from them.
 */
import { eventColumnDefinitions } from '../event-columns.js'

export const POSTGRES_SCHEMA_VERSION = 1
/** Marks a schema as a dsh store (the `dsh_store` row `format`). */
export const POSTGRES_FORMAT = 'dsh-session-store'
/** NOTIFY channel prefix (plus a hash of the schema): payload `{"id","next"}` after every committed write. */
export const POSTGRES_CHANNEL = 'dsh_session_events'

export const ATTACHMENT_TABLES = `
CREATE TABLE IF NOT EXISTS attachments (
  session_id text NOT NULL,
  attachment_id text NOT NULL,
  media_type text NOT NULL,
  data bytea NOT NULL,
  PRIMARY KEY (session_id, attachment_id)
);
CREATE TABLE IF NOT EXISTS trash_attachments (
  incarnation uuid NOT NULL,
  attachment_id text NOT NULL,
  media_type text NOT NULL,
  data bytea NOT NULL,
  PRIMARY KEY (incarnation, attachment_id)
);
CREATE TABLE IF NOT EXISTS session_archived (
  session_id text PRIMARY KEY,
  archived boolean NOT NULL
);
`

export const SCHEMA = `
CREATE TABLE dsh_store (key text PRIMARY KEY, value text NOT NULL);
CREATE TABLE sessions (
  id text PRIMARY KEY,
  incarnation uuid NOT NULL UNIQUE,
  revision bigint NOT NULL,
  header text NOT NULL,
  cwd text,
  parent_session text,
  created_at bigint NOT NULL,
  updated_at bigint NOT NULL,
  next_seq integer NOT NULL,
  turns integer NOT NULL,
  title text
);
CREATE INDEX sessions_updated ON sessions (updated_at DESC, id);
CREATE TABLE events (
  session_id text NOT NULL REFERENCES sessions(id),
${eventColumnDefinitions('postgres')}
  PRIMARY KEY (session_id, seq)
);
CREATE TABLE trash_sessions (
  incarnation uuid PRIMARY KEY,
  id text NOT NULL,
  trashed_at bigint NOT NULL,
  revision bigint NOT NULL,
  header text NOT NULL
);
CREATE TABLE trash_events (
  incarnation uuid NOT NULL,
${eventColumnDefinitions('postgres')}
  PRIMARY KEY (incarnation, seq)
);
CREATE SEQUENCE lease_tokens;
CREATE TABLE leases (
  session_id text PRIMARY KEY,
  token bigint NOT NULL,
  holder uuid NOT NULL,
  pid integer NOT NULL,
  host text NOT NULL,
  since timestamptz NOT NULL,
  expires_at timestamptz NOT NULL
);
`

export interface SessionRow {
  id: string
  incarnation: string
  revision: string
  header: string
  cwd: string | null
  parent_session: string | null
  created_at: string
  updated_at: string
  next_seq: number
  turns: number
  title: string | null
}

export interface EventRow {
  seq: number
  count: number
  type: string
  time: string
  data: string
  ignorable: number | null
  surface_op: string | null
  source_event_seqs: string | null
}

export interface LeaseRow {
  token: string
  holder: string
  pid: number
  host: string
  since: Date
  expired: boolean
}
