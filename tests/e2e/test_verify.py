"""`gpu-pool verify` and `gpu-pool doctor` against the real API server, as the pipeline's verify
role runs them: its rights are Kubernetes' own RBAC evaluating the ClusterRole and Role the
stack renders (gpu_pool/cdk/cluster/verifier.py), bound here to a ServiceAccount whose token
verify presents, plus Kubernetes' `edit` role in the smoke namespace (what EKS's
AmazonEKSEditPolicy grants: EKS user guide, "Review access policy permissions"). The scheduler
binds the smoke pod to the pool's GPU node once the device plugin runs there; kwok runs it and
serves its log through the kubelet API (tests/e2e/harness/control_plane.py). The stack binds
its roles to a Kubernetes group an EKS access entry maps the IAM role to; a ServiceAccount
cannot be in such a group, so the bindings here name the ServiceAccount instead."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import yaml

from gpu_pool.cdk.cluster.verifier import verify_reads_manifest, verify_writes_manifest
from gpu_pool.model.versions import NVIDIA_GPU_OPERATOR
from tests.e2e.harness.cluster import Cluster
from tests.e2e.harness.nodes import DEVICE_PLUGIN_IMAGE
from tests.e2e.harness.pools import device_plugin, gpu_pool, pool_node
from tests.e2e.harness.scenario import daemon_set_settled
from tests.e2e.harness.stack_objects import Release, releases
from tests.support.cfn import synth
from tests.support.node_health import agent_reason
from tests.support.settings import OPERATOR, SHARING

pytestmark = pytest.mark.e2e

NODE = "ip-10-0-1-5.ec2.internal"
POOL = "gpu"

ACCOUNT = "gpu-pool-verify"
NAMESPACE = "default"
# Real time, short: the cluster answers in seconds.
TIMEOUTS = [
    "--poll-interval",
    "0.5",
    "--scale-up-timeout",
    "20",
    "--node-join-timeout",
    "20",
    "--node-ready-timeout",
    "20",
    "--gpu-timeout",
    "20",
    "--run-timeout",
    "20",
]


# A pool node from before the pod is judged once the pod has waited 3 s beside it, Ready for
# over 1 s (longer than a plugin takes: not merely starting).
STANDING_NODE_TIMEOUTS = [*TIMEOUTS, "--scale-up-timeout", "3", "--gpu-timeout", "1"]
XID79_MESSAGE = "detected XID-79 on the instance, review kernel logs for additional information."


def _xid79_fault(ago: timedelta) -> dict:
    """AcceleratedHardwareReady False for XID 79, as the EKS node monitoring agent writes it,
    set `ago` before now: dated against real time, as verify and doctor read its age with the
    real clock."""
    now = datetime.now(UTC)
    return {
        "type": "AcceleratedHardwareReady",
        "status": "False",
        "reason": agent_reason("AcceleratedHardwareReady", "NvidiaXIDError", 79),
        "message": XID79_MESSAGE,
        "lastHeartbeatTime": now.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "lastTransitionTime": (now - ago).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }


def _binding(kind: str, role_kind: str, role: str, namespace: str | None = None) -> dict:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": kind,
        "metadata": {
            "name": f"{role}-{ACCOUNT}",
            **({"namespace": namespace} if namespace else {}),
        },
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": role},
        "subjects": [{"kind": "ServiceAccount", "name": ACCOUNT, "namespace": NAMESPACE}],
    }


@pytest.fixture(scope="module")
def verify_kubeconfig(cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A kubeconfig holding a token of the ServiceAccount bound to the verify role's rights."""
    roles = verify_reads_manifest("Test") + verify_writes_manifest("Test", NAMESPACE)
    cluster.apply([o for o in roles if o["kind"] in ("ClusterRole", "Role")])
    (cluster_role,) = [o["metadata"]["name"] for o in roles if o["kind"] == "ClusterRole"]
    (role,) = [o["metadata"]["name"] for o in roles if o["kind"] == "Role"]
    cluster.apply(
        [
            {
                "apiVersion": "v1",
                "kind": "ServiceAccount",
                "metadata": {"name": ACCOUNT, "namespace": NAMESPACE},
            },
            _binding("ClusterRoleBinding", "ClusterRole", cluster_role),
            _binding("RoleBinding", "Role", role, NAMESPACE),
            _binding("RoleBinding", "ClusterRole", "edit", NAMESPACE),
        ]
    )
    token = cluster.core.create_namespaced_service_account_token(
        ACCOUNT, NAMESPACE, {"spec": {"expirationSeconds": 3600}}
    ).status.token
    assert cluster.plane.pki is not None
    path = tmp_path_factory.mktemp("verify") / "kubeconfig"
    path.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [
                    {
                        "name": "e2e",
                        "cluster": {
                            "server": cluster.plane.server,
                            "certificate-authority": str(cluster.plane.pki.ca_cert),
                        },
                    }
                ],
                "users": [{"name": ACCOUNT, "user": {"token": token}}],
                "contexts": [{"name": "e2e", "context": {"cluster": "e2e", "user": ACCOUNT}}],
                "current-context": "e2e",
            }
        )
    )
    return path


def test_verify_runs_the_smoke_pod_on_the_pools_gpu_with_the_verify_roles_rights(
    cluster, scenario, default_template, verify_kubeconfig
):
    scenario.install(device_plugin(default_template))
    scenario.node(pool_node(default_template, POOL, NODE))
    code, out, err = gpu_pool(
        "verify", "--kubeconfig", str(verify_kubeconfig), "--pool", POOL, *TIMEOUTS
    )
    assert (code, err) == (0, ""), out
    lines = out.splitlines()
    pod = lines[0].split()[4]
    assert [re.sub(r"^\[\s*[\d.]+s\] ", "", line) for line in lines if line.startswith("[")] == [
        f"submitted pod {pod} (nvidia.com/gpu: 1)",
        "pending",
        "scheduled: on ip-10-0-1-5.ec2.internal",
        "pod succeeded; nvidia-smi output:",
    ], out
    # The log the kubelet API served for the pod's container, through the API server.
    assert "|   0  NVIDIA A10G" in out
    assert lines[-2:] == ["verify: OK", f"deleted pod {pod}"]
    # verify deleted its pod, as it promises however the run ends.
    pods = cluster.core.list_namespaced_pod(
        NAMESPACE, label_selector="app.kubernetes.io/name=gpu-pool-smoke-test"
    )
    assert [p.metadata.name for p in pods.items if not p.metadata.deletion_timestamp] == []


def test_verify_names_the_plugin_that_does_not_tolerate_the_pools_taint(
    cluster, scenario, default_template, verify_kubeconfig
):
    """The broken twin: the plugin's DaemonSet without the pool's toleration. The real
    controllers leave the pool's node without a plugin pod and without GPUs, and verify, reading
    with the verify role's rights only, names the plugin, not the autoscaler (which, seeing a
    GPU-labelled node without GPUs, would wait for it rather than scale up). Before this ran on
    a real cluster, verify skipped nodes older than its pod and blamed Cluster Autoscaler."""
    plugin = device_plugin(default_template)
    values = {
        **plugin.values,
        "tolerations": [t for t in plugin.values["tolerations"] if t["key"] != "nvidia.com/gpu"],
    }
    scenario.install(Release(**{**plugin.__dict__, "values": values}))
    scenario.node(pool_node(default_template, POOL, NODE))
    code, out, err = gpu_pool(
        "verify",
        "--kubeconfig",
        str(verify_kubeconfig),
        "--pool",
        POOL,
        "--poll-interval",
        "0.5",
        "--scale-up-timeout",
        "3",
        # The node has been Ready longer than a plugin takes (not merely starting): judged.
        "--gpu-timeout",
        "1",
    )
    assert (code, err) == (1, ""), out
    report = out.splitlines()[2:5]
    assert report == [
        "verify: FAILED while waiting for 'scale-up': the node is Ready but advertises no "
        "nvidia.com/gpu (device plugin)",
        "  evidence: no device plugin DaemonSet would run on ip-10-0-1-5.ec2.internal: "
        "nvidia-device-plugin-gpu: does not tolerate nvidia.com/gpu=true:NoSchedule; "
        "nvidia-device-plugin-gpu-mps-control-daemon: nodeSelector {'gpu-pool.io/pool': 'gpu', "
        "'nvidia.com/mps.capable': 'true'} does not match",
        "  fix: its nodeSelector must match the node's gpu-pool.io/pool label and its tolerations "
        "the pool's taints (redeploy the stack; `gpu-pool doctor` shows the DaemonSet)",
    ], out


def test_doctor_reads_the_pool_and_a_gpu_fault_on_the_real_cluster(
    cluster, scenario, default_template
):
    """doctor on the real cluster: the pool's node and its GPUs, the plugin's DaemonSet as the
    DaemonSet controller reports it, and a GPU fault as the EKS node monitoring agent reports it
    (a node condition, written through the node's status as the agent writes it). The
    autoscaler is not in this cluster (the next issue's), which doctor says."""
    scenario.install(device_plugin(default_template))
    node = scenario.node(pool_node(default_template, POOL, NODE))
    cluster.wait_for(
        "the node's GPUs",
        lambda: (cluster.core.read_node(node).status.allocatable or {}).get("nvidia.com/gpu"),
    )
    assert daemon_set_settled(cluster, "nvidia-device-plugin-gpu").number_ready == 1
    # Set 4.5 minutes ago by the agent.
    fault = _xid79_fault(timedelta(minutes=4, seconds=30))
    cluster.core.patch_node_status(node, {"status": {"conditions": [fault]}})
    code, out, err = gpu_pool("doctor", "--kubeconfig", str(cluster.plane.kubeconfig))
    assert (code, err) == (1, ""), out
    lines = out.splitlines()
    assert lines[:3] == [
        f"[  ok] node {node}: Ready, nvidia.com/gpu: 1",
        "[  ok] DaemonSet nvidia-device-plugin-gpu: 1/1 ready",
        "[  ok] DaemonSet nvidia-device-plugin-gpu-mps-control-daemon: 0/0 ready",
    ], out
    assert "[fail] autoscaler: no Deployment cluster-autoscaler in kube-system" in lines
    assert (
        f"[fail] health {node}: AcceleratedHardwareReady=False for 4 min: NvidiaXID79Error "
        f"({XID79_MESSAGE}); repair will replace it after 10 min"
    ) in lines, out


def _settings_file(tmp_path: Path, settings: dict) -> str:
    path = tmp_path / "settings.yaml"
    path.write_text(yaml.safe_dump(settings))
    return str(path)


def _operator_plugin_pod(node: str) -> dict:
    """The pod the GPU Operator's device plugin DaemonSet runs on `node` (NVIDIA/gpu-operator
    v26.3.1 assets/state-device-plugin/0500_daemonset.yaml: its app label, the plugin's image
    and the GPU taint's toleration), bound to the node as a DaemonSet's pod is."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "nvidia-device-plugin-daemonset-x7k2p",
            "labels": {"app": "nvidia-device-plugin-daemonset"},
        },
        "spec": {
            "nodeName": node,
            "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists"}],
            "containers": [
                {"name": "nvidia-device-plugin", "image": f"{DEVICE_PLUGIN_IMAGE}:v0.19.0"}
            ],
        },
    }


@pytest.mark.parametrize("labelled", [True, False], ids=["labelled", "operator-has-not-labelled"])
def test_verify_on_a_gpu_operator_pool_follows_the_operators_plugin(
    cluster, scenario, tmp_path, verify_kubeconfig, labelled
):
    """A GPU Operator pool's node: gpu-pool's plugin releases do not serve it. Where the
    operator labelled it for its device plugin and the plugin's pod runs there, the smoke pod
    runs on its GPU; the broken twin, a node the operator has not labelled (so no plugin pod),
    is named with the operator's step, read through the verify role's rights (nodes' labels,
    and the operator namespace's pods by node) from the real API server."""
    node = pool_node(synth(OPERATOR), POOL, NODE)
    node["metadata"]["labels"]["feature.node.kubernetes.io/pci-10de.present"] = "true"
    if labelled:
        node["metadata"]["labels"]["nvidia.com/gpu.deploy.device-plugin"] = "true"
    scenario.node(node)
    if labelled:
        namespace = NVIDIA_GPU_OPERATOR.namespace
        if not cluster.core.list_namespace(field_selector=f"metadata.name={namespace}").items:
            cluster.core.create_namespace({"metadata": {"name": namespace}})
        scenario.pod(_operator_plugin_pod(NODE), namespace)
    settings = ["--config", _settings_file(tmp_path, OPERATOR)]
    timeouts = TIMEOUTS if labelled else STANDING_NODE_TIMEOUTS
    code, out, err = gpu_pool(
        "verify", "--kubeconfig", str(verify_kubeconfig), *settings, "--pool", POOL, *timeouts
    )
    if labelled:
        assert (code, err) == (0, ""), out
        assert "scheduled: on ip-10-0-1-5.ec2.internal" in out
        return
    assert (code, err) == (1, ""), out
    start = out.splitlines().index(
        "verify: FAILED while waiting for 'scale-up': the node is Ready but advertises no "
        "nvidia.com/gpu (GPU Operator)"
    )
    assert out.splitlines()[start + 1 : start + 3] == [
        f"  evidence: {NODE}: the GPU Operator has not labelled it "
        "nvidia.com/gpu.deploy.device-plugin=true, so its device plugin does not run there",
        "  fix: kubectl get clusterpolicies -o jsonpath='{.items[0].status}' and kubectl -n "
        "gpu-operator logs deploy/gpu-operator",
    ], out


def test_verify_runs_the_smoke_pod_on_a_time_sliced_share(
    cluster, scenario, tmp_path, verify_kubeconfig
):
    """The renamed-share pool (tests/support/settings.py SHARING): its plugin release, with
    the pool's config, makes the node advertise 8 nvidia.com/gpu.shared and no whole GPU;
    verify asks for one share and the scheduler binds the pod there."""
    template = synth(SHARING)
    (plugin,) = [r for r in releases(template) if r.release == "nvidia-device-plugin-shared"]
    scenario.install(plugin)
    scenario.node(pool_node(template, "shared", NODE))
    settings = ["--config", _settings_file(tmp_path, SHARING)]
    code, out, err = gpu_pool(
        "verify", "--kubeconfig", str(verify_kubeconfig), *settings, "--pool", "shared", *TIMEOUTS
    )
    assert (code, err) == (0, ""), out
    stages = [re.sub(r"^\[\s*[\d.]+s\] ", "", line) for line in out.splitlines()]
    assert stages[0].endswith("(nvidia.com/gpu.shared: 1)"), out
    assert f"scheduled: on {NODE}" in stages, out


def test_verify_names_a_standing_nodes_faulty_gpu_before_its_plugin(
    cluster, scenario, default_template, verify_kubeconfig
):
    """A pool node whose GPU the EKS node monitoring agent reports faulty (its condition, as
    the agent writes it) and which advertises none (the plugin withdraws an unhealthy GPU; no
    plugin runs here): verify, with the verify role's rights, names the fault at the health
    stage, not the plugin or the autoscaler."""
    node = scenario.node(pool_node(default_template, POOL, NODE))
    fault = _xid79_fault(timedelta(0))
    cluster.core.patch_node_status(node, {"status": {"conditions": [fault]}})
    code, out, err = gpu_pool(
        "verify",
        "--kubeconfig",
        str(verify_kubeconfig),
        "--pool",
        POOL,
        *STANDING_NODE_TIMEOUTS,
    )
    assert (code, err) == (1, ""), out
    lines = out.splitlines()
    start = lines.index(
        f"verify: FAILED while waiting for 'gpu healthy': the pool's node {NODE} is Ready "
        "without nvidia.com/gpu: its GPU is unhealthy"
    )
    assert lines[start + 1].startswith(
        f"  evidence: AcceleratedHardwareReady=False for 0 min: NvidiaXID79Error ({XID79_MESSAGE})"
    ), out
