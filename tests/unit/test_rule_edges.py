"""The edges of the guardrails: each range rule at its bound and one past it, the rules a
construct runs itself (the controllers', the zones the stack knows), and inputs that only one
reading of a setting gets right. Exact messages, as in test_checks.py."""

import json
from datetime import date

import pytest

from gpu_pool.checks import check_settings
from gpu_pool.checks.app import check_cli_pin
from gpu_pool.checks.controllers import (
    check_autoscaler,
    check_chart_registry_login,
    check_expander,
    check_node_selector,
)
from gpu_pool.checks.target import check_pool_target
from gpu_pool.plan.pool import plan_pool, plan_pools
from gpu_pool.settings import AutoscalerSettings, PoolSettings, load_settings
from tests.support import rules
from tests.support.rules import documented

TODAY = date(2026, 12, 2)
LABEL_KEY_RULE = "an optional DNS prefix and '/', then up to 63 letters, digits, '-', '_' or '.'"
# The ASG tag of a label is this prefix and the key: 46 + 82 characters is Auto Scaling's 128.
LONGEST_LABEL_KEY = "e" * 18 + ".example.com/" + "n" * 51
EXISTING = {
    "kubectl_provider_service_token": "arn:aws:lambda:eu-west-1:123456789012:function:k",
    "kubectl_provider_role_arn": "arn:aws:iam::123456789012:role/k",
    "node_monitoring_agent": False,
}
ODCR = {"type": "odcr", "id": "cr-0123456789abcdef0"}
RESOURCE_GROUP = "arn:aws:resource-groups:us-east-1:123456789012:group/gpus"
SMALL_DISK = (
    "GiB: CUDA images are several GiB each and pods get evicted under disk pressure; use 100 "
    "or more (default 200)"
)

# (settings, [(E|W, message), ...])
CASES = {
    "disk-1-gib-is-small-not-invalid": (
        {"pool": {"disk_size_gib": 1}},
        [("W", f"pool.disk_size_gib: 1 {SMALL_DISK}")],
    ),
    "disk-at-the-gp3-limit": ({"pool": {"disk_size_gib": 16384}}, []),
    "disk-past-the-gp3-limit": (
        {"pool": {"disk_size_gib": 16385}},
        [("E", "pool.disk_size_gib: 16385 is outside 1..16384 GiB")],
    ),
    "disk-at-the-recommended-size": ({"pool": {"disk_size_gib": 100}}, []),
    "negative-sizes-each-named": (
        {"pool": {"min_size": -1, "desired_size": -1, "max_size": -1}},
        [
            ("E", "pool.min_size: -1 is negative; sizes are 0 or more"),
            ("E", "pool.desired_size: -1 is negative; sizes are 0 or more"),
            ("E", "pool.max_size: -1 is negative; sizes are 0 or more"),
        ],
    ),
    "taint-key-invalid": (
        {"pool": {"taints": [{"key": "-bad", "value": "v", "effect": "NoSchedule"}]}},
        [("E", f"pool.taints[0]: key '-bad' is not a taint key: use {LABEL_KEY_RULE}")],
    ),
    "taint-value-invalid": (
        {"pool": {"taints": [{"key": "k", "value": "-v", "effect": "NoSchedule"}]}},
        [
            (
                "E",
                "pool.taints[0]: value '-v' is not a taint value: use up to 63 letters, digits, "
                "'-', '_' or '.', starting and ending alphanumeric",
            )
        ],
    ),
    "asg-tag-key-at-128": ({"pool": {"labels": {LONGEST_LABEL_KEY: "x"}}}, []),
    "asg-tag-key-past-128": (
        {"pool": {"labels": {LONGEST_LABEL_KEY + "n": "x"}}},
        [
            (
                "E",
                "pool.labels: ASG tag 'k8s.io/cluster-autoscaler/node-template/label/"
                f"{LONGEST_LABEL_KEY}n' is longer than Auto Scaling allows (key 128, value 256)",
            )
        ],
    ),
    # 38 labels, 9 more tags of the pool's own and 3 EKS adds: exactly 50.
    "asg-tags-at-50": ({"pool": {"labels": {f"l{i}": "x" for i in range(38)}}}, []),
    "asg-tags-past-50-named-once-for-two-entries": (
        {
            "pool": {
                "labels": {f"l{i}": "x" for i in range(39)},
                "instance_types": ["g5.xlarge", "g6.xlarge"],
            }
        },
        [
            (
                "E",
                "pool.labels: labels and taints need 48 ASG tags, plus 3 EKS adds: 51, over "
                "Auto Scaling's 50 per group; use fewer labels/taints",
            )
        ],
    ),
    "system-nodes-may-be-zero": (
        {"cluster": {"system_nodes": {"min_size": 0, "desired_size": 0, "max_size": 1}}},
        [],
    ),
    "system-nodes-all-equal": (
        {"cluster": {"system_nodes": {"min_size": 2, "desired_size": 2, "max_size": 2}}},
        [],
    ),
    "endpoint-public-open-to-all": ({"cluster": {"endpoint_access": "public"}}, []),
    "existing-cluster-zones": (
        {
            "account": "123456789012",
            "region": "eu-west-1",
            "cluster": {
                "existing": {
                    **EXISTING,
                    "subnets_by_zone": {
                        "euwest1": ["subnet-0123abcd"],
                        "eu-west-1a": ["subnet-0123abce"],
                        "eu-west-1b": ["subnet-0123abcf"],
                    },
                }
            },
            "pools": {
                "a": {"zones": ["eu-west-1c", "eu-west-1d"], "labels": {"w": "a"}},
                "b": {"zones": ["eu-west-1e"], "labels": {"w": "b"}},
                "c": {"zones": ["eu-west-1a"], "labels": {"w": "c"}},
            },
        },
        [
            (
                "E",
                "cluster.existing.subnets_by_zone: 'euwest1' is not an availability zone name "
                "such as us-east-1a (or a Local Zone's, such as us-east-1-dfw-2a)",
            ),
            (
                "E",
                "pools.a.zones: eu-west-1c, eu-west-1d not in cluster.existing.subnets_by_zone "
                "(euwest1, eu-west-1a, eu-west-1b): add its subnets or drop the zone",
            ),
            (
                "E",
                "pools.b.zones: eu-west-1e not in cluster.existing.subnets_by_zone (euwest1, "
                "eu-west-1a, eu-west-1b): add its subnets or drop the zone",
            ),
        ],
    ),
    "autoscaler-chart-version-range": (
        {"autoscaler": {"chart_version": "^9"}},
        [
            (
                "E",
                "autoscaler.chart_version: '^9' is not an exact version; pin one such as 1.2.3 "
                "(never 'latest' or a range), or leave it unset for the tested pin in "
                "gpu_pool/model/versions.py",
            )
        ],
    ),
    "autoscaler-image-tag-with-v": ({"autoscaler": {"image_tag": "v1.36.0"}}, []),
    "autoscaler-image-tag-latest": (
        {"autoscaler": {"image_tag": "latest"}},
        [
            (
                "E",
                "autoscaler.image_tag: 'latest' is not an exact version; pin one such as 1.2.3 "
                "(never 'latest' or a range), or leave it unset for the tested pin in "
                "gpu_pool/model/versions.py",
            )
        ],
    ),
    # Karpenter 1.13.0 is the oldest that supports Kubernetes 1.36 (the default cluster).
    "karpenter-oldest-supported": (
        {"pool": {"provisioner": "karpenter"}, "karpenter": {"chart_version": "1.13.0"}},
        [],
    ),
    "karpenter-oldest-supported-with-v": (
        {"pool": {"provisioner": "karpenter"}, "karpenter": {"chart_version": "v1.13.0"}},
        [],
    ),
    "karpenter-gpu-limit-equal-to-the-largest-type": (
        {
            "pool": {
                "provisioner": "karpenter",
                "instance_types": ["g5.12xlarge"],
                "karpenter": {"gpu_limit": 4},
            }
        },
        [],
    ),
    "karpenter-max-size-1": ({"pool": {"provisioner": "karpenter", "max_size": 1}}, []),
    "karpenter-reserved-key-suggests-its-last-segment": (
        {"pool": {"provisioner": "karpenter", "labels": {"karpenter.sh/a/b": "x"}}},
        [
            ("E", f"pool.labels: 'karpenter.sh/a/b' is not a label key: use {LABEL_KEY_RULE}"),
            (
                "E",
                "pool.labels: 'karpenter.sh/a/b' is reserved by Karpenter (kubernetes.io/"
                "hostname, and karpenter.sh and karpenter.k8s.aws keys other than their "
                "well-known labels): the API server refuses the NodePool; use your own domain, "
                "e.g. example.com/b",
            ),
        ],
    ),
    "efa-named-for-each-type-without-it": (
        {
            "account": "123456789012",
            "region": "us-east-1",
            "pool": {
                "instance_types": ["g5.xlarge", "g6.xlarge"],
                "zones": ["us-east-1a"],
                "efa": True,
            },
        },
        [
            (
                "E",
                "pool.efa: true, but g5.xlarge, g6.xlarge have no EFA (EC2 MaximumEfaInterfaces 0): "
                "choose an EFA type such as p5.48xlarge, p4d.24xlarge or g6e.48xlarge, or set "
                "efa: false",
            )
        ],
    ),
    "karpenter-odcr-resource-group-named": (
        {
            "pool": {
                "provisioner": "karpenter",
                "capacity_reservation": {"type": "odcr", "resource_group_arn": RESOURCE_GROUP},
            }
        },
        [
            (
                "E",
                "pool.capacity_reservation.resource_group_arn: Karpenter has no open matching and "
                "no resource groups (it selects reservations by id): name the reservation's id, "
                "or use provisioner: cluster-autoscaler",
            )
        ],
    ),
    # Reserved capacity came in Karpenter 1.6.0: that version has it.
    "karpenter-reserved-at-the-version-it-came-in": (
        {
            "karpenter": {"chart_version": "1.6.0"},
            "cluster": {"kubernetes_version": "1.33"},
            "pool": {"provisioner": "karpenter", "capacity_reservation": ODCR},
        },
        [],
    ),
    "karpenter-reserved-too-old-with-v": (
        {
            "karpenter": {"chart_version": "v1.5.0"},
            "cluster": {"kubernetes_version": "1.33"},
            "pool": {"provisioner": "karpenter", "capacity_reservation": ODCR},
        },
        [
            (
                "E",
                "pool.capacity_reservation: Karpenter v1.5.0 has no reserved capacity (it came in "
                "1.6.0): set karpenter.chart_version to 1.6.0 or newer (the pin is 1.15.0), or "
                "use provisioner: cluster-autoscaler",
            )
        ],
    ),
    # Karpenter's version matters only to its own pools.
    "old-karpenter-and-a-reserved-node-group-pool": (
        {
            "karpenter": {"chart_version": "1.5.0"},
            "cluster": {"kubernetes_version": "1.33"},
            "pool": {"capacity_reservation": ODCR},
        },
        [],
    ),
    # Karpenter reads an alias's family up to its first '@' (its CRD: family@version).
    "karpenter-alias-family-is-before-the-first-at": (
        {"pool": {"provisioner": "karpenter", "karpenter": {"ami_alias": "bottlerocket@v1@x"}}},
        [
            (
                "E",
                "pool.karpenter.ami_alias: 'bottlerocket@v1@x' names AMI family bottlerocket but "
                "ami_family is AL2023: use al2023@<version>",
            )
        ],
    ),
    # Month 13 matches the release pattern but is no date: not an AL2023 release.
    "release-with-no-date": (
        {"pool": {"ami_release_version": "1.35.2-20261320"}},
        [
            (
                "E",
                "pool.ami_release_version: '1.35.2-20261320' is not an AL2023 release "
                "(Kubernetes version-date, e.g. 1.35.2-20261120); EKS refuses it for an AL2023 "
                "node group",
            )
        ],
    ),
    "release-of-another-minor-on-karpenter-is-only-ignored": (
        {"pool": {"provisioner": "karpenter", "ami_release_version": "1.34.2-20261120"}},
        [
            (
                "W",
                "pool.ami_release_version: '1.34.2-20261120' is ignored with provisioner: "
                "karpenter, whose nodes take their AMI from karpenter.ami_alias (the family from "
                "ami_family, the variant from each instance type): remove it, and pin the AMI "
                "with karpenter.ami_alias",
            )
        ],
    ),
}


@pytest.mark.parametrize(("settings", "expected"), CASES.values(), ids=CASES.keys())
def test_rule_edge_reports_its_exact_message(settings, expected):
    assert rules.findings(settings, today=TODAY) == expected


@pytest.mark.parametrize(
    ("pool", "minor", "region", "expected"),
    [
        (
            {"ami_family": "BOTTLEROCKET", "ami_release_version": "1.36.1-20261120"},
            None,
            None,
            [("GP-TARGET-01", "pool.ami_release_version", True)],
        ),
        (
            {"ami_release_version": "1.47.0-6154605b"},
            None,
            None,
            [("GP-TARGET-02", "pool.ami_release_version", True)],
        ),
        (
            {"ami_release_version": "1.35.2-20261120"},
            "1.36",
            None,
            [("GP-TARGET-03", "pool.ami_release_version", True)],
        ),
        (
            {"volume_kms_key_arn": "arn:aws:kms:eu-west-1:123456789012:key/k"},
            None,
            "us-east-1",
            [("GP-TARGET-04", "pool.volume_kms_key_arn", True)],
        ),
    ],
)
def test_a_target_rule_names_its_id(pool, minor, region, expected):
    """Each error by the id docs/guardrails.md lists it under (test_checks.py has the messages)."""
    found = check_pool_target(plan_pool(PoolSettings(**pool)), minor, region)
    assert [(f.rule, f.setting, f.error) for f in found] == expected


@pytest.mark.parametrize(
    ("today", "existing", "expected"),
    [
        (date(2027, 12, 2), False, []),
        (date(2027, 12, 2), True, []),
        (
            date(2027, 12, 3),
            False,
            [
                (
                    "E",
                    "cluster.kubernetes_version: EKS no longer creates 1.34 clusters (extended "
                    "support ended 2027-12-02), so the cluster would fail to create: use 1.36",
                )
            ],
        ),
        (
            date(2027, 12, 3),
            True,
            [
                (
                    "W",
                    "cluster.kubernetes_version: 1.34 left EKS extended support on 2027-12-02, "
                    "and EKS upgrades such clusters itself at a time of its choosing: upgrade "
                    "gpu-pool on yours (aws eks update-cluster-version); the stack follows once "
                    "it reads the new minor, from the cluster's lookup taken again (`cdk context "
                    "--reset` its entry) or, where nothing is looked up, from "
                    "cluster.kubernetes_version",
                )
            ],
        ),
    ],
    ids=["last-day-new", "last-day-existing", "day-after-new", "day-after-existing"],
)
def test_a_minor_is_usable_through_its_last_day_of_extended_support(today, existing, expected):
    cluster = {"kubernetes_version": "1.34"}
    if existing:
        cluster["existing"] = {**EXISTING, "subnets_by_zone": {"eu-west-1a": ["subnet-0123abcd"]}}
    assert rules.findings({"region": "eu-west-1", "cluster": cluster}, today=today) == expected


def test_check_settings_judges_zones_the_stack_knows_and_the_day_it_is_given():
    settings = load_settings(
        {
            "account": "123456789012",
            "region": "eu-west-1",
            "cluster": {"kubernetes_version": "1.34"},
            "pool": {"zones": ["eu-west-1a", "eu-west-1z"]},
        },
        None,
    )
    found = check_settings(
        settings,
        plan_pools(settings),
        known_zones=["eu-west-1a", "eu-west-1b"],
        today=date(2027, 12, 3),
    )
    assert [str(f) for f in documented(found.app)] == [
        "cluster.kubernetes_version: EKS no longer creates 1.34 clusters (extended support ended "
        "2027-12-02), so the cluster would fail to create: use 1.36",
        "pool.zones: 'eu-west-1z' is not an availability zone of eu-west-1 this account has "
        "(eu-west-1a, eu-west-1b, from cdk.context.json): choose among them",
    ]


def test_an_imported_clusters_zones_are_not_judged_against_the_lookup():
    settings = load_settings(
        {
            "account": "123456789012",
            "region": "eu-west-1",
            "cluster": {
                "existing": {**EXISTING, "subnets_by_zone": {"eu-west-1z": ["subnet-0123abcd"]}}
            },
            "pool": {"zones": ["eu-west-1z"]},
        },
        None,
    )
    found = check_settings(settings, plan_pools(settings), known_zones=["eu-west-1a"])
    assert [str(f) for f in found.app] == []


def test_an_imported_cluster_without_a_version_needs_an_autoscaler_image_tag():
    assert [str(f) for f in documented(check_autoscaler(AutoscalerSettings(), None))] == [
        "cluster.kubernetes_version: unknown for an imported cluster, so no Cluster Autoscaler "
        "image can be chosen (its minor must equal the cluster's): pass kubernetes_version or "
        "set autoscaler.image_tag"
    ]


@pytest.mark.parametrize(
    ("settings", "node_groups", "warned"),
    [
        (AutoscalerSettings(expander="least-waste"), 2, True),
        (AutoscalerSettings(expander="least-waste"), 0, True),
        (AutoscalerSettings(expander="least-waste"), 1, False),
        (AutoscalerSettings(expander="least-waste", enabled=False), 2, False),
        (AutoscalerSettings(expander="priority"), 2, False),
    ],
)
def test_least_waste_is_a_warning_once_gpu_node_groups_can_differ(settings, node_groups, warned):
    expected = [
        "autoscaler.expander: 'least-waste' scores CPU and memory only: among GPU node groups "
        "that fit a pod it picks at random (a p5.48xlarge as likely as a g5.xlarge); use "
        "'priority', which prefers fewer GPUs per node, then cheaper families"
    ]
    found = documented(check_expander(settings, node_groups))
    assert [str(f) for f in found] == (expected if warned else [])
    assert not any(f.error for f in found)


@pytest.mark.parametrize(
    ("role", "named"),
    [
        ("arn:aws:iam::123456789012:role/h", "arn:aws:iam::123456789012:role/h"),
        (None, "(the kubectl provider's handler role)"),
    ],
)
def test_karpenter_on_an_imported_cluster_warns_about_the_chart_registry_login(role, named):
    (finding,) = documented(check_chart_registry_login(role))
    assert not finding.error
    assert str(finding) == (
        "cluster.existing.kubectl_provider_role_arn: Karpenter's charts come from "
        f"oci://public.ecr.aws, which the imported cluster's kubectl handler role {named} must "
        "log in to, or the deploy fails and rolls back: make sure that role has the AWS "
        "managed policy AmazonElasticContainerRegistryPublicReadOnly (a cluster created by "
        "aws_eks_v2 gives its own handler role that policy)"
    )


def test_a_node_selector_is_the_autoscalers_unless_named():
    assert [str(f) for f in documented(check_node_selector({"-x": "y"}, []))] == [
        f"autoscaler.node_selector: '-x' is not a label key: use {LABEL_KEY_RULE}"
    ]


@pytest.mark.parametrize(
    ("package", "pin"),
    [({}, "None"), ({"devDependencies": {}}, "None"), ({"devDependencies": {"x": "1"}}, "None")],
)
def test_a_package_json_without_the_cdk_cli_is_not_pinned(tmp_path, package, pin):
    package_json = tmp_path / "package.json"
    package_json.write_text(json.dumps(package), encoding="utf-8")
    assert [str(f) for f in documented(check_cli_pin(package_json))] == [
        f"package.json devDependencies.aws-cdk: {pin} is not an exact version; pin the CDK CLI, "
        'e.g. "2.1148.1"'
    ]


def test_no_package_json_no_pin_to_check(tmp_path):
    assert check_cli_pin(tmp_path / "package.json") == []


@pytest.mark.parametrize(
    ("gpu", "service_monitor", "warned"),
    [
        ("cloudwatch", True, True),
        ("none", True, True),
        ("dcgm-exporter", True, False),
        ("cloudwatch", False, False),
    ],
)
def test_a_service_monitor_without_the_exporter_is_a_warning(gpu, service_monitor, warned):
    found = rules.findings({"metrics": {"gpu": gpu, "service_monitor": service_monitor}})
    assert found == (
        [
            (
                "W",
                "metrics.service_monitor: is used with metrics.gpu: dcgm-exporter only; with "
                f"'{gpu}' no ServiceMonitor is made: remove it, or set metrics.gpu: dcgm-exporter",
            )
        ]
        if warned
        else []
    )
