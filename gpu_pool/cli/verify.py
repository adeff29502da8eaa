"""`gpu-pool verify`: run the smoke-test pod and follow it from Pending to Succeeded.

Stages, each printed with its time since submission: Pending -> scale-up decision (Cluster
Autoscaler's TriggeredScaleUp naming the node group, or a new Karpenter NodeClaim for the
pool's NodePool) -> node joined -> node Ready -> allocatable nvidia.com/gpu (or the pool's
share) > 0 -> pod scheduled -> pod succeeded, then the pod's nvidia-smi output. A stage that
stalls past its timeout is classified with its evidence and the fix. The pod is deleted however
the run ends.
"""

from __future__ import annotations

import secrets
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Protocol, TextIO

from gpu_pool.cli.inspect import karpenter as karpenter
from gpu_pool.cli.inspect.cluster import (
    allocatable,
    as_dict,
    autoscaler_state,
    device_plugin_daemon_sets,
    device_plugin_reaches,
    node_ready,
    pool_selector,
)
from gpu_pool.cli.inspect.reserved import reservation_verdict
from gpu_pool.cli.smoke_test import smoke_resources, smoke_test_pod
from gpu_pool.plan.record import PoolRecord

STAGES = ("pending", "scale-up", "node joined", "node ready", "gpu allocatable", "scheduled")


@dataclass(frozen=True)
class Timeouts:
    """Seconds each wait may take before verify classifies the stall."""

    scale_up: float = 180
    node_join: float = 600
    node_ready: float = 300
    gpu: float = 300
    run: float = 900
    poll: float = 5


class Clock(Protocol):
    """Verify's time: it reads it for each stage and sleeps between polls. Tests pass one whose
    sleep advances its time at once, so stalls are reached without waiting."""

    def now(self) -> float: ...

    def sleep(self, seconds: float) -> None: ...


class SystemClock:
    """Real time: monotonic, so a clock change does not fake or hide a stall."""

    def now(self) -> float:
        return time.monotonic()

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)


@dataclass
class Failure(Exception):
    cause: str
    evidence: list[str]
    fix: str


@dataclass
class Run:
    """What has been seen so far, and when."""

    started: float
    reached: dict[str, float] = field(default_factory=dict)
    # Nodes and (Karpenter) NodeClaims of the pool from before the pod: not its scale-up.
    known_nodes: set[str] = field(default_factory=set)
    known_claims: set[str] = field(default_factory=set)
    # The pod's new node once it joined ("node joined" is reached then).
    node: dict[str, Any] | None = None
    scale_up_message: str = ""
    # Karpenter pools: the NodeClaim made for the pod.
    node_claim: dict[str, Any] | None = None


class Verifier:
    def __init__(
        self,
        core: Any,
        apps: Any,
        pool: PoolRecord,
        cluster_name: str,
        namespace: str,
        timeouts: Timeouts,
        out: TextIO | None = None,
        autoscaling: Any = None,
        clock: Clock | None = None,
        custom: Any = None,
        resource: str | None = None,
        ec2: Any = None,
    ) -> None:
        """`autoscaling` (a boto3 client) reads ASG activities when a launch stalls, and `ec2`
        a reserved pool's reservation (not started or ended is its own verdict); `custom`
        (CustomObjectsApi) is needed for a Karpenter pool: NodeClaims and the NodePool are
        custom objects. `resource`: what the smoke pod asks one of (default: the pool's first
        in `smoke_resources`, e.g. a share or a MIG profile)."""
        self.core, self.apps, self.pool, self.custom = core, apps, pool, custom
        self.cluster_name, self.namespace = cluster_name, namespace
        self.timeouts = timeouts
        # Looked up now, not at import: the caller (or a test) may have replaced it.
        self.out = out or sys.stdout
        self.autoscaling, self.ec2 = autoscaling, ec2
        self.clock = clock or SystemClock()
        self.pod_name = f"gpu-pool-smoke-test-{secrets.token_hex(3)}"
        self.resource = resource or smoke_resources(pool)[0]

    def run(self) -> int:
        """0 when the pod ran nvidia-smi to success; 1 with a classified failure otherwise."""
        known_nodes = {n.metadata.name for n in self._pool_nodes()}
        known_claims = {c["metadata"]["name"] for c in self._node_claims()}
        pod = smoke_test_pod(self.pool, self.pod_name, resource=self.resource)
        self.core.create_namespaced_pod(self.namespace, pod)
        run = Run(started=self.clock.now(), known_nodes=known_nodes, known_claims=known_claims)
        self._say(run, f"submitted pod {self.namespace}/{self.pod_name} ({self.resource}: 1)")
        try:
            self._follow(run)
            self._say(run, "pod succeeded; nvidia-smi output:")
            self.out.write(self._pod_log())
            self.out.write("\nverify: OK\n")
            return 0
        except Failure as failure:
            self._report(run, failure)
            return 1
        finally:
            self.core.delete_namespaced_pod(self.pod_name, self.namespace, grace_period_seconds=0)
            self.out.write(f"deleted pod {self.namespace}/{self.pod_name}\n")

    # -- following the pod -------------------------------------------------------------------

    def _follow(self, run: Run) -> None:
        while True:
            pod = self.core.read_namespaced_pod(self.pod_name, self.namespace)
            phase = pod.status.phase
            if phase == "Succeeded":
                return
            if phase == "Failed":
                log = self._pod_log()
                raise Failure(
                    "the pod ran but failed",
                    [f"container log: {log.strip()[-500:]}"],
                    "nvidia-smi failed on the node: check the driver with "
                    "`kubectl debug node/<node>` and the AMI type",
                )
            self._mark(run, "pending")
            if self.pool.provisioner == "cluster-autoscaler":
                self._watch_events(run)
            else:
                self._watch_node_claims(run)
            if pod.spec.node_name:
                self._mark(run, "scheduled", f"on {pod.spec.node_name}")
            else:
                self._watch_nodes(run)
            self._check_stall(run)
            self.clock.sleep(self.timeouts.poll)

    def _watch_events(self, run: Run) -> None:
        for event in self._pod_events():
            if event.reason == "TriggeredScaleUp":
                run.scale_up_message = event.message
                self._mark(run, "scale-up", event.message)
            elif event.reason == "NotTriggerScaleUp" and "scale-up" not in run.reached:
                raise Failure(
                    "Cluster Autoscaler says no node group would help (node template)",
                    [f"event NotTriggerScaleUp: {event.message}"],
                    "its zero-node template comes from the ASG tags: run `gpu-pool doctor` to "
                    "compare them with the pool (GPU count, labels, taint value:Effect)",
                )

    def _watch_node_claims(self, run: Run) -> None:
        for claim in self._node_claims():
            name = claim["metadata"]["name"]
            if name in run.known_claims:
                continue
            run.node_claim = claim
            # Listed by its NodePool label, a claim has labels; the type label comes once
            # Karpenter has chosen the type.
            instance_type = claim["metadata"]["labels"].get(
                "node.kubernetes.io/instance-type", "an instance type not chosen yet"
            )
            self._mark(run, "scale-up", f"Karpenter NodeClaim {name} ({instance_type})")

    def _node_claims(self) -> list[dict[str, Any]]:
        if self.pool.provisioner == "cluster-autoscaler":
            return []
        return karpenter.node_claims(self.custom, self.pool.name)

    def _watch_nodes(self, run: Run) -> None:
        for node_obj in self._pool_nodes():
            if node_obj.metadata.name in run.known_nodes:
                continue
            node = as_dict(node_obj)
            run.node = node
            self._mark(run, "node joined", node["metadata"]["name"])
            if node_ready(node)[0]:
                self._mark(run, "node ready", node["metadata"]["name"])
                count = allocatable(node, self.resource)
                if count > 0:
                    self._mark(run, "gpu allocatable", f"{self.resource}: {count}")

    def _pod_log(self) -> str:
        # The client does not decode text responses (a log comes back as "b'...'"), so read
        # the raw body.
        response = self.core.read_namespaced_pod_log(
            self.pod_name, self.namespace, _preload_content=False
        )
        return str(response.data.decode(errors="replace"))

    def _pool_nodes(self) -> list[Any]:
        return list(self.core.list_node(label_selector=pool_selector(self.pool)).items)

    # -- stalls --------------------------------------------------------------------------------

    def _check_stall(self, run: Run) -> None:
        now = self.clock.now()
        reached = run.reached
        if "scheduled" in reached:
            if now - reached["scheduled"] > self.timeouts.run:
                raise Failure(
                    "the pod was scheduled but did not finish",
                    self._pod_event_lines(),
                    "usually a slow image pull: raise --run-timeout, or check the events",
                )
        elif "gpu allocatable" in reached:
            if now - reached["gpu allocatable"] > self.timeouts.run:
                raise Failure(
                    "the node has a GPU but the pod was not scheduled",
                    self._pod_event_lines(),
                    "another pod may hold the GPU; check `kubectl describe pod`",
                )
        elif run.node is not None and "node ready" in reached:
            if now - reached["node ready"] > self.timeouts.gpu:
                if self.pool.provisioner == "auto-mode":
                    raise Failure(
                        "the node is Ready but advertises no nvidia.com/gpu (Auto Mode's device "
                        "plugin)",
                        [f"{run.node['metadata']['name']}: 0 nvidia.com/gpu allocatable"],
                        "Auto Mode runs the plugin itself (not as a DaemonSet): `kubectl "
                        "describe node`, and an AWS support case if it stays so",
                    )
                verdict = device_plugin_reaches(run.node, device_plugin_daemon_sets(self.apps))
                raise Failure(
                    f"the node is Ready but advertises no {self.resource} (device plugin)",
                    [verdict.detail],
                    verdict.fix or "the plugin runs there: check its pod logs on the node",
                )
        elif run.node is not None:
            if now - reached["node joined"] > self.timeouts.node_ready:
                raise Failure(
                    "the node joined but never became Ready",
                    [f"{run.node['metadata']['name']}: {node_ready(run.node)[1]}"],
                    "look at kubelet on the node (disk pressure, driver): "
                    "`kubectl describe node`, or the EC2 console output",
                )
        elif "scale-up" in reached:
            if now - reached["scale-up"] > self.timeouts.node_join:
                raise self._no_node_failure(run)
        elif now - run.started > self.timeouts.scale_up:
            if self.pool.provisioner != "cluster-autoscaler":
                raise self._no_node_claim_failure()
            verdict = autoscaler_state(self.apps, self.cluster_name)
            cause = (
                "no scale-up event: Cluster Autoscaler is not running or not discovering the ASG"
                if verdict.status == "fail"
                else "no scale-up event although Cluster Autoscaler runs"
            )
            raise Failure(
                cause,
                [verdict.detail, *self._pod_event_lines()],
                verdict.fix
                or f"read its log: kubectl -n kube-system logs deploy/cluster-autoscaler | "
                f"grep {self.pod_name}",
            )

    def _no_node_claim_failure(self) -> Failure:
        """Karpenter made no NodeClaim: its controller is down, or no type of the NodePool
        satisfies the pod (requirements, limits, the EC2NodeClass). Auto Mode's Karpenter runs
        in EKS: its NodePool, NodeClass and the cluster's Auto Mode compute are what to read."""
        resources = karpenter.resource_states(self.custom, self.pool.name, self.pool.provisioner)
        if self.pool.provisioner == "auto-mode":
            return Failure(
                "no NodeClaim: Auto Mode launched nothing for the pod",
                [f"{c.subject}: {c.detail}" for c in resources] + self._pod_event_lines(),
                "read the pod's events (Auto Mode says which requirement failed); check that "
                "the cluster has Auto Mode compute on: aws eks describe-cluster --name "
                f"{self.cluster_name} --query cluster.computeConfig",
            )
        controller = karpenter.controller_state(karpenter.read_controller(self.apps))
        if controller.status == "fail":
            return Failure(
                "no NodeClaim: the Karpenter controller is not running",
                [controller.detail, *self._pod_event_lines()],
                controller.fix,
            )
        return Failure(
            "no NodeClaim although Karpenter runs: the NodePool's requirements, limits or "
            "EC2NodeClass let no instance type serve the pod",
            [f"{c.subject}: {c.detail}" for c in resources] + self._pod_event_lines(),
            "read the pod's events (Karpenter says which requirement failed) and its log: "
            f"kubectl -n kube-system logs deploy/karpenter | grep {self.pod_name}",
        )

    def _no_node_failure(self, run: Run) -> Failure:
        if run.node_claim is not None:
            return self._claim_not_launched(run.node_claim)
        evidence = [f"scale-up: {run.scale_up_message}"]
        reservation = reservation_verdict(self.ec2, self.pool) if self.ec2 is not None else None
        if reservation is not None and reservation.status != "ok":
            return Failure(
                f"the pool's reservation cannot take launches: {reservation.detail}",
                [*evidence, f"{reservation.subject}: {reservation.detail}"],
                reservation.fix,
            )
        if self.autoscaling is not None:
            activities = self.autoscaling.describe_scaling_activities(MaxRecords=20)["Activities"]
            failed = [a for a in activities if a.get("StatusCode") in ("Failed", "Cancelled")]
            if failed:
                evidence += [
                    f"ASG {a['AutoScalingGroupName']}: {a['StatusMessage']}" for a in failed
                ]
                return Failure(
                    "the ASG could not launch an instance (capacity)",
                    evidence,
                    "add zones to pool.zones or instance types to the entry, use capacity "
                    "blocks/reservations, or retry later",
                )
        return Failure(
            "scale-up was decided but no node joined",
            evidence,
            "check the ASG's activity history in the EC2 console (capacity, quotas, subnets)",
        )

    def _claim_not_launched(self, claim: dict[str, Any]) -> Failure:
        """The NodeClaim's instance never joined: its Launched condition says why (capacity,
        IAM), read again now."""
        name = claim["metadata"]["name"]
        current = next((c for c in self._node_claims() if c["metadata"]["name"] == name), claim)
        problem = karpenter.launch_problem(current)
        if problem is not None:
            return Failure(
                "the NodeClaim was not launched (capacity or IAM)",
                [f"NodeClaim {name}: Launched={problem}"],
                "InsufficientCapacity: add instance types or zones to the pool, or use "
                "capacity reservations; UnauthorizedOperation: the controller's IAM (redeploy "
                "the stack)",
            )
        entry = (
            "EC2 access entry with AmazonEKSAutoNodePolicy"
            if self.pool.provisioner == "auto-mode"
            else "EC2_LINUX access entry"
        )
        return Failure(
            "the NodeClaim launched but its node never joined the cluster",
            [f"NodeClaim {name}: {'; '.join(karpenter.not_true(current)) or 'Launched'}"],
            f"the node role's {entry} and the subnets' route to the API server: "
            "`kubectl describe nodeclaim " + name + "`",
        )

    def _pod_events(self) -> list[Any]:
        return list(
            self.core.list_namespaced_event(
                self.namespace, field_selector=f"involvedObject.name={self.pod_name}"
            ).items
        )

    def _pod_event_lines(self) -> list[str]:
        """The pod's last five events, as evidence."""
        return [f"event {e.reason}: {e.message}" for e in self._pod_events()[-5:]]

    # -- output --------------------------------------------------------------------------------

    def _mark(self, run: Run, stage: str, detail: str = "") -> None:
        if stage not in run.reached:
            run.reached[stage] = self.clock.now()
            self._say(run, f"{stage}" + (f": {detail}" if detail else ""))

    def _say(self, run: Run, text: str) -> None:
        self.out.write(f"[{self.clock.now() - run.started:7.1f}s] {text}\n")
        self.out.flush()

    def _report(self, run: Run, failure: Failure) -> None:
        waiting = next((s for s in STAGES if s not in run.reached), "pod succeeded")
        self.out.write(f"verify: FAILED while waiting for '{waiting}': {failure.cause}\n")
        for line in failure.evidence:
            self.out.write(f"  evidence: {line}\n")
        self.out.write(f"  fix: {failure.fix}\n")
