// Runs a batch of IAM policy simulations with @cloud-copilot/iam-simulate (pinned in
// package.json): a JSON array of the package's Simulation objects on stdin (its README gives
// their shape), a JSON array of outcomes on stdout in the same order. One process per test
// session, since Node's start-up is the slow part. Used by tests/support/iam_simulation.py.
import { runSimulation } from '@cloud-copilot/iam-simulate'

const chunks = []
for await (const chunk of process.stdin) chunks.push(chunk)
const simulations = JSON.parse(Buffer.concat(chunks).toString('utf8'))

const outcomes = []
for (const simulation of simulations) {
  // Strict: the request is evaluated exactly as given; a missing context key is absent.
  const response = await runSimulation(simulation, { simulationMode: 'Strict' })
  if (response.resultType !== 'single') {
    const errors = response.resultType === 'error' ? response.errors : 'a wildcard resource'
    outcomes.push({ result: 'Error', errors })
    continue
  }
  const identity = response.result.analysis.identityAnalysis
  outcomes.push({
    // Allowed, ImplicitlyDenied or ExplicitlyDenied
    result: response.overallResult,
    // Keys the request gave that do not apply to this action and resource type.
    ignoredContextKeys: response.result.ignoredContextKeys ?? [],
    allowedBy: (identity?.allowStatements ?? []).map((s) => ({
      policy: s.policyId,
      sid: s.statement.Sid ?? null,
    })),
  })
}
process.stdout.write(JSON.stringify(outcomes))
