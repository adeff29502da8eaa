"""The real Cluster Autoscaler, run with the arguments the stack's chart gives it, against the
real control plane and the world's node groups in moto.

The arguments: the stack's cluster-autoscaler release values rendered by the chart's own
deployment template with the real helm (the chart the CA release tree carries,
charts/cluster-autoscaler; the stack pins chart 9.59.0, the 1.36.1 tree carries 9.58.0, whose
argument rendering, `extraArgs` keys `name_1` as repeated `--name`, is the same), the container's
`command` taken as it is. Then, each a test's need and said here:
- `--kubeconfig`: the chart runs CA in the cluster with its service account; here it runs beside
  the API server with the admin's kubeconfig (RBAC is not what these tests judge);
- `--cloud-config`: moto's endpoints, in the AWS provider's own `[ServiceOverride]` sections
  (cloudprovider/aws/aws_sdk_provider.go), which CA reads where AWS_ENDPOINT_URL is ignored;
- `--scan-interval` and the scale-down times shortened (the stack's are minutes);
- `--leader-elect=false`: one replica;
- `--bypassed-scheduler-names` naming no scheduler any pod uses: CA then does not hold a scale-up
  until the oldest unschedulable GPU pod is 30 s old (core/static_autoscaler.go allPodsAreNew,
  unschedulablePodWithGpuTimeBuffer, a constant). It changes when CA scales, never whether or
  which group: the tests keep their time, and `./dev bench` runs without it to measure the
  real latency.
The environment: credentials, the Region, and AWS_ENDPOINT_URL, which the one client CA builds
from the SDK's bare config honours (cloudprovider/aws/aws_util.go GenerateEC2InstanceTypes:
DescribeInstanceTypes at start, which would otherwise go to AWS's own endpoint and fall back to
CA's static list); every other call goes through the `[ServiceOverride]` sections.
A new instance is unknown to CA until its ASG cache refreshes, once a minute
(cloudprovider/aws/aws_manager.go refreshInterval, a constant): its node cannot be scaled down
before. `restart()` makes CA read its ASGs again at once, as it does on start; `./dev bench`
waits the minute instead.
Its log goes to a file the test reads (CA's reasons are in it and in its pod events).
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aws_cdk.assertions import Template

from gpu_pool.cdk.autoscaling.autoscaler import PRIORITIES_CONFIG_MAP
from tests.e2e.harness.aws_world import InstanceNodes, World
from tests.e2e.harness.cluster import Cluster
from tests.e2e.harness.processes import LoggedProcess, moto_environment
from tests.e2e.harness.scenario import Scenario
from tests.e2e.harness.stack_objects import (
    REGION,
    Release,
    chart_container,
    manifests,
    releases,
)

# Shortened for the tests (the stack renders minutes): how often CA looks, and how soon an
# empty node goes (docs/day2.md has the stack's own).
TEST_TIMINGS = {
    "scan-interval": "1s",
    "scale-down-unneeded-time": "5s",
    "scale-down-delay-after-add": "0s",
    "scale-down-delay-after-delete": "0s",
    "scale-down-delay-after-failure": "1s",
}
# A scheduler name no pod uses (see the module docstring).
NO_SCHEDULER = "gpu-pool-e2e-no-such-scheduler"


def chart_arguments(helm: Path, chart: Path, release: Release, work_dir: Path) -> list[str]:
    """The cluster-autoscaler container's command as the chart renders the release's values."""
    return [str(a) for a in chart_container(helm, chart, release, work_dir)["command"]]


def cloud_config(endpoint: str) -> str:
    """The AWS provider's gcfg config sending EC2, Auto Scaling and EKS to `endpoint`."""
    sections = ["[Global]"]
    for number, service in enumerate(("autoscaling", "ec2", "eks"), start=1):
        sections += [
            f'[ServiceOverride "{number}"]',
            f"Service = {service}",
            f"Region = {REGION}",
            f"URL = {endpoint}",
            f"SigningRegion = {REGION}",
        ]
    return "\n".join(sections) + "\n"


def _with(arguments: list[str], overrides: dict[str, str]) -> list[str]:
    """`arguments` with each override's flag replaced (or added)."""
    kept = [a for a in arguments if a.split("=", 1)[0].lstrip("-") not in overrides]
    return kept + [f"--{name}={value}" for name, value in overrides.items()]


class ClusterAutoscaler(LoggedProcess):
    """One Cluster Autoscaler process: started with `start`, ended with `stop`. `as_deployed`:
    only the three overrides CA needs to run here (kubeconfig, cloud config, one replica), the
    stack's timings and the 30 s wait kept: what `./dev bench` measures."""

    def __init__(
        self,
        binary: Path,
        arguments: list[str],
        kubeconfig: Path,
        endpoint: str,
        work_dir: Path,
        as_deployed: bool = False,
    ) -> None:
        super().__init__("cluster-autoscaler", work_dir)
        self.binary, self.arguments, self.kubeconfig = binary, arguments, kubeconfig
        self.endpoint, self.work_dir, self.as_deployed = endpoint, work_dir, as_deployed

    def command(self) -> list[str]:
        config = self.work_dir / "cloud-config"
        config.write_text(cloud_config(self.endpoint))
        overrides = {
            "kubeconfig": str(self.kubeconfig),
            "cloud-config": str(config),
            "leader-elect": "false",
        }
        if not self.as_deployed:
            overrides |= {**TEST_TIMINGS, "bypassed-scheduler-names": NO_SCHEDULER}
        # The chart's first element is the binary's path in its image.
        return [str(self.binary), *_with(self.arguments[1:], overrides)]

    def start(self) -> ClusterAutoscaler:
        self.launch(self.command(), moto_environment(self.endpoint))
        return self

    def restart(self) -> None:
        """A new process with the same arguments (see the module docstring), its log appended."""
        self.stop()
        self.start()

    def logged(self, pattern: str) -> list[str]:
        """The log lines matching `pattern` (a regular expression), klog's header cut."""
        return [
            line.split("] ", 1)[-1] for line in self.log().splitlines() if re.search(pattern, line)
        ]


@dataclass
class Autoscaled:
    """A running autoscaler over a world, with the bridge that makes its instances Nodes."""

    autoscaler: ClusterAutoscaler
    nodes: InstanceNodes
    cluster: Cluster

    def wait(self, what: str, probe: Any, timeout: float = 60.0) -> Any:
        if self.nodes.last_error is not None:
            what += f" (the instance bridge fails: {self.nodes.last_error!r})"
        return self.autoscaler.wait(what, probe, timeout)

    def event(self, pod: str, reason: str, timeout: float = 60.0) -> str:
        """The message of CA's event `reason` (TriggeredScaleUp, NotTriggerScaleUp) on `pod`:
        this pod's, by its uid (an earlier test's pod of the same name has events too)."""
        uid = self.cluster.core.read_namespaced_pod(pod, "default").metadata.uid

        def found() -> str | None:
            events = self.cluster.core.list_namespaced_event(
                "default", field_selector=f"involvedObject.uid={uid},reason={reason}"
            )
            return next(
                (e.message for e in events.items if e.source.component == "cluster-autoscaler"),
                None,
            )

        return str(self.wait(f"{reason} on pod {pod}", found, timeout))


@contextmanager
def autoscaled(
    cluster: Cluster,
    scenario: Scenario,
    template: Template,
    world: World,
    binary: Path,
    chart: Path,
    *,
    as_deployed: bool = False,
    nodes: bool = True,
) -> Iterator[Autoscaled]:
    """The stack's Cluster Autoscaler over `world`: its priority expander ConfigMap applied
    (naming the world's ASGs), its device plugin releases installed, CA started with the
    chart's arguments, and the instances it launches registering as Nodes; all stopped after.
    `nodes=False`: CA's decisions only (no instance joins, no plugin is installed), for the
    scenarios that judge which group CA scales and by how much."""
    (release,) = [r for r in releases(template) if r.chart == "cluster-autoscaler"]
    for manifest in manifests(template, world.asg_names()):
        if any(o["metadata"]["name"] == PRIORITIES_CONFIG_MAP for o in manifest.objects):
            cluster.apply(manifest.objects, overwrite=manifest.overwrite)
    for plugin in (r for r in releases(template) if r.chart == "nvidia-device-plugin"):
        if nodes:
            scenario.install(plugin)
    work = cluster.work_dir / f"autoscaler-{time.monotonic_ns()}"
    work.mkdir()
    autoscaler = ClusterAutoscaler(
        binary,
        chart_arguments(cluster.helm_binary, chart, release, work),
        cluster.plane.kubeconfig,
        world.endpoint,
        work,
        as_deployed,
    ).start()
    try:
        bridge = InstanceNodes(world, cluster.core, scenario.node)
        if not nodes:
            yield Autoscaled(autoscaler, bridge, cluster)
            return
        with bridge:
            yield Autoscaled(autoscaler, bridge, cluster)
            autoscaler.stop()
    finally:
        autoscaler.stop()
        cluster.core.delete_namespaced_config_map(PRIORITIES_CONFIG_MAP, "kube-system")
