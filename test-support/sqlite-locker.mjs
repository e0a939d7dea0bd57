// Another process holding a SQLite database's write lock: `node sqlite-locker.mjs FILE` opens
// FILE, takes the write lock (BEGIN IMMEDIATE) and prints `locked`; a line on stdin (or stdin
// closing) commits, which lets the lock go, prints `released` and exits.
import Database from 'better-sqlite3'
import { createInterface } from 'node:readline'

const db = new Database(process.argv[2])
db.pragma('busy_timeout = 10000')
db.exec('BEGIN IMMEDIATE')
process.stdout.write('locked\n')
let done = false
const release = () => {
  if (done) return
  done = true
  db.exec('COMMIT')
  db.close()
  process.stdout.write('released\n')
  process.exit(0)
}
const lines = createInterface({ input: process.stdin })
lines.once('line', release)
lines.once('close', release)
