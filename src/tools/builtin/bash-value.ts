/**
 * What `bash` gives a program (code mode): the run as data, typed for the model by
 * `BASH_OUTPUT_TYPE` (docs/code-mode.md).
 */
import type { JsonValue } from '../../session/types.js'

export const BASH_OUTPUT_TYPE = `{
  kind: "background";
  jobId: string;
} | {
  kind: "foreground";
  exitCode: number | null;
  signal: string | null;
  timedOut: boolean;
  aborted: boolean;
  timeoutMs: number;
  stdout: {
    text: string;
    truncated: boolean;
    spillPath?: string;
  };
  stderr: {
    text: string;
    truncated: boolean;
    spillPath?: string;
  };
  sandbox?: {
    mode: string;
    denied: boolean;
    enforcement?: string;
    runnerFailed?: boolean;
  };
}`

/** One captured stream: its text as kept, whether bytes were left out of it, and its spill file. */
export function streamValue(captured: { readonly text: string; readonly totalBytes: number; readonly spillPath?: string }): Record<string, JsonValue> {
  return {
    text: captured.text,
    truncated: captured.totalBytes > Buffer.byteLength(captured.text),
    ...(captured.spillPath !== undefined ? { spillPath: captured.spillPath } : {}),
  }
}
