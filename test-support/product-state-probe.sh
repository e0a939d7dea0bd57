#!/bin/sh
# A stand-in for a product CLI (run as `sh product-state-probe.sh codex|claude ARGS...`): tries to
# write its state folder ($CODEX_HOME or $CLAUDE_CONFIG_DIR), Claude Code's temp folder
# ($CLAUDE_CODE_TMPDIR), the product's folder in $HOME and the working folder, and answers with
# what happened in the product's own JSON stream; with PROBE_URL set, whether it can reach that URL.
product=$1
if [ "$product" = codex ]; then state=$CODEX_HOME; own=.codex; else state=$CLAUDE_CONFIG_DIR; own=.claude; fi
cat > /dev/null
try() { if [ -n "$1" ] && (mkdir -p "$1" && echo probe > "$1/probe") 2>/dev/null; then echo ok; else echo denied; fi; }
temp=none
if [ "$product" = claude ]; then temp=$(try "$CLAUDE_CODE_TMPDIR"); fi
answer="state=$(try "$state") temp=$temp home=$(try "$HOME/$own") workspace=$(try "$PWD/probe-dir") folder=$state"
# With PROBE_URL: whether the network reaches it (the session's network policy).
if [ -n "$PROBE_URL" ]; then
  if curl -s -o /dev/null --max-time 5 "$PROBE_URL" 2>/dev/null; then answer="$answer net=ok"; else answer="$answer net=denied"; fi
fi
if [ "$product" = codex ]; then
  printf '{"type":"thread.started","thread_id":"t"}\n{"type":"item.completed","item":{"id":"i","type":"agent_message","text":"%s"}}\n{"type":"turn.completed"}\n' "$answer"
else
  printf '{"type":"system","subtype":"init"}\n{"type":"result","subtype":"success","is_error":false,"result":"%s"}\n' "$answer"
fi
