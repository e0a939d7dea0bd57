/**
 * Which variables are credentials. Credentials are API keys of model providers
 * (`<PROVIDER>_API_KEY`, e.g. `DEEPSEEK_API_KEY`, `OPENAI_API_KEY`): that is all `.credentials.yaml`
 * and the web's `credentials.set` may hold, so a stored "credential" can never plant `PATH`,
 * `BASH_ENV`, `NODE_OPTIONS` or a base URL. Secrets of any kind are scrubbed from the
 * environment of every child process dsh starts (tools, hooks, servers), so a command such as
 * `echo $DEEPSEEK_API_KEY` cannot copy a key into the session log.
 */

/** A provider API key name: upper snake case ending in `_API_KEY`, never a `DSH_` variable. */
export const CREDENTIAL_NAME = /^(?!DSH_)[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*_API_KEY$/

export function isCredentialName(name: string): boolean {
  return CREDENTIAL_NAME.test(name)
}

/** Words that mark a variable as secret wherever they stand in its name (`_`-separated). */
const SECRET_WORDS = /(?:^|_)(?:API_?KEY|APIKEY|TOKEN|SECRET|PASSWORD|PASSWD|PASSPHRASE|CREDENTIALS?|PRIVATE_KEY|ACCESS_KEY|AUTH)(?:_|$)/i

/** True for credentials and other secrets (tokens, passwords...) and for every `DSH_*` token. */
export function isSecretVariable(name: string): boolean {
  return isCredentialName(name) || SECRET_WORDS.test(name)
}

/** A copy of `env` without secret variables, for a child process. */
export function scrubbedEnvironment(env: NodeJS.ProcessEnv = process.env, extra: Readonly<Record<string, string>> = {}): Record<string, string> {
  const out: Record<string, string> = {}
  for (const [name, value] of Object.entries(env)) {
    if (value !== undefined && !isSecretVariable(name)) out[name] = value
  }
  return { ...out, ...extra }
}
