"""Why a `gpu-pool verify` stage stalled (verifier.py beside this): each failure with its
evidence, read from the cluster and AWS, and the fix. A base class of Verifier, which holds the
clients and the run's names this reads."""

from __future__ import annotations

from typing import Any

from gpu_pool.cli.commands.verify.state import Failure, Run, Timeouts
from gpu_pool.cli.inspect import karpenter as karpenter
from gpu_pool.cli.inspect.cluster import as_dict, node_ready, pod_running, pool_selector
from gpu_pool.cli.inspect.dra import (
    compute_domain_state,
    imex_daemon_pods,
    kubelet_plugin_pods,
    node_devices,
)
from gpu_pool.cli.inspect.reserved import reservation_verdict
from gpu_pool.plan.record import PoolRecord


class StallDiagnosis:
    """The failures of the stages that stall, and the cluster reads they rest on."""

    core: Any
    apps: Any
    custom: Any
    autoscaling: Any
    ec2: Any
    dra_api: Any
    pool: PoolRecord
    cluster_name: str
    namespace: str
    timeouts: Timeouts
    resource: str
    run_name: str
    pod_name: str
    pod_names: list[str]
    imex: bool

    def _node_claims(self) -> list[dict[str, Any]]:
        if self.pool.provisioner == "cluster-autoscaler":
            return []
        return karpenter.node_claims(self.custom, self.pool.name)

    def _resource_claims(self, pods: list[Any]) -> dict[str, dict[str, Any]]:
        """The pods' generated ResourceClaims by name; a pod whose claim is not generated yet
        has none here, and the result is then empty (nothing to judge)."""
        found = {}
        for pod in pods:
            statuses = pod.status.resource_claim_statuses or []
            if len(statuses) < len(pod.spec.resource_claims or []):
                return {}
            for status in statuses:
                claim = self.dra_api.read_namespaced_resource_claim(
                    status.resource_claim_name, self.namespace
                )
                found[status.resource_claim_name] = as_dict(claim)
        return found

    def _dra_node_failure(self, nodes: list[str]) -> Failure:
        """The first step of the DRA driver missing on one of the Ready `nodes`; with every
        node's GPUs published, the claim the scheduler could not allocate."""
        plugin_pods = kubelet_plugin_pods(self.core)
        for node in nodes:
            stall, _ = node_devices(
                self.dra_api, node, plugin_pods, self.imex, self.pool.provisioner == "auto-mode"
            )
            if stall is not None:
                return Failure(stall.cause, [stall.evidence], stall.fix, stage=stall.stage)
        return self._unallocated_failure()

    def _unallocated_failure(self) -> Failure:
        """The pod's ResourceClaim has no allocation: the scheduler found no device for it
        (its events say why), or the claim controller has not generated it."""
        pods = [self.core.read_namespaced_pod(n, self.namespace) for n in self.pod_names]
        claims = self._resource_claims(pods)
        if claims:
            evidence = [
                f"ResourceClaim {self.namespace}/{name}: no status.allocation"
                for name, claim in claims.items()
                if not (claim.get("status") or {}).get("allocation")
            ]
        else:
            evidence = [
                "no ResourceClaim generated from the pod's template yet (its "
                "status.resourceClaimStatuses): kube-controller-manager's resourceclaim "
                "controller, or a template that does not exist"
            ]
        return Failure(
            "the claim is unallocated: the scheduler found no device for it",
            evidence + self._pod_event_lines(),
            f"every {self.resource} device the nodes publish may be claimed already (kubectl get "
            f"resourceclaims -A), or the DeviceClass missing (kubectl get deviceclass "
            f"{self.resource}: the driver's GPU feature); the events above give the scheduler's "
            "reason",
            stage="claim allocated",
        )

    def _imex_failure(self) -> Failure:
        """The pods are bound but wait for their IMEX channel: the ComputeDomain's IMEX daemons
        are not ready (its status, and each daemon pod that is not)."""
        domain = compute_domain_state(self.custom, self.namespace, self.run_name)
        where = f"ComputeDomain {self.namespace}/{self.run_name}"
        logs = "kubectl logs -n <driver namespace> <IMEX daemon pod>"
        if domain is None:
            evidence = [f"{where}: not found"]
        else:
            status = domain.get("status") or {}
            nodes = ", ".join(
                f"{n['name']} {n.get('status', 'NotReady')} (clique {n['cliqueID']})"
                for n in status.get("nodes") or []
            )
            evidence = [f"{where}: {status.get('status', 'no status')}; nodes: {nodes or 'none'}"]
            daemons = imex_daemon_pods(self.core, domain["metadata"]["uid"])
            waiting = [p for p in daemons if not pod_running(p)]
            evidence += [
                f"IMEX daemon {p['metadata']['namespace']}/{p['metadata']['name']} on "
                f"{p['spec'].get('nodeName')}: {(p.get('status') or {}).get('phase')}, not ready"
                for p in waiting
            ] or ([] if daemons else ["no IMEX daemon pod for the domain"])
            if waiting:
                first = waiting[0]["metadata"]
                logs = f"kubectl logs -n {first['namespace']} {first['name']}"
        return Failure(
            "the IMEX daemons are not ready (ComputeDomain not Ready)",
            evidence,
            f"the IMEX daemon's log ({logs}); both nodes must be in one NVLink partition (the "
            "same ClusterUUID and CliqueId) with Fabric state Completed (nvidia-smi -q on the "
            "node)",
            stage="imex ready",
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
            [f"{c.subject}: {c.detail}" for c in resources]
            + self._unready_pool_nodes()
            + self._pod_event_lines(),
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

    def _unready_pool_nodes(self) -> list[str]:
        """The pool's nodes that are not Ready, as evidence: each holds a place of the pool's
        maximum size, and one that is still starting may be what the autoscaler waits for."""
        found = []
        for node in map(as_dict, self._pool_nodes()):
            ready, problems = node_ready(node)
            if not ready:
                found.append(f"pool node {node['metadata']['name']}: not Ready: {problems}")
        return found

    def _pool_nodes(self) -> list[Any]:
        return list(self.core.list_node(label_selector=pool_selector(self.pool)).items)

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
