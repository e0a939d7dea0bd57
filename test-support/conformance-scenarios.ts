/** Recorded scenarios that particular capabilities must pass (named under `examples/acp-agent/tests/snapshots/`). */
export const HOOK_SCENARIOS = [
  'packed-chunks', 'hook-cc-pretool-deny', 'hook-codex-pretool-block', 'hook-cc-posttool-block', 'hook-codex-posttool-block',
  'hook-cc-posttool-context', 'hook-cc-promptsubmit-context', 'hook-codex-promptsubmit-context', 'hook-cc-invalid-matcher',
  'hook-codex-invalid-matcher', 'hook-codex-stop-continue', 'hook-cc-pretool-ask',
]

/** SK-1, SK-2: the skill scenario (its omitted product skill rebuilt from the log at run time). */
export const SKILL_SCENARIOS = ['skill-load']
