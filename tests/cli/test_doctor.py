"""Every verdict `gpu-pool doctor` can give, each from the state that produces it, with its exit
code: the local fake API server for Kubernetes, botocore's Stubber for AWS."""

from __future__ import annotations

import pytest

from tests.support.aws_stubs import asg_group, stubbed
from tests.support.command import run
from tests.support.fake_kube import Scenario, autoscaler, daemon_set, deployment, node

CLUSTER = "gpu-pool"
GPU_TAG = "k8s.io/cluster-autoscaler/node-template/resources/nvidia.com/gpu"
TAINT_TAG = "k8s.io/cluster-autoscaler/node-template/taint/nvidia.com/gpu"
LABEL_TAG = "k8s.io/cluster-autoscaler/node-template/label/gpu-pool.io/pool"


def _aws(tags: dict[str, str] | None, instance_types=("g5.xlarge",)):
    """AWS clients showing one ASG with `tags` (None: no ASG at all)."""
    groups = [] if tags is None else [asg_group("eks-GpuPoolG5Xlarge-4ac9", tags)]
    autoscaling = stubbed(
        "autoscaling",
        [
            (
                "describe_auto_scaling_groups",
                {"AutoScalingGroups": groups},
                {"Filters": [{"Name": "tag:eks:cluster-name", "Values": [CLUSTER]}]},
            )
        ],
    )
    described = (
        [
            (
                "describe_nodegroup",
                # What DescribeNodegroup says of the group now: its labels and taints.
                {
                    "nodegroup": {
                        "instanceTypes": list(instance_types),
                        "labels": {"gpu-pool.io/pool": "gpu"},
                        "taints": [
                            {"key": "nvidia.com/gpu", "value": "true", "effect": "NO_SCHEDULE"}
                        ],
                    }
                },
                {"clusterName": CLUSTER, "nodegroupName": "GpuPoolG5Xlarge-abc"},
            )
        ]
        if tags and "eks:nodegroup-name" in tags
        else []
    )
    clients = {"autoscaling": autoscaling, "eks": stubbed("eks", described)}
    return clients.__getitem__


GOOD_TAGS = {
    "eks:nodegroup-name": "GpuPoolG5Xlarge-abc",
    GPU_TAG: "1",
    TAINT_TAG: "true:NoSchedule",
}
UNKNOWN_READY = [{"type": "Ready", "status": "Unknown", "message": "Kubelet stopped posting"}]

CASES = {
    # (scenario, AWS tags or None for no credentials, the verdict line, exit code)
    "pool-at-zero": (
        Scenario(nodes=[]),
        GOOD_TAGS,
        "[  ok] pool gpu: no nodes: the pool is at zero",
        0,
    ),
    "node-ready-with-gpus": (
        Scenario(nodes=[(0, node())]),
        GOOD_TAGS,
        "[  ok] node ip-10-0-1-5.ec2.internal: Ready, nvidia.com/gpu: 1",
        0,
    ),
    "node-not-ready": (
        Scenario(nodes=[(0, node(ready=False))]),
        GOOD_TAGS,
        "[fail] node ip-10-0-1-5.ec2.internal: not Ready: Ready=False: container runtime network "
        "not ready",
        1,
    ),
    "node-ready-unknown": (
        Scenario(nodes=[(0, node(conditions=UNKNOWN_READY))]),
        GOOD_TAGS,
        "[fail] node ip-10-0-1-5.ec2.internal: not Ready: Ready=Unknown: Kubelet stopped posting",
        1,
    ),
    "node-without-gpus": (
        Scenario(nodes=[(0, node(gpus=0))], daemon_sets=[daemon_set(tolerations=[])]),
        GOOD_TAGS,
        "[fail] node ip-10-0-1-5.ec2.internal: Ready, but 0 nvidia.com/gpu; no device plugin "
        "DaemonSet would run on ip-10-0-1-5.ec2.internal: nvidia-device-plugin-gpu: does not "
        "tolerate nvidia.com/gpu=true:NoSchedule",
        1,
    ),
    "plugin-rolled-out": (
        Scenario(daemon_sets=[daemon_set(desired=2, ready=2)]),
        GOOD_TAGS,
        "[  ok] DaemonSet nvidia-device-plugin-gpu: 2/2 ready",
        0,
    ),
    "plugin-partly-ready": (
        Scenario(daemon_sets=[daemon_set(desired=2, ready=1)]),
        GOOD_TAGS,
        "[fail] DaemonSet nvidia-device-plugin-gpu: 1/2 ready",
        1,
    ),
    "plugin-missing": (
        Scenario(daemon_sets=[]),
        GOOD_TAGS,
        "[fail] device plugin: no DaemonSet labelled app.kubernetes.io/name=nvidia-device-plugin "
        "in kube-system",
        1,
    ),
    "autoscaler-missing": (
        Scenario(autoscaler=None),
        GOOD_TAGS,
        "[fail] autoscaler: no Deployment cluster-autoscaler in kube-system",
        1,
    ),
    "autoscaler-not-ready": (
        Scenario(autoscaler=autoscaler(ready=0)),
        GOOD_TAGS,
        "[fail] autoscaler: cluster-autoscaler has no ready replica",
        1,
    ),
    # #47 item 3: an autoscaler of the cluster's own cannot be seen from AWS.
    "a-second-cluster-autoscaler": (
        Scenario(
            deployments=[
                deployment(
                    "autoscaling",
                    "platform-autoscaler",
                    "registry.k8s.io/autoscaling/cluster-autoscaler:v1.33.0",
                )
            ]
        ),
        GOOD_TAGS,
        "[fail] autoscaler: a second autoscaler runs beside gpu-pool's kube-system/"
        "cluster-autoscaler: autoscaling/platform-autoscaler (Cluster Autoscaler); both would "
        "add nodes for the same pending pods",
        1,
    ),
    "a-karpenter-beside-the-autoscaler": (
        Scenario(
            deployments=[
                deployment("karpenter", "karpenter", "public.ecr.aws/karpenter/controller:1.8.1")
            ]
        ),
        GOOD_TAGS,
        "[fail] autoscaler: a second autoscaler runs beside gpu-pool's kube-system/"
        "cluster-autoscaler: karpenter/karpenter (Karpenter); both would add nodes for the "
        "same pending pods",
        1,
    ),
    # #53 item 12: an autoscaler pinned by digest, or pulled through a mirror with a port, is
    # still one (the port's colon was once taken for a tag's, and the image went unseen).
    "a-second-cluster-autoscaler-by-digest-from-a-mirror": (
        Scenario(
            deployments=[
                deployment(
                    "autoscaling",
                    "platform-autoscaler",
                    "mirror.example.com:5000/autoscaling/cluster-autoscaler@sha256:" + "0" * 64,
                )
            ]
        ),
        GOOD_TAGS,
        "[fail] autoscaler: a second autoscaler runs beside gpu-pool's kube-system/"
        "cluster-autoscaler: autoscaling/platform-autoscaler (Cluster Autoscaler); both would "
        "add nodes for the same pending pods",
        1,
    ),
    # gpu-pool's own autoscaler absent: its own verdict says so; the other is no "second".
    "only-another-autoscaler": (
        Scenario(
            autoscaler=None,
            deployments=[
                deployment(
                    "autoscaling",
                    "platform-autoscaler",
                    "registry.k8s.io/autoscaling/cluster-autoscaler:v1.36.1",
                )
            ],
        ),
        GOOD_TAGS,
        "[fail] autoscaler: no Deployment cluster-autoscaler in kube-system",
        1,
    ),
    "autoscaler-not-discovering": (
        Scenario(autoscaler=autoscaler(cluster="other")),
        GOOD_TAGS,
        "[fail] autoscaler: runs, but does not discover this cluster's ASGs "
        "(--node-group-auto-discovery=asg:tag=k8s.io/cluster-autoscaler/enabled,"
        "k8s.io/cluster-autoscaler/other)",
        1,
    ),
    "no-aws-credentials": (
        Scenario(),
        None,
        "[warn] ASG tags: not checked: no AWS credentials or region",
        0,
    ),
    "asg-tags-right": (
        Scenario(),
        GOOD_TAGS,
        "[  ok] ASG eks-GpuPoolG5Xlarge-4ac9: GpuPoolG5Xlarge-abc: nvidia.com/gpu=1",
        0,
    ),
    "asg-gpu-count-wrong": (
        Scenario(),
        {**GOOD_TAGS, GPU_TAG: "4"},
        "[fail] ASG eks-GpuPoolG5Xlarge-4ac9: tag k8s.io/cluster-autoscaler/node-template/"
        "resources/nvidia.com/gpu='4', but g5.xlarge has 1 GPU(s)",
        1,
    ),
    # A taint and a label removed from the pool whose tags an earlier release failed to delete.
    "asg-stale-template-tags": (
        Scenario(),
        {
            **GOOD_TAGS,
            LABEL_TAG: "gpu",
            "k8s.io/cluster-autoscaler/node-template/label/team": "ml",
            "k8s.io/cluster-autoscaler/node-template/taint/dedicated": "training:NoSchedule",
        },
        "[fail] ASG eks-GpuPoolG5Xlarge-4ac9: node-template tags for labels or taints the node "
        "group no longer has: k8s.io/cluster-autoscaler/node-template/label/team, "
        "k8s.io/cluster-autoscaler/node-template/taint/dedicated",
        1,
    ),
    "asg-taint-in-eks-spelling": (
        Scenario(),
        {**GOOD_TAGS, TAINT_TAG: "true:NO_SCHEDULE"},
        "[fail] ASG eks-GpuPoolG5Xlarge-4ac9: taint tags Cluster Autoscaler ignores: "
        f"{TAINT_TAG}=true:NO_SCHEDULE",
        1,
    ),
}


@pytest.mark.parametrize(("scenario", "tags", "line", "code"), CASES.values(), ids=CASES.keys())
def test_each_doctor_verdict_and_its_exit_code(
    tmp_path, capsys, request, scenario, tags, line, code
):
    aws = _aws(tags) if tags is not None else None
    exit_code, _ = run(tmp_path, scenario, aws=aws, command="doctor")
    out = capsys.readouterr().out.splitlines()
    assert line in out
    assert exit_code == code
    # A failing verdict says what to do next on the line after it; an ok one says nothing more.
    position = out.index(line) + 1
    following = out[position] if position < len(out) else ""
    if line.startswith("[fail]"):
        assert following == f"       fix: {FIXES[request.node.callspec.id]}"
    else:
        assert not following.startswith("       fix: ")


FIXES = {
    "a-second-cluster-autoscaler": "keep yours with autoscaler.enabled: false (a deploy then "
    "removes gpu-pool's), or remove autoscaling/platform-autoscaler",
    "a-second-cluster-autoscaler-by-digest-from-a-mirror": "keep yours with autoscaler.enabled: "
    "false (a deploy then removes gpu-pool's), or remove autoscaling/platform-autoscaler",
    "a-karpenter-beside-the-autoscaler": "keep yours with autoscaler.enabled: false (a deploy "
    "then removes gpu-pool's), or remove karpenter/karpenter",
    "node-not-ready": "see kubelet",
    "node-ready-unknown": "see kubelet",
    "node-without-gpus": "its nodeSelector must match the node's gpu-pool.io/pool label and its "
    "tolerations the pool's taints (redeploy the stack; `gpu-pool doctor` shows the DaemonSet)",
    "plugin-partly-ready": "kubectl -n kube-system describe ds nvidia-device-plugin-gpu",
    "plugin-missing": "deploy the stack with pool.gpu_software: device-plugin",
    "autoscaler-missing": "deploy the stack with autoscaler.enabled: true, or install Cluster "
    "Autoscaler",
    "only-another-autoscaler": "deploy the stack with autoscaler.enabled: true, or install Cluster "
    "Autoscaler",
    "autoscaler-not-ready": "kubectl -n kube-system logs deploy/cluster-autoscaler",
    "autoscaler-not-discovering": "its --node-group-auto-discovery must name "
    "k8s.io/cluster-autoscaler/gpu-pool",
    "asg-gpu-count-wrong": "at zero nodes Cluster Autoscaler believes this tag: redeploy the "
    "stack so the tag writer rewrites it",
    "asg-stale-template-tags": "a stale taint stops Cluster Autoscaler scaling this group up "
    "from zero: aws autoscaling delete-tags --tags ResourceId=eks-GpuPoolG5Xlarge-4ac9,"
    "ResourceType=auto-scaling-group,Key=<key> (the key alone), or redeploy",
    "asg-taint-in-eks-spelling": "the value must be <value>:<Effect> in Kubernetes spelling "
    "(NoSchedule)",
}


def test_only_device_plugin_daemon_sets_count_as_the_plugin(tmp_path, capsys):
    """kube-system holds other DaemonSets (aws-node, kube-proxy); they are not device plugins."""
    other = daemon_set(desired=3, ready=0)
    other["metadata"]["name"] = "aws-node"
    other["metadata"]["labels"] = {"k8s-app": "aws-node"}
    exit_code, _ = run(
        tmp_path, Scenario(daemon_sets=[other]), aws=_aws(GOOD_TAGS), command="doctor"
    )
    out = capsys.readouterr().out.splitlines()
    assert (
        "[fail] device plugin: no DaemonSet labelled app.kubernetes.io/name=nvidia-device-plugin in kube-system"
        in out
    )
    assert not [line for line in out if "aws-node" in line]
    assert exit_code == 1


def test_asgs_of_other_node_groups_are_not_judged(tmp_path, capsys):
    cpu_group = {"eks:nodegroup-name": "GpuPoolG5Xlarge-abc"}
    exit_code, _ = run(tmp_path, Scenario(), aws=_aws(cpu_group, ("m5.large",)), command="doctor")
    out = capsys.readouterr().out
    assert "ASG " not in out
    assert exit_code == 0


def test_an_unknown_aws_profile_is_no_aws_access_not_a_traceback(tmp_path, capsys, monkeypatch):
    """AWS_PROFILE names no profile: boto3 refuses the session (ProfileNotFound); doctor checks
    what it can without AWS, as without credentials (found beside #29 review item 1)."""
    monkeypatch.setenv("AWS_PROFILE", "nope")
    run(tmp_path, Scenario(), command="doctor")
    assert "[warn] ASG tags: not checked: no AWS credentials or region" in (
        capsys.readouterr().out.splitlines()
    )


@pytest.mark.parametrize(
    ("image", "repository"),
    [
        (
            "registry.k8s.io/autoscaling/cluster-autoscaler:v1.36.1",
            "registry.k8s.io/autoscaling/cluster-autoscaler",
        ),
        (
            "registry.k8s.io/autoscaling/cluster-autoscaler@sha256:" + "a" * 64,
            "registry.k8s.io/autoscaling/cluster-autoscaler",
        ),
        (
            "mirror:5000/karpenter/controller:1.15.0@sha256:" + "b" * 64,
            "mirror:5000/karpenter/controller",
        ),
        ("mirror:5000/karpenter/controller", "mirror:5000/karpenter/controller"),
    ],
)
def test_an_images_repository_leaves_its_registrys_port(image, repository):
    from gpu_pool.cli.inspect.cluster import image_repository

    assert image_repository(image) == repository


def _deployments(*entries):
    from types import SimpleNamespace as Object

    items = [
        Object(
            metadata=Object(namespace=namespace, name=name),
            spec=Object(
                template=Object(spec=Object(containers=[Object(image=image, command=None)]))
            ),
        )
        for namespace, name, image in entries
    ]
    return Object(list_deployment_for_all_namespaces=lambda: Object(items=items))


OWN_CA = (
    "kube-system",
    "cluster-autoscaler",
    "registry.k8s.io/autoscaling/cluster-autoscaler:v1.36.1",
)
OWN_KARPENTER = ("kube-system", "karpenter", "public.ecr.aws/karpenter/controller:1.15.0")
USERS_CA = ("ops", "autoscaler", "registry.k8s.io/autoscaling/cluster-autoscaler:v1.35.2")


@pytest.mark.parametrize(
    ("provisioners", "deployments", "expected"),
    [
        # Mixed provisioners: gpu-pool's two controllers are neither one's "second".
        ({"cluster-autoscaler", "karpenter"}, [OWN_CA, OWN_KARPENTER], []),
        # A Karpenter-only app beside the cluster's own Cluster Autoscaler: both scale.
        ({"karpenter"}, [OWN_KARPENTER, USERS_CA], ["ops/autoscaler (Cluster Autoscaler)"]),
        (
            {"cluster-autoscaler", "karpenter"},
            [OWN_KARPENTER, USERS_CA],
            ["ops/autoscaler (Cluster Autoscaler)"],
        ),
        # None of gpu-pool's runs: the cluster keeps its own (autoscaler.enabled false).
        ({"cluster-autoscaler"}, [USERS_CA], []),
        ({"auto-mode"}, [USERS_CA], []),
    ],
    ids=["mixed-own", "karpenter-only", "mixed-one-running", "own-absent", "auto-mode"],
)
def test_a_second_autoscaler_is_judged_beside_whichever_gpu_pool_runs(
    provisioners, deployments, expected
):
    from gpu_pool.cli.inspect.cluster import other_autoscalers

    found = other_autoscalers(_deployments(*deployments), provisioners)
    assert [v.detail.split(": ", 1)[1].split(";")[0] for v in found] == expected
