"""Print cdk-nag's result from a synth's validation report: the verdict, then each finding,
open or acknowledged, with its reason. Exits 1 if any finding is open or a pack failed to run
(CDK records a pack's own error in the report and goes on)."""

import json
import sys
from pathlib import Path


def main(path: str = "cdk.out/validation-report.json") -> int:
    report = json.loads(Path(path).read_text(encoding="utf-8"))
    open_findings = 0
    for plugin in report["pluginReports"]:
        error = plugin.get("metadata", {}).get("error")
        if error:
            print(f"cdk-nag {plugin['pluginName']}: did not run: {error}")
            open_findings += 1
            continue
        violations = plugin.get("violations", [])
        acknowledged = plugin.get("suppressedViolations", [])
        open_findings += len(violations)
        print(
            f"cdk-nag {plugin['pluginName']}: {plugin['conclusion']}, "
            f"{len(violations)} open, {len(acknowledged)} acknowledged"
        )
        for finding in violations:
            paths = ", ".join(c["constructPath"] for c in finding["violatingConstructs"])
            print(f"  OPEN {finding['ruleName']} at {paths}")
        for finding in acknowledged:
            print(f"  ack  {finding['ruleName']}: {finding['reason']}")
    return 1 if open_findings else 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
