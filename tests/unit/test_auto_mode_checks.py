"""Guardrails for Auto Mode pools: one case per rule, each with the exact message users read
(sources: the EKS user guide pages checks/auto_mode.py names)."""

from datetime import date

import pytest

from tests.support import rules

TODAY = date(2026, 12, 2)


def auto(**pool):
    return {"pool": {"provisioner": "auto-mode", **pool}}


EXISTING = {
    "name": "prod",
    "existing": {
        "kubectl_provider_service_token": "arn:aws:lambda:us-east-1:123456789012:function:k",
        "kubectl_provider_role_arn": "arn:aws:iam::123456789012:role/k",
        "subnets_by_zone": {"us-east-1a": ["subnet-0aaaaaaaaaaaaaaaa"]},
    },
}


CASES = {
    "defaults-are-valid": (
        auto(),
        [],
    ),
    # #48 item 1: it synthesized a NodeClass on a Local Zone subnet where no node launches.
    "local-zone": (
        {"region": "us-east-1", **auto(zones=["us-east-1-dfw-2a"])},
        [
            (
                "E",
                'pool.zones: us-east-1-dfw-2a: a Local Zone, where EKS Auto Mode cannot run nodes (EKS user guide, "Manage compute resources by using nodes", Compare compute options: Auto Mode cannot be deployed to an AWS Local Zone): its NodeClass would get the zone\'s subnet and no node would launch; use provisioner: cluster-autoscaler or karpenter there, or list Availability Zones only',
            )
        ],
    ),
    "fractional-gpu-type": (
        auto(instance_types=["g6f.xlarge"]),
        [
            (
                "E",
                "pool.instance_types: 'g6f.xlarge' (fractional L4: one partial GPU per node) reports 0 GPUs in EC2's data and Auto Mode does not offer g6f: use provisioner: cluster-autoscaler for it",
            )
        ],
    ),
    "type-auto-mode-does-not-offer": (
        auto(instance_types=["p3.2xlarge"]),
        [
            (
                "E",
                "pool.instance_types: Auto Mode does not launch p3 (p3.2xlarge); its NVIDIA families are g4dn, g5, g5g, g6, g6e, g7e, gr6, p3dn, p4d, p4de, p5, p5e, p5en, p6-b200, p6-b300: use one of them, or another provisioner",
            )
        ],
    ),
    "al2023-family": (
        auto(ami_family="AL2023"),
        [
            (
                "E",
                "pool.ami_family: AL2023, but Auto Mode nodes run Bottlerocket, chosen and patched by EKS: remove ami_family",
            )
        ],
    ),
    "bottlerocket-family-is-what-it-runs": (
        auto(ami_family="BOTTLEROCKET"),
        [],
    ),
    "ami-settings-ignored": (
        auto(
            ami_type="BOTTLEROCKET_x86_64_NVIDIA",
            ami_release_version="1.47.0-6154605b",
            karpenter={"ami_alias": "bottlerocket@v1.66.0"},
        ),
        [
            (
                "W",
                "pool.ami_type: 'BOTTLEROCKET_x86_64_NVIDIA' is ignored with provisioner: auto-mode, whose AMIs EKS chooses and patches itself: remove it",
            ),
            (
                "W",
                "pool.ami_release_version: '1.47.0-6154605b' is ignored with provisioner: auto-mode, whose AMIs EKS chooses and patches itself: remove it",
            ),
            (
                "W",
                "pool.karpenter.ami_alias: 'bottlerocket@v1.66.0' is ignored with provisioner: auto-mode, whose AMIs EKS chooses and patches itself: remove it",
            ),
        ],
    ),
    "min-size-without-static-capacity": (
        auto(min_size=1, desired_size=1),
        [
            (
                "E",
                "pool.min_size: 1: an Auto Mode NodePool launches nodes only for pending pods and keeps no minimum (static capacity is not built by gpu-pool): set 0, or use provisioner: cluster-autoscaler for nodes that stay up",
            ),
            (
                "W",
                "pool.desired_size: 1 is ignored with provisioner: auto-mode, which launches nodes only for pending pods: leave it 0",
            ),
        ],
    ),
    "gpu-operator": (
        auto(gpu_software="gpu-operator"),
        [
            (
                "E",
                "pool.gpu_software: 'gpu-operator', but Auto Mode runs the NVIDIA driver and device plugin itself (not as a visible DaemonSet); a second plugin would fight it: remove gpu_software",
            )
        ],
    ),
    "device-plugin": (
        auto(gpu_software="device-plugin"),
        [
            (
                "E",
                "pool.gpu_software: 'device-plugin', but Auto Mode runs the NVIDIA driver and device plugin itself (not as a visible DaemonSet); a second plugin would fight it: remove gpu_software",
            )
        ],
    ),
    "no-gpu-software-is-what-it-runs": (
        auto(gpu_software="none"),
        [],
    ),
    "imds-hop-limit": (
        auto(imds_hop_limit=2),
        [
            (
                "E",
                "pool.imds_hop_limit: 2, but Auto Mode enforces a hop limit of 1 and it cannot be changed: remove imds_hop_limit, or use another provisioner for a workload that reads instance metadata",
            )
        ],
    ),
    "expire-never": (
        auto(karpenter={"expire_after": "Never"}),
        [
            (
                "E",
                "pool.karpenter.expire_after: Never, but Auto Mode replaces every node after at most 21 days (504h): set 504h or less, or leave it unset for Auto Mode's 336h",
            )
        ],
    ),
    "expire-beyond-21-days": (
        auto(karpenter={"expire_after": "720h"}),
        [
            (
                "E",
                "pool.karpenter.expire_after: 720h, but Auto Mode replaces every node after at most 21 days (504h): set 504h or less, or leave it unset for Auto Mode's 336h",
            )
        ],
    ),
    # An expired node drains for up to the grace period (24h by default) before it goes: the two
    # together are the node's longest life, which Auto Mode caps at 21 days.
    "expire-at-21-days-less-the-grace-period": (
        auto(karpenter={"expire_after": "480h"}),
        [],
    ),
    "expire-at-21-days-plus-the-grace-period": (
        auto(karpenter={"expire_after": "504h"}),
        [
            (
                "E",
                "pool.karpenter.termination_grace_period: 24h with expire_after 504h: an expired node may drain that long more, 528h in all, but Auto Mode replaces every node after at most 21 days (504h): set expire_after to 480h or less",
            )
        ],
    ),
    "default-expiry-with-a-long-grace-period": (
        auto(karpenter={"termination_grace_period": "169h"}),
        [
            (
                "E",
                "pool.karpenter.termination_grace_period: 169h with expire_after 336h: an expired node may drain that long more, 505h in all, but Auto Mode replaces every node after at most 21 days (504h): set termination_grace_period to 168h or less, or expire_after to 335h or less",
            )
        ],
    ),
    "grace-period-alone-beyond-21-days": (
        auto(karpenter={"expire_after": "1h", "termination_grace_period": "600h"}),
        [
            (
                "E",
                "pool.karpenter.termination_grace_period: 600h with expire_after 1h: an expired node may drain that long more, 601h in all, but Auto Mode replaces every node after at most 21 days (504h): set termination_grace_period to 503h or less",
            )
        ],
    ),
    # 21 days less the default 24h grace period (480h), counted in minutes and in seconds, and
    # one past it.
    "expire-and-grace-at-21-days-in-minutes": (
        auto(karpenter={"expire_after": "419h3660m"}),
        [],
    ),
    "expire-and-grace-a-minute-past-21-days": (
        auto(karpenter={"expire_after": "420h3601m"}),
        [
            (
                "E",
                "pool.karpenter.termination_grace_period: 24h with expire_after 420h3601m: an expired node may drain that long more, 504h1m in all, but Auto Mode replaces every node after at most 21 days (504h): set termination_grace_period to 23h59m or less, or expire_after to 480h or less",
            )
        ],
    ),
    "expire-and-grace-at-21-days-in-seconds": (
        auto(karpenter={"expire_after": "479h3600s"}),
        [],
    ),
    "expire-and-grace-a-second-past-21-days": (
        auto(karpenter={"expire_after": "479h3601s"}),
        [
            (
                "E",
                "pool.karpenter.termination_grace_period: 24h with expire_after 479h3601s: an expired node may drain that long more, 504h0m1s in all, but Auto Mode replaces every node after at most 21 days (504h): set termination_grace_period to 23h59m59s or less, or expire_after to 480h or less",
            )
        ],
    ),
    # The NodePool rules Auto Mode shares with Karpenter (checks/node_pool.py).
    "no-node-limit": (
        auto(max_size=0),
        [
            (
                "E",
                "pool.max_size: 0: the NodePool's node limit; the pool could never run a GPU node: set 1 or more",
            ),
            (
                "E",
                "pool.karpenter.gpu_limit: 0 is below the 1 GPUs of g5.xlarge: Karpenter could never launch it: raise it to 1 or more, or drop the type",
            ),
        ],
    ),
    "gpu-limit-below-the-largest-type": (
        auto(instance_types=["g5.12xlarge"], karpenter={"gpu_limit": 2}),
        [
            (
                "E",
                "pool.karpenter.gpu_limit: 2 is below the 4 GPUs of g5.12xlarge: Karpenter could never launch it: raise it to 4 or more, or drop the type",
            )
        ],
    ),
    "label-reserved-by-karpenter": (
        auto(labels={"karpenter.sh/team": "a"}),
        [
            (
                "E",
                "pool.labels: 'karpenter.sh/team' is reserved by Karpenter (kubernetes.io/hostname, and karpenter.sh and karpenter.k8s.aws keys other than their well-known labels): the API server refuses the NodePool; use your own domain, e.g. example.com/team",
            )
        ],
    ),
    "label-the-kubelet-refuses": (
        auto(labels={"node-role.kubernetes.io/gpu": "x"}),
        [
            (
                "E",
                "pool.labels: 'node-role.kubernetes.io/gpu' is a kubernetes.io/k8s.io label the kubelet refuses in --node-labels, where Karpenter puts the pool's labels: every node would launch and never join; use node.kubernetes.io/gpu or your own domain, e.g. example.com/gpu",
            )
        ],
    ),
    # Unset, an expired node waits for its do-not-disrupt pods without end: beyond Auto Mode's
    # 21 days. The error replaces the warning Karpenter pools get (GP-NODEPOOL-03), whose way
    # out (expire_after: Never) Auto Mode refuses; Auto Mode's own 336h is the expiry it names.
    "no-termination-grace-period": (
        auto(karpenter={"termination_grace_period": None}),
        [
            (
                "E",
                "pool.karpenter.termination_grace_period: unset with expire_after 336h: an expired node may drain without end, but Auto Mode replaces every node after at most 21 days (504h): set termination_grace_period to 168h or less",
            )
        ],
    ),
    "sharing": (
        auto(sharing={"mode": "time-slicing", "replicas": 4}),
        [
            (
                "E",
                "pool.sharing.mode: 'time-slicing' with provisioner: auto-mode: Auto Mode runs its own device plugin and its NodeClass has no setting to share GPUs with (EKS user guide, automode/auto-accelerated.adoc, create-node-class.adoc), and its Karpenter counts physical GPUs: use provisioner: cluster-autoscaler",
            )
        ],
    ),
    "training-settings-not-built": (
        auto(
            instance_types=["p5.48xlarge"],
            efa=True,
            capacity_reservation={"type": "capacity-block", "id": "cr-0123456789abcdef0"},
        ),
        [
            (
                "E",
                "pool.capacity_reservation: is not built for provisioner: auto-mode (its NodeClass takes reservations and placement groups, but gpu-pool renders neither there yet): use provisioner: karpenter or cluster-autoscaler for a training pool (docs/training.md)",
            ),
            (
                "E",
                "pool.efa: is not built for provisioner: auto-mode (its NodeClass takes reservations and placement groups, but gpu-pool renders neither there yet): use provisioner: karpenter or cluster-autoscaler for a training pool (docs/training.md)",
            ),
        ],
    ),
    "existing-cluster": (
        {"cluster": EXISTING, "pool": {"provisioner": "auto-mode"}},
        [
            (
                "E",
                "cluster.existing.cluster_security_group_id: required with an auto-mode pool: its NodeClass puts the nodes in the cluster security group; copy it from `aws eks describe-cluster` (resourcesVpcConfig.clusterSecurityGroupId)",
            ),
            (
                "W",
                "cluster.existing: auto-mode pools need EKS Auto Mode compute enabled on prod (aws eks describe-cluster: computeConfig.enabled true), which is not looked up; without it the deploy fails where it applies the pool's NodeClass (eks.amazonaws.com/v1, a kind only Auto Mode serves)",
            ),
        ],
    ),
    "mixed-arch": (
        auto(instance_types=["g5.xlarge", "g5g.xlarge"]),
        [
            (
                "W",
                "pool.instance_types: mixes CPU architectures (amd64: g5.xlarge; arm64: g5g.xlarge): a pending pod may get a node of either, and a container image built for one architecture fails on the other's (exec format error); put each architecture in a pool of its own, or give every pod of this pool a kubernetes.io/arch nodeSelector",
            )
        ],
    ),
    "pending-to-auto-mode-and-the-autoscaler": (
        {
            "pools": {
                "a": {"provisioner": "auto-mode"},
                "b": {"labels": {"accelerator": "nvidia", "workload": "b"}},
            }
        },
        [
            (
                "W",
                "pools.b.taints: a GPU pod that tolerates pool 'b' (cluster-autoscaler) and selects no pool also fits pool 'a' (auto-mode): both would launch a node for it and one would idle until scaled down; select gpu-pool.io/pool in such pods, or give the pools of each provisioner a taint of their own",
            )
        ],
    ),
}


@pytest.mark.parametrize(("settings", "expected"), CASES.values(), ids=CASES.keys())
def test_rule_reports_its_exact_message(settings, expected):
    assert rules.findings(settings, today=TODAY) == expected


# Each case's rule ids, finding by finding: an app acknowledges a warning by its id
# (gpu-pool:<id>) and docs/guardrails.md lists them.
RULE_IDS = {
    "local-zone": ["GP-AUTO-14"],
    "defaults-are-valid": [],
    "fractional-gpu-type": ["GP-AUTO-01"],
    "type-auto-mode-does-not-offer": ["GP-AUTO-02"],
    "al2023-family": ["GP-AUTO-03"],
    "bottlerocket-family-is-what-it-runs": [],
    "ami-settings-ignored": ["GP-AUTO-04", "GP-AUTO-04", "GP-AUTO-04"],
    "min-size-without-static-capacity": ["GP-AUTO-05", "GP-AUTO-06"],
    "gpu-operator": ["GP-AUTO-07"],
    "device-plugin": ["GP-AUTO-07"],
    "no-gpu-software-is-what-it-runs": [],
    "imds-hop-limit": ["GP-AUTO-08"],
    "expire-never": ["GP-AUTO-10"],
    "expire-beyond-21-days": ["GP-AUTO-10"],
    "expire-at-21-days-less-the-grace-period": [],
    "expire-at-21-days-plus-the-grace-period": ["GP-AUTO-11"],
    "default-expiry-with-a-long-grace-period": ["GP-AUTO-11"],
    "grace-period-alone-beyond-21-days": ["GP-AUTO-11"],
    "expire-and-grace-at-21-days-in-minutes": [],
    "expire-and-grace-a-minute-past-21-days": ["GP-AUTO-11"],
    "expire-and-grace-at-21-days-in-seconds": [],
    "expire-and-grace-a-second-past-21-days": ["GP-AUTO-11"],
    "no-node-limit": ["GP-NODEPOOL-01", "GP-NODEPOOL-02"],
    "gpu-limit-below-the-largest-type": ["GP-NODEPOOL-02"],
    "label-reserved-by-karpenter": ["GP-NODEPOOL-04"],
    "label-the-kubelet-refuses": ["GP-NODEPOOL-05"],
    "no-termination-grace-period": ["GP-AUTO-11"],
    "sharing": ["GP-SHARE-03"],
    "training-settings-not-built": ["GP-AUTO-09", "GP-AUTO-09"],
    "existing-cluster": ["GP-APP-07", "GP-APP-08"],
    "mixed-arch": ["GP-POOL-31"],
    "pending-to-auto-mode-and-the-autoscaler": ["GP-PAIR-07"],
}


@pytest.mark.parametrize("case", CASES)
def test_each_finding_names_its_rule(case):
    assert rules.rule_ids(CASES[case][0], today=TODAY) == RULE_IDS[case]


ERROR_CASES = {k: v for k, v in CASES.items() if any(level == "E" for level, _ in v[1])}


@pytest.mark.synth
@pytest.mark.parametrize(("settings", "expected"), ERROR_CASES.values(), ids=ERROR_CASES.keys())
def test_errors_stop_before_anything_is_synthesized(settings, expected):
    rules.assert_nothing_built(settings, expected)


# What the cluster role needs for a pool, where the app cannot give it (the pool construct
# runs this rule: only it knows the cluster and the NodeClass's tags).
KEY = "arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"
ALIAS = "arn:aws:kms:us-east-1:123456789012:alias/gpu-volumes"
# The EKS user guide's statement for NodeClass tags (auto-cluster-iam-role, "Custom AWS tags
# for EKS Auto resources"), and its key policy for the cluster role (auto-kms, "Configure the
# key policy"), as the warnings print them.
TAGS_STATEMENT = (
    '{"Effect":"Allow","Action":["ec2:CreateFleet","ec2:RunInstances",'
    '"ec2:CreateLaunchTemplate"],"Resource":"*","Condition":{"StringEquals":'
    '{"aws:RequestTag/eks:eks-cluster-name":"${aws:PrincipalTag/eks:eks-cluster-name}"},'
    '"StringLike":{"aws:RequestTag/eks:kubernetes-node-class-name":"*",'
    '"aws:RequestTag/eks:kubernetes-node-pool-name":"*"}}}'
)
KEY_POLICY = (
    '[{"Effect":"Allow","Principal":{"AWS":"<the cluster role\'s ARN>"},"Action":'
    '["kms:Encrypt","kms:Decrypt","kms:ReEncrypt*","kms:GenerateDataKey*","kms:DescribeKey"],'
    '"Resource":"*"},{"Effect":"Allow","Principal":{"AWS":"<the cluster role\'s ARN>"},'
    '"Action":["kms:CreateGrant","kms:ListGrants","kms:RevokeGrant"],"Resource":"*",'
    '"Condition":{"Bool":{"kms:GrantIsForAWSResource":"true"}}}]'
)
IMPORTED_TAGS = (
    "tags: cost-center, team on the pool's NodeClass: Auto Mode launches nodes as the cluster "
    "role, whose AmazonEKSComputePolicy allows EKS's own tags only, and the app changes only a "
    "cluster role it creates: without this statement on that role (aws eks "
    f"describe-cluster: cluster.roleArn) no node of the pool launches: {TAGS_STATEMENT}; or pass "
    "no tags"
)


def _key_warning(reason):
    return (
        "pool.volume_kms_key_arn: Auto Mode encrypts the nodes' volumes as the cluster role (aws "
        f"eks describe-cluster: cluster.roleArn) and {reason}: unless the key policy has these "
        "statements (or delegates to IAM and the role's own policy allows the same on the key), "
        f"no node of the pool launches: {KEY_POLICY}"
    )


IMPORTED = "the app changes only a cluster role it creates"
ROLE_CASES = {
    "created-cluster-grants-tags-and-key": (KEY, {"gpu-pool.io/pool": "gpu"}, True, []),
    "created-cluster-alias": (
        ALIAS,
        {},
        True,
        [("GP-AUTO-13", _key_warning("the app grants a key only by its ARN, not an alias"))],
    ),
    "imported-cluster-without-tags-or-key": (None, {}, False, []),
    "imported-cluster-tags": (
        None,
        {"team": "ml", "cost-center": "research"},
        False,
        [("GP-AUTO-12", IMPORTED_TAGS)],
    ),
    "imported-cluster-key": (KEY, {}, False, [("GP-AUTO-13", _key_warning(IMPORTED))]),
}


@pytest.mark.parametrize(
    ("key", "tags", "role_is_the_apps", "expected"), ROLE_CASES.values(), ids=ROLE_CASES.keys()
)
def test_what_the_cluster_role_needs_is_said_where_the_app_cannot_grant_it(
    key, tags, role_is_the_apps, expected
):
    from gpu_pool.checks.auto_mode import check_cluster_role
    from gpu_pool.plan.pool import plan_pool
    from gpu_pool.settings import PoolSettings

    plan = plan_pool(PoolSettings(provisioner="auto-mode", volume_kms_key_arn=key)).auto_mode
    found = rules.documented(check_cluster_role(plan, tags, role_is_the_apps))
    assert [(f.rule, str(f)) for f in found] == expected
    assert not any(f.error for f in found)
