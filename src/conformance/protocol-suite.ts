/**
 * The protocol suite: drives the real `dsh --profile acp` / `dsh --profile sdk` processes with
 * each recorded scenario's input (the replay adapter, swapped in by a patch on the `model` row,
 * supplies the recorded model calls) and compares what they print with the recorded transcripts
 * (`stdout.expected.jsonl` for ACP; `notifications.expected.jsonl` + `result.expected.json` for
 * the SDK), normalised as the corpus INDEX.md describes. What is masked, and why, is listed in
 * docs/protocols.md ("Conformance").
 */
import { conformanceJobs, orderedPool } from './ordered.js'
import { rmSync } from 'node:fs'
import { basename, join, relative } from 'node:path'
import { startRecordedPageServers } from './page-server.js'
import type { ConformanceResult, ConformanceSuite } from './types.js'
import { recreateLspSubjects, recreateOmittedScripts, recreateOmittedSkills, recreateSampledTree } from './workspace.js'
import { type Scenario, findScenarios, type Plan, plan } from './protocol-plan.js'
import { SUITE, scenarioFolders, writePatch } from './protocol-process.js'
import { runAcp } from './protocol-acp.js'
import { runSdk } from './protocol-sdk.js'
import { runHeadlessScenario } from './protocol-headless.js'

export interface ProtocolSuiteOptions {
  /** Only scenario directories whose path contains this string. */
  readonly filter?: string
}

export function protocolSuite(options: ProtocolSuiteOptions = {}): ConformanceSuite {
  return {
    name: SUITE,
    async *run(roots) {
      const scenarios = roots.flatMap(root => findScenarios(root)).filter(scenario => options.filter === undefined || scenario.dir.includes(options.filter))
      // Each scenario is its own dsh process in its own folders: several run at once, reported in order.
      yield* orderedPool(scenarios, conformanceJobs(), scenario => {
        // The subject is the transcript checked (the replay suite reports the same folders).
        const transcript = join(scenario.dir, scenario.kind === 'acp' ? 'stdout.expected.jsonl' : scenario.kind === 'sdk' ? 'notifications.expected.jsonl' : 'stream-json.expected.jsonl')
        return runScenario(scenario, relative(process.cwd(), transcript) || transcript)
      })
    },
  }
}

async function runScenario(scenario: Scenario, path: string): Promise<ConformanceResult> {
  if (scenario.kind === 'headless') return runHeadlessScenario(scenario, path)
  let planned: string | Plan
  try {
    planned = plan(scenario)
  } catch (error) {
    return { suite: SUITE, status: 'fail', path, detail: `cannot read the scenario: ${error instanceof Error ? error.message : String(error)}` }
  }
  if (typeof planned === 'string') return { suite: SUITE, status: 'skip', path, detail: planned }
  const { work, cwd, home } = scenarioFolders('dsh-protocol-', scenario.dir)
  try {
    recreateOmittedScripts(cwd)
    recreateSampledTree(cwd, basename(scenario.dir))
    recreateOmittedSkills(cwd, planned.events)
    recreateLspSubjects(cwd, planned.events)
    const patch = writePatch(planned, work, scenario.kind)
    const env: Record<string, string | undefined> = {
      DSH_HOME: home, DEEPSEEK_API_KEY: undefined, DEEPSEEK_BASE_URL: undefined, DSH_MODEL: undefined,
      // The recorded deployment's permission mode (danger-full-access implies policy never).
      DSH_PERMISSION_MODE: planned.permissionMode,
      DSH_TOOLS_MODE: planned.toolsMode,
      DSH_CORDIS_TOOLS: planned.cordis === true ? '1' : undefined,
      // The original's network: confined commands share the host's (recorded prompts stay equal).
      DSH_NETWORK: 'full',
    }
    // The fetched pages, on the recorded ports (the dsh process fetches the recorded URLs).
    const pages = await startRecordedPageServers(planned.fetched)
    let difference: string | undefined
    try {
      difference = scenario.kind !== 'sdk'
        ? await runAcp(scenario, planned, { cwd, patch, env })
        : await runSdk(scenario, planned, { cwd, patch, env })
    } finally {
      await pages.close()
    }
    if (difference !== undefined) return { suite: SUITE, status: 'fail', path, detail: difference }
    return { suite: SUITE, status: 'pass', path }
  } catch (error) {
    return { suite: SUITE, status: 'fail', path, detail: error instanceof Error ? error.message : String(error) }
  } finally {
    rmSync(work, { recursive: true, force: true })
  }
}

export { floatAnswers, normaliseAcp } from './protocol-acp.js'
export { maskSdk } from './protocol-sdk.js'
