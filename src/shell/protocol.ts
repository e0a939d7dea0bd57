/**
 * The completion protocol of a persistent shell: how one call's command is handed to a shell that
 * stays up between calls, and how its end is found in the shell's output.
 *
 * Each call gets a fresh random token. The command travels encoded (no quote, newline or byte of it
 * can break the wrapper), runs in the shell's own scope (so `cd`, exported variables and functions
 * persist) with stdin from the null device (a command that reads stdin gets end of file at once,
 * never the protocol's own input), and after it the shell prints an end marker carrying the token
 * and the exit status on stdout, and one carrying the token on stderr. The call is over when both
 * markers arrived: a command that prints without a final newline, or leaves a background process
 * behind, cannot end the call early or hold it open. A shell that exits (an `exit N`, a fatal
 * error) never prints them: the process's exit ends the call instead.
 *
 * A dialect says how its shell is started and how it wraps a command; `bash` and `pwsh` share the
 * markers and everything that reads them (`./persistent.ts`).
 */
import { randomBytes } from 'node:crypto'

export interface ShellDialect {
  /** The tool and shell name (`bash`, `pwsh`). */
  readonly name: string
  /** The argv that starts the shell reading commands from stdin. */
  argv(binary: string): readonly string[]
  /** Written to the shell's stdin once, right after it starts (definitions every call relies on). */
  readonly preamble?: string
  /** The text written to the shell's stdin to run `command` in `cwd` (if given) and print the markers. */
  wrap(command: string, token: string, cwd?: string): string
}

const PREFIX = '__DSH_END_'

/** A fresh token for one call. */
export function newToken(): string {
  return randomBytes(12).toString('hex')
}

/** The stdout end marker of `token` is `__DSH_END_<token>_<status>__` (a newline follows). */
export function stdoutMarker(token: string): RegExp {
  return new RegExp(`${PREFIX}${token}_(-?\\d+)__\\r?\\n`)
}

/** The stderr end marker of `token`. */
export function stderrMarker(token: string): string {
  return `${PREFIX}${token}__`
}

/** How many bytes at the end of a chunk may be the start of a marker (kept back until the next chunk). */
export function markerWindow(token: string): number {
  return PREFIX.length + token.length + 32
}

/** `text` as a bash `printf %b` argument inside single quotes: printable ASCII as is, the rest `\xHH`. */
function bashEscapes(text: string): string {
  let out = ''
  for (const byte of Buffer.from(text, 'utf8')) {
    const printable = byte >= 0x20 && byte < 0x7f && byte !== 0x27 && byte !== 0x5c
    out += printable ? String.fromCharCode(byte) : `\\x${byte.toString(16).padStart(2, '0')}`
  }
  return out
}

export const bashDialect: ShellDialect = {
  name: 'bash',
  argv: binary => [binary, '--noprofile', '--norc'],
  // `exit` in the shell's own scope says `exit` first, as an interactive bash does (the recorded
  // persistent-tools result); a subshell's `(exit 3)` stays quiet. A status-less `exit` keeps the
  // status of the command before it.
  preamble: `exit() { local __dsh_s=$?; [ "$BASH_SUBSHELL" = 0 ] && printf 'exit\\n'; builtin exit "\${1:-$__dsh_s}"; }\n`,
  wrap(command, token, cwd) {
    // One line for the shell's parser; the newline before `}` keeps a trailing comment of the
    // command from swallowing it (eval reads the command as its own text anyway).
    const go = cwd === undefined ? '' : `printf -v __dsh_dir '%b' '${bashEscapes(cwd)}' && cd -- "$__dsh_dir" && `
    return `printf -v __dsh_cmd '%b' '${bashEscapes(command)}'; ${go}{ eval "$__dsh_cmd"\n} </dev/null; __dsh_status=$?; unset __dsh_cmd __dsh_dir; `
      + `printf '${PREFIX}${token}_%s__\\n' "$__dsh_status"; printf '${PREFIX}${token}__\\n' >&2\n`
  },
}

export const pwshDialect: ShellDialect = {
  name: 'pwsh',
  argv: binary => [binary, '-NoLogo', '-NoProfile', '-NonInteractive', '-Command', '-'],
  wrap(command, token, cwd) {
    const encoded = (text: string) => `[Text.Encoding]::UTF8.GetString([Convert]::FromBase64String('${Buffer.from(text, 'utf8').toString('base64')}'))`
    // Dot-sourced: the command's variables, functions and location stay in the shell's scope.
    const go = cwd === undefined ? '' : `Set-Location -LiteralPath (${encoded(cwd)}); `
    return `$global:LASTEXITCODE = 0; $__dsh_ok = $true; try { ${go}. ([ScriptBlock]::Create(${encoded(command)})) | Out-Host } catch { $__dsh_ok = $false; [Console]::Error.WriteLine($_) }; `
      + `$__dsh_status = if (-not $__dsh_ok) { 1 } elseif ($LASTEXITCODE) { $LASTEXITCODE } else { 0 }; `
      + `[Console]::Out.Write('${PREFIX}${token}_' + $__dsh_status + "__\`n"); [Console]::Out.Flush(); [Console]::Error.Write('${PREFIX}${token}__' + "\`n"); [Console]::Error.Flush()\n`
  },
}
