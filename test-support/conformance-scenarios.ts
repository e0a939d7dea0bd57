/** Recorded scenarios that particular capabilities must pass (named under `examples/acp-agent/tests/snapshots/`). */
export const HOOK_SCENARIOS = [
  'packed-chunks', 'hook-cc-pretool-deny', 'hook-codex-pretool-block', 'hook-cc-posttool-block', 'hook-codex-posttool-block',
  'hook-cc-posttool-context', 'hook-cc-promptsubmit-context', 'hook-codex-promptsubmit-context', 'hook-cc-invalid-matcher',
  'hook-codex-invalid-matcher', 'hook-codex-stop-continue',
]
