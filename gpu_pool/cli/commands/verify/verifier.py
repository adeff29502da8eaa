"""`gpu-pool verify`: run the smoke-test pod and follow it from Pending to Succeeded.

Stages, each printed with its time since submission: Pending -> scale-up decision (Cluster
Autoscaler's TriggeredScaleUp naming the node group, or a new Karpenter NodeClaim for the
pool's NodePool) -> node joined -> node Ready -> allocatable nvidia.com/gpu (or the pool's
share) > 0 -> pod scheduled -> pod succeeded, then the pod's nvidia-smi output. A stage that
stalls past its timeout is classified with its evidence and the fix. A pod bound to a node whose
GPU the EKS node monitoring agent reports unhealthy fails at once, at stage "gpu healthy". The
pod is deleted however the run ends.

A DRA pool's pod claims its GPU through a ResourceClaimTemplate (created first, deleted after),
and after node Ready the stages are the driver's (`DRA_STAGES`): its kubelet plugin running on
the node, the node's GPUs published as ResourceSlices, the pod's ResourceClaim allocated; an
UltraServer pool's two pods then wait for the ComputeDomain's IMEX daemons ("imex ready"), and
pass only when the domain lists both of their nodes Ready and each pod saw its IMEX channel; in
EKS's shape (GPUs through the device plugin, the driver for ComputeDomains only) the same two
pods follow the device plugin's stages up to "imex ready".
"""

from __future__ import annotations

import secrets
import sys
from datetime import timedelta
from typing import Any, TextIO

from kubernetes.client import ApiException

from gpu_pool.cli.command import Clock
from gpu_pool.cli.commands.verify.stalls import StallDiagnosis
from gpu_pool.cli.commands.verify.state import (
    DRA_STAGES,
    IMEX_CHANNEL_SEEN,
    STAGES,
    Failure,
    Run,
    SystemClock,
    Timeouts,
)
from gpu_pool.cli.inspect import karpenter as karpenter
from gpu_pool.cli.inspect.cluster import (
    allocatable,
    as_dict,
    autoscaler_state,
    device_plugin_daemon_sets,
    device_plugin_reaches,
    node_ready,
    ready_since,
)
from gpu_pool.cli.inspect.dra import (
    GPU_DRIVER,
    compute_domain_state,
    efa_stall,
    kubelet_plugin_pods,
    node_devices,
    resource_api,
)
from gpu_pool.cli.inspect.gpu_operator import operator_node_verdict
from gpu_pool.cli.inspect.health import HEALTH_STAGE, gpu_fault, utc_now
from gpu_pool.cli.inspect.rbac import missing_right
from gpu_pool.cli.smoke_test import (
    COMPUTE_DOMAIN_API,
    smoke_resources,
    smoke_test_objects,
    ultraserver,
    uses_dra,
    uses_efa_dra,
)
from gpu_pool.model.labels import DEVICE_PLUGIN_CONFIG_LABEL
from gpu_pool.plan.record import PoolRecord


class Verifier(StallDiagnosis):
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
        self.resource = resource or smoke_resources(pool)[0]
        # An UltraServer pool's test is the IMEX one, whoever advertises its GPUs: the DRA
        # driver, or in EKS's shape the device plugin (its stages up to "gpu allocatable").
        self.dra, self.imex = uses_dra(pool), ultraserver(pool)
        stages = DRA_STAGES if self.dra else STAGES
        self.stages = (*stages, "imex ready") if self.imex else stages
        self.run_name = f"gpu-pool-smoke-test-{secrets.token_hex(3)}"
        self.objects = smoke_test_objects(pool, self.run_name, resource=self.resource)
        self.pod_names = [o["metadata"]["name"] for o in self.objects if o["kind"] == "Pod"]
        # The pod whose events tell the scale-up (the first: an UltraServer test's two pods
        # are scheduled together).
        self.pod_name = self.pod_names[0]
        # resource.k8s.io/v1: a DRA pool's claim template, its claims and ResourceSlices.
        self.dra_api = resource_api(core)

    def run(self) -> int:
        """0 when the pod ran nvidia-smi to success (an UltraServer pool's two pods each saw
        the IMEX channel of one domain over both nodes); 1 with a classified failure otherwise."""
        run = Run(started=self.clock.now())
        created: list[dict[str, Any]] = []
        try:
            run.known_nodes = {n.metadata.name for n in self._pool_nodes()}
            run.known_claims = {c["metadata"]["name"] for c in self._node_claims()}
            for obj in self.objects:
                self._create(obj)
                created.append(obj)
            self._say(run, self._submitted())
            self._follow(run)
            logs = {name: self._pod_log(name) for name in self.pod_names}
            for name, log in logs.items():
                self._say(
                    run,
                    f"pod {name} succeeded; its output:"
                    if self.imex
                    else "pod succeeded; nvidia-smi output:",
                )
                self.out.write(log)
            if self.imex:
                self._check_imex_domain(run, logs)
            self.out.write("\nverify: OK\n")
            return 0
        except Failure as failure:
            self._report(run, failure)
            return 1
        except ApiException as err:
            # A read or write the caller has no right to: the right, not a traceback.
            right = missing_right(err)
            if right is None:
                raise
            self._report(run, Failure(right.cause, [right.message], right.fix))
            return 1
        finally:
            for obj in reversed(created):
                self._delete(obj)

    # -- the smoke test's objects --------------------------------------------------------------

    def _create(self, obj: dict[str, Any]) -> None:
        kind, name = obj["kind"], obj["metadata"]["name"]
        try:
            if kind == "Pod":
                self.core.create_namespaced_pod(self.namespace, obj)
            elif kind == "ResourceClaimTemplate":
                self.dra_api.create_namespaced_resource_claim_template(self.namespace, obj)
            else:
                group, version = COMPUTE_DOMAIN_API.split("/")
                self.custom.create_namespaced_custom_object(
                    group, version, self.namespace, "computedomains", obj
                )
        except ApiException as err:
            if err.status != 404:
                raise
            raise Failure(
                f"the API server does not serve {obj['apiVersion']} {kind}",
                [f"creating {kind} {self.namespace}/{name}: 404 {err.reason}"],
                "ResourceClaimTemplate: Kubernetes 1.34 or later serves resource.k8s.io/v1; "
                "ComputeDomain: the DRA driver's CRD, installed with its ComputeDomains feature "
                "(an UltraServer pool turns it on): redeploy the stack",
                stage="submitted",
            ) from None

    def _delete(self, obj: dict[str, Any]) -> None:
        kind, name = obj["kind"], obj["metadata"]["name"]
        if kind == "Pod":
            self.core.delete_namespaced_pod(name, self.namespace, grace_period_seconds=0)
        elif kind == "ResourceClaimTemplate":
            self.dra_api.delete_namespaced_resource_claim_template(name, self.namespace)
        else:
            group, version = COMPUTE_DOMAIN_API.split("/")
            self.custom.delete_namespaced_custom_object(
                group, version, self.namespace, "computedomains", name
            )
        self.out.write(f"deleted {kind if kind != 'Pod' else 'pod'} {self.namespace}/{name}\n")

    def _submitted(self) -> str:
        where = f"{self.namespace}/{self.pod_name}"
        if self.imex:
            return (
                f"submitted ComputeDomain {self.namespace}/{self.run_name} (2 nodes) and pods "
                f"{', '.join(self.pod_names)}, each claiming its IMEX channel and its node's GPUs"
            )
        if self.dra:
            return f"submitted pod {where} (ResourceClaim of {self.resource}: 1)"
        return f"submitted pod {where} ({self.resource}: 1)"

    # -- following the pod -------------------------------------------------------------------

    def _follow(self, run: Run) -> None:
        while True:
            pods = [self.core.read_namespaced_pod(n, self.namespace) for n in self.pod_names]
            phases = [pod.status.phase for pod in pods]
            nodes = [pod.spec.node_name for pod in pods]
            if all(phase == "Succeeded" for phase in phases):
                # A pod that ran within one poll was scheduled all the same: say where.
                self._mark(run, "scheduled", f"on {', '.join(nodes)}")
                return
            if (unhealthy := self._gpu_fault(nodes)) is not None:
                raise unhealthy
            if "Failed" in phases:
                name = self.pod_names[phases.index("Failed")]
                log = self._pod_log(name)
                raise Failure(
                    "the pod ran but failed" if not self.imex else f"pod {name} ran but failed",
                    [f"container log: {log.strip()[-500:]}"],
                    "its IMEX check found no NVLink fabric or no IMEX channel: the node's "
                    "Fabric state (nvidia-smi -q) must be Completed, and the ComputeDomain's "
                    "channel claim prepared (kubectl describe pod)"
                    if self.imex
                    else "nvidia-smi failed on the node: check the driver with "
                    "`kubectl debug node/<node>` and the AMI type",
                )
            self._mark(run, "pending")
            if self.pool.provisioner == "cluster-autoscaler":
                self._watch_events(run)
            else:
                self._watch_node_claims(run)
            if self.dra:
                self._watch_resource_claims(run, pods)
            if all(nodes):
                self._mark(run, "scheduled", f"on {', '.join(nodes)}")
                if self.imex:
                    self._watch_compute_domain(run)
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

    def _watch_nodes(self, run: Run) -> None:
        for node_obj in self._pool_nodes():
            if node_obj.metadata.name in run.known_nodes:
                continue
            node = as_dict(node_obj)
            run.node = node
            self._mark(run, "node joined", node["metadata"]["name"])
            if node_ready(node)[0]:
                self._mark(run, "node ready", node["metadata"]["name"])
                if self.dra:
                    self._watch_driver(run, node["metadata"]["name"])
                    continue
                count = allocatable(node, self.resource)
                if count > 0:
                    self._mark(run, "gpu allocatable", f"{self.resource}: {count}")

    def _watch_driver(self, run: Run, node: str) -> None:
        """A new DRA node: its kubelet plugin running, then its GPUs published."""
        in_runtime = self.pool.provisioner == "auto-mode"
        stall, gpus = node_devices(
            self.dra_api, node, kubelet_plugin_pods(self.core), self.imex, in_runtime
        )
        if stall is None or stall.stage == "devices published":
            where = "in Auto Mode's node runtime" if in_runtime else "kubelet plugin"
            self._mark(run, "driver running", f"{where} on {node}")
        if stall is None:
            self._mark(run, "devices published", f"{gpus} GPU(s) of {GPU_DRIVER} on {node}")

    def _watch_resource_claims(self, run: Run, pods: list[Any]) -> None:
        """Each pod's ResourceClaims, as the claim controller generated them from the
        templates: "claim allocated" once every one has an allocation."""
        claims = self._resource_claims(pods)
        if claims and all((c.get("status") or {}).get("allocation") for c in claims.values()):
            devices = [
                f"{r['driver']}/{r['pool']}/{r['device']}"
                for c in claims.values()
                for r in c["status"]["allocation"]["devices"].get("results") or []
                if r["driver"] == GPU_DRIVER
            ]
            self._mark(run, "claim allocated", ", ".join(devices))

    def _watch_compute_domain(self, run: Run) -> None:
        domain = compute_domain_state(self.custom, self.namespace, self.run_name)
        status = (domain or {}).get("status") or {}
        run.imex_nodes |= {
            n["name"]: n for n in status.get("nodes") or [] if n.get("status") == "Ready"
        }
        if status.get("status") == "Ready":
            nodes = ", ".join(sorted(run.imex_nodes))
            self._mark(run, "imex ready", f"ComputeDomain {self.run_name} Ready on {nodes}")

    def _pod_log(self, name: str) -> str:
        # The client does not decode text responses (a log comes back as "b'...'"), so read
        # the raw body.
        response = self.core.read_namespaced_pod_log(name, self.namespace, _preload_content=False)
        return str(response.data.decode(errors="replace"))

    def _gpu_fault(self, nodes: list[str | None]) -> Failure | None:
        """The pods' nodes: the first whose GPU the EKS node monitoring agent reports unhealthy
        (AcceleratedHardwareReady not True) is the failed stage, whatever the pod does there."""
        for node in self._pool_nodes() if any(nodes) else []:
            verdict = gpu_fault(self.pool, node) if node.metadata.name in nodes else None
            if verdict is not None:
                return Failure(
                    f"the pod landed on {node.metadata.name}, whose GPU is unhealthy",
                    [verdict.detail],
                    verdict.fix,
                    stage=HEALTH_STAGE,
                )
        return None

    def _ready_pool_nodes(self) -> list[str]:
        return [n.metadata.name for n in self._pool_nodes() if node_ready(as_dict(n))[0]]

    def _ready_pool_nodes_without_gpus(self) -> list[Any]:
        """The pool's nodes Ready for longer than the GPU timeout yet without the resource, where
        a plugin of ours or the GPU Operator's should advertise it (not Auto Mode's or
        Bottlerocket's own): a node Ready for less may still be starting its plugin, or a MIG
        reconfiguration."""
        if (
            self.dra
            or self.pool.gpu_software not in ("device-plugin", "gpu-operator")
            or (self.pool.provisioner == "auto-mode")
        ):
            return []
        settled = utc_now() - timedelta(seconds=self.timeouts.gpu)
        return [
            node
            for node in self._pool_nodes()
            if (since := ready_since(node)) is not None
            and since < settled
            and allocatable(as_dict(node), self.resource) == 0
        ]

    def _plugin_failure(self, node: dict[str, Any]) -> Failure:
        """A Ready node of the pool without the resource: whether its device plugin reaches
        it, or for a GPU Operator pool the operator's first step not taken there, and the fix."""
        if self.pool.gpu_software == "gpu-operator":
            step = operator_node_verdict(self.core, node, self.resource)
            return Failure(
                f"the node is Ready but advertises no {self.resource} (GPU Operator)",
                [f"{node['metadata']['name']}: {step.detail}"],
                step.fix,
            )
        verdict = device_plugin_reaches(node, device_plugin_daemon_sets(self.apps))
        cause = f"the node is Ready but advertises no {self.resource} (device plugin)"
        instead = ", ".join(
            f"{resource}: {count}"
            for resource, count in ((node.get("status") or {}).get("allocatable") or {}).items()
            if resource.startswith("nvidia.com/") and count != "0"
        )
        if verdict.status == "ok" and instead:
            # A sharing pool's plugin that runs without the pool's config advertises whole GPUs.
            name = node["metadata"]["name"]
            return Failure(
                cause,
                [f"{name} advertises {instead} instead", verdict.detail],
                f"the plugin runs without the pool's sharing config: the node's label "
                f"{DEVICE_PLUGIN_CONFIG_LABEL} must be {self.pool.name}, then restart the plugin "
                f"(kubectl -n kube-system rollout restart daemonset "
                f"nvidia-device-plugin-{self.pool.name})",
            )
        return Failure(
            cause,
            [verdict.detail],
            verdict.fix or "the plugin runs there: check its pod logs on the node",
        )

    def _idle_node_failure(self, node: Any) -> Failure:
        """A pool node from before the pod, Ready without the resource: a GPU the agent reports
        unhealthy (the plugin withdraws it), else whether the plugin reaches the node."""
        verdict = gpu_fault(self.pool, node)
        if verdict is None:
            return self._plugin_failure(as_dict(node))
        return Failure(
            f"the pool's node {node.metadata.name} is Ready without {self.resource}: its GPU "
            "is unhealthy",
            [verdict.detail],
            verdict.fix,
            stage=HEALTH_STAGE,
        )

    # -- stalls --------------------------------------------------------------------------------

    def _check_stall(self, run: Run) -> None:
        now = self.clock.now()
        reached = run.reached
        if (
            uses_efa_dra(self.pool)
            and run.node is not None
            and "scheduled" not in reached
            and now - reached.get("node ready", now) > self.timeouts.gpu
            and (stall := efa_stall(self.dra_api, run.node["metadata"]["name"])) is not None
        ):
            raise Failure(stall.cause, [stall.evidence], stall.fix, stage=stall.stage)
        if "scheduled" in reached:
            if now - reached["scheduled"] > self.timeouts.run:
                if self.imex and "imex ready" not in reached:
                    raise self._imex_failure()
                raise Failure(
                    "the pod was scheduled but did not finish",
                    self._pod_event_lines(),
                    "usually a slow image pull: raise --run-timeout, or check the events",
                )
        elif "claim allocated" in reached:
            if now - reached["claim allocated"] > self.timeouts.run:
                raise Failure(
                    "the claim is allocated but the pod was not bound to the node",
                    self._pod_event_lines(),
                    "kubectl describe pod: the scheduler's binding (a device's binding "
                    "conditions) or another of the pod's requirements",
                )
        elif "devices published" in reached:
            if now - reached["devices published"] > self.timeouts.gpu:
                raise self._unallocated_failure()
        elif self.dra and run.node is not None and "node ready" in reached:
            if now - reached["node ready"] > self.timeouts.gpu:
                raise self._dra_node_failure([run.node["metadata"]["name"]])
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
                raise self._plugin_failure(run.node)
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
            # A DRA pool's pod can wait on Ready nodes of the pool from before it: their driver
            # is judged before the autoscaler.
            if self.dra and (standing := self._ready_pool_nodes()):
                raise self._dra_node_failure(standing)
            # So can a device plugin pool's pod on nodes that have been Ready for longer than a
            # plugin takes and advertise no GPU: Cluster Autoscaler counts such a node (it
            # carries the GPU label) as GPU capacity still starting, and scales nothing up;
            # that node's GPU health, then its plugin, are judged first.
            if idle := self._ready_pool_nodes_without_gpus():
                raise self._idle_node_failure(idle[0])
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
                [verdict.detail, *self._unready_pool_nodes(), *self._pod_event_lines()],
                verdict.fix
                or f"read its log: kubectl -n kube-system logs deploy/cluster-autoscaler | "
                f"grep {self.pod_name}",
            )

    def _check_imex_domain(self, run: Run, logs: dict[str, str]) -> None:
        """After both pods succeeded: one IMEX domain over both of their nodes, each Ready
        and in one clique (as seen while the pods ran, or now), and each pod saw channel0."""
        self._watch_compute_domain(run)
        pods = [self.core.read_namespaced_pod(n, self.namespace) for n in self.pod_names]
        nodes = [pod.spec.node_name for pod in pods]
        seen = run.imex_nodes
        problems = [f"node {n}: not Ready in the ComputeDomain" for n in nodes if n not in seen]
        cliques = {seen[n]["cliqueID"] for n in nodes if n in seen}
        if len(cliques) > 1:
            problems.append(f"the nodes are in different cliques: {', '.join(sorted(cliques))}")
        problems += [
            f"pod {name}: no '{IMEX_CHANNEL_SEEN}' in its output"
            for name, log in logs.items()
            if IMEX_CHANNEL_SEEN not in log
        ]
        if problems:
            raise Failure(
                "the pods ran, but not in one IMEX domain over both nodes",
                problems,
                "kubectl get computedomain -o yaml (status.nodes) and the pods' Fabric lines: "
                "both nodes need the same ClusterUUID and CliqueId",
                stage="imex ready",
            )
        self._say(
            run,
            f"IMEX domain over {', '.join(nodes)} (clique {cliques.pop()}); each pod saw "
            "IMEX channel0",
        )

    def _mark(self, run: Run, stage: str, detail: str = "") -> None:
        if stage not in run.reached:
            run.reached[stage] = self.clock.now()
            self._say(run, f"{stage}" + (f": {detail}" if detail else ""))

    def _say(self, run: Run, text: str) -> None:
        self.out.write(f"[{self.clock.now() - run.started:7.1f}s] {text}\n")
        self.out.flush()

    def _report(self, run: Run, failure: Failure) -> None:
        waiting = failure.stage or next(
            (s for s in self.stages if s not in run.reached), "pod succeeded"
        )
        self.out.write(f"verify: FAILED while waiting for '{waiting}': {failure.cause}\n")
        for line in failure.evidence:
            self.out.write(f"  evidence: {line}\n")
        self.out.write(f"  fix: {failure.fix}\n")
