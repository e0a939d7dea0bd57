/**
 * The model-visible texts of code mode: the `run_code` schema, the code-only rule and the head
 * of the SDK section (docs/code-mode.md). They are the recorded ones, byte for byte.
 */
import type { ToolSchema } from '../llm/types.js'

export const RUN_CODE = 'run_code'

export const RUN_CODE_DESCRIPTION = "Execute a TypeScript program against the available tools. Takes two required arguments: `code`, the BODY of an async function (erasable syntax only; top-level `await` and `return` work), and `description`, a short summary of what the program does. Call tools as `await tools.name(args)` per the declarations in the system prompt. Only what you print or return is program output — curate it. Image-bearing subtool results are attached after the run."

export const RUN_CODE_PARAMETERS: ToolSchema['parameters'] = Object.freeze({
  "type": "object",
  "properties": {
    "code": {
      "type": "string",
      "description": "The program: the body of an async TypeScript function."
    },
    "description": {
      "type": "string",
      "description": "Clear, concise description of what this program does in active voice, 5-10 words (shown in the UI). Examples: \"Count TODO markers across packages\"; \"Read failing test and its fixture\"; \"Rename config key in every cordis.yml\"."
    }
  },
  "required": [
    "code",
    "description"
  ]
})

/** `tools:code-only` (order 99): under `code`, right after the persona. */
export const CODE_ONLY_TEXT = "`run_code` is the only tool you can call directly — a tool call naming any other tool fails. Reach every tool the SDK declares below from inside the program."

/** The head of `tools:sdk` (order 150); the declarations follow in a `ts` block. */
export const SDK_HEAD = "## Writing code for run_code\n\n`run_code` takes two required arguments: `code` — the body of an async TypeScript function (erasable syntax only — no `enum` or namespaces; type annotations are advisory, the code runs type-stripped) — and `description`, a short summary of what the program does. Inside the program:\n\n- Call tools as `await tools.name(args)` — quoted access for exotic names: `tools[\"my-tool\"](args)`. Every call resolves to the tool's typed canonical JSON value. Tool arguments must be lossless JSON.\n- A FAILED tool call rejects with `ToolCallError`, whose `toolName` identifies the failed tool and whose `message` is human-readable — `try/catch` it to handle and continue.\n- Independent read-only calls MAY overlap under `Promise.all` (safe calls run concurrently; mutating calls run alone, in submission order). Sequence dependent work with `await`.\n- Emit results with `return` and/or `console.log(...)`. Only what you print or return is program output. A successful tool result containing an image is attached after the run so you can inspect it on the next step; every other intermediate result stays out of the conversation, so extract just what you need.\n\nThe available tools:"

/** A direct call to another tool under `code`, refused before any policy runs. */
export const codeOnlyRefusal = (name: string) => `unknown tool ${JSON.stringify(name)}: only \`run_code\` is callable directly — call \`${name}\` from inside a \`run_code\` program instead`
