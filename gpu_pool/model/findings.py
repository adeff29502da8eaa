"""A finding: one problem with the settings, naming the rule, the setting, what is wrong and
what to do.

Errors stop the synth (deploying would not work); warnings become CDK warning annotations (it
works, but costs money or time). cdk/report.py turns findings into either.

Each rule has a stable id, `GP-<AREA>-<NN>` (as cdk-nag's rules have `AwsSolutions-IAM4`): the
area names the module of gpu_pool/checks it lives in (POOL, PAIR between pools, APP, CTRL
controllers, KARP, AUTO Auto Mode, NODEPOOL, TARGET, SYNTAX, SHARE sharing, TRAIN training
pools, METRICS, DRA the NVIDIA DRA driver, EFA the EFA DRA driver, ULTRA UltraServer pools,
CATALOG the GPU catalog, CONFIG config files, LIB what a library app's cluster must offer, KEY a
node group or Karpenter pool's volume key, STORE the instance store). A warning's CDK annotation
id is `gpu-pool:<id>`, so an app can acknowledge one by it; docs/guardrails.md lists every id.
An id is never reused for another rule.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

RULE_ID = re.compile(r"^GP-[A-Z]+-[0-9]{2}$")
# The cloud assembly metadata type of a finding about a fact the synth could not check
# (gpu_pool/cdk/lookups/context.py writes it, gpu_pool/cli/commands/replacements/unchecked.py
# refuses to deploy on it).
UNCHECKED_METADATA = "gpu-pool:unchecked"


@dataclass(frozen=True)
class Finding:
    rule: str
    setting: str
    message: str
    error: bool

    def __str__(self) -> str:
        return f"{self.setting}: {self.message}"


def error(rule: str, setting: str, message: str) -> Finding:
    return Finding(rule, setting, message, True)


def warning(rule: str, setting: str, message: str) -> Finding:
    return Finding(rule, setting, message, False)
