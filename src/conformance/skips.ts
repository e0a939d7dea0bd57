/**
 * Recorded fixtures that are not comparable session logs, keyed by their path relative to the
 * corpus root (`../shared/fixtures/dsh`), with the reason (from the corpus INDEX.md). A file
 * matches when its path ends with the key, so any directory above or inside the corpus works.
 */
export interface SkipEntry {
  readonly path: string
  readonly reason: string
}

const WEB = 'apps/web/tests/snapshots'
const FAKE_AGENT = 'packages/test-support/acp-snapshot/tests/fixtures'
const OLDER = 'web browser-e2e replay/seed data in older event shapes'
const FAKE = 'synthetic fake-agent self-test fixture: header without version, body a few out-of-turn lines (not a causal log)'

export const SESSION_LOG_SKIPS: readonly SkipEntry[] = [
  { path: `${WEB}/approval-composer/session.jsonl`, reason: `${OLDER} (turn/start.trigger)` },
  { path: `${WEB}/code-mode-round/session.jsonl`, reason: `${OLDER} (turn/start.trigger, assistant/message.content)` },
  { path: `${WEB}/cordis-tool-round/session.jsonl`, reason: `${OLDER}; not a causal log (chunks appended out of order, sourceEventSeqs refer forward)` },
  { path: `${WEB}/feedback-command/session.jsonl`, reason: `${OLDER} (turn/start.trigger, assistant/message.content)` },
  { path: `${WEB}/fresh-round-trip/session.jsonl`, reason: `${OLDER} (turn/start.trigger, assistant/message.content)` },
  { path: `${WEB}/goal-multi-turn-actions/session.jsonl`, reason: 'web browser-e2e replay/seed data (HARNESS: web-lane logs are not comparable)' },
  { path: `${WEB}/lifecycle-chrome/session.jsonl`, reason: `${OLDER} (turn/start.trigger, assistant/message.content)` },
  { path: `${WEB}/message-feedback-protocol/session.jsonl`, reason: 'web browser-e2e replay/seed data (HARNESS: web-lane logs are not comparable)' },
  { path: `${WEB}/minimal-preset/session.jsonl`, reason: 'web browser-e2e replay data: chunks only, no turn events' },
  { path: `${WEB}/navigation-panes/seed.jsonl`, reason: `${OLDER} (turn/start.trigger, assistant/message.content)` },
  { path: `${WEB}/permission-policy-context/session.jsonl`, reason: `${OLDER} (turn/start.trigger)` },
  { path: `${WEB}/plan-narrow-viewport/session.jsonl`, reason: 'web browser-e2e seed data: header-only session' },
  { path: `${WEB}/seeded-history/seed.jsonl`, reason: `${OLDER} (turn/start.trigger, assistant/message.content)` },
  { path: `${WEB}/steering/session.jsonl`, reason: `${OLDER} (turn/start.trigger, assistant/message.content)` },
  { path: `${WEB}/web-search-round/session.jsonl`, reason: 'web browser-e2e replay script: chunks only, no turn events' },
  { path: `${FAKE_AGENT}/record-suite/rec-pin/session.1.jsonl`, reason: FAKE },
  { path: `${FAKE_AGENT}/record-suite/rec-pin/session.jsonl`, reason: FAKE },
  { path: `${FAKE_AGENT}/record-suite/rec-skip/session.jsonl`, reason: FAKE },
  { path: `${FAKE_AGENT}/suite/blocked-log/session.jsonl`, reason: FAKE },
  { path: `${FAKE_AGENT}/suite/no-model/session.jsonl`, reason: FAKE },
  { path: `${FAKE_AGENT}/suite/pin-turn/session.jsonl`, reason: FAKE },
  { path: `${FAKE_AGENT}/suite/plain-turn/session.1.jsonl`, reason: FAKE },
  { path: `${FAKE_AGENT}/suite/plain-turn/session.jsonl`, reason: FAKE },
  { path: `${FAKE_AGENT}/suite/shared-pin/session.jsonl`, reason: FAKE },
  { path: 'examples/acp-agent/tests/snapshots/handshake/session.jsonl', reason: 'protocol-only fixture (ACP initialize + session/new): header-only session' },
  { path: 'examples/acp-agent/tests/snapshots/hook-cc-promptsubmit-block/session.jsonl', reason: 'header-only log: the hook blocks before a turn opens; only the ACP stop reason is observable' },
  { path: 'examples/acp-agent/tests/snapshots/hook-codex-promptsubmit-block/session.jsonl', reason: 'header-only log: the hook blocks before a turn opens; only the ACP stop reason is observable' },
  { path: 'examples/acp-agent/tests/goal-snapshots/goal-round-driver/session.jsonl', reason: 'header-only, override-driven; session.expected.jsonl beside it is the compared log' },
  { path: 'examples/headless-agent/tests/snapshots/ralph-loop/session.jsonl', reason: 'header-only parent log of an override-driven run; the rounds live in the child logs' },
  { path: 'examples/headless-agent/tests/snapshots/ralph-loop/session.1.jsonl', reason: 'child replay script (model chunks only, no turn events), not a causal log' },
  { path: 'examples/headless-agent/tests/snapshots/ralph-loop/session.2.jsonl', reason: 'child replay script (model chunks only, no turn events), not a causal log' },
]

/** The skip entry whose key the path ends with (compared on `/`-separated segments). */
export function findSkip(path: string, skips: readonly SkipEntry[] = SESSION_LOG_SKIPS): SkipEntry | undefined {
  const normalized = '/' + path.split(/[\\/]+/).filter(Boolean).join('/')
  return skips.find((entry) => normalized.endsWith('/' + entry.path))
}
