/**
 * MC-9: the environment of a stdio server is the parent environment without credentials, plus the
 * server's own `env`. A server that needs a key gets it by name in its config, never by accident.
 */
import { isSecretVariable } from '../config/credentials.js'

/** Provider and cloud credentials dsh or its peers read. */
export const KNOWN_CREDENTIALS: readonly string[] = [
  'DEEPSEEK_API_KEY', 'OPENAI_API_KEY', 'ANTHROPIC_API_KEY', 'ANTHROPIC_AUTH_TOKEN', 'GEMINI_API_KEY',
  'GOOGLE_API_KEY', 'GOOGLE_APPLICATION_CREDENTIALS', 'MISTRAL_API_KEY', 'GROQ_API_KEY', 'XAI_API_KEY',
  'OPENROUTER_API_KEY', 'TOGETHER_API_KEY', 'FIREWORKS_API_KEY', 'PERPLEXITY_API_KEY', 'COHERE_API_KEY',
  'DASHSCOPE_API_KEY', 'MOONSHOT_API_KEY', 'ZHIPUAI_API_KEY', 'AZURE_OPENAI_API_KEY', 'HF_TOKEN',
  'HUGGING_FACE_HUB_TOKEN', 'AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY', 'AWS_SESSION_TOKEN',
  'GITHUB_TOKEN', 'GH_TOKEN', 'NPM_TOKEN',
]

const KNOWN = new Set(KNOWN_CREDENTIALS)

/** The known names, and anything the shared rule (src/config/credentials.ts) calls a secret. */
export function isCredentialName(name: string): boolean {
  return KNOWN.has(name.toUpperCase()) || isSecretVariable(name)
}

export function scrubbedEnvironment(parent: NodeJS.ProcessEnv, extra: Readonly<Record<string, string>> = {}): Record<string, string> {
  const out: Record<string, string> = {}
  for (const [name, value] of Object.entries(parent)) {
    if (value !== undefined && !isCredentialName(name)) out[name] = value
  }
  return { ...out, ...extra }
}
