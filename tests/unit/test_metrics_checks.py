"""Guardrails of the cluster's GPU metrics (`metrics`) that read the pools: one case per rule,
each with its exact message; and the CloudWatch add-on's exporter reach the rule is built on,
checked against the add-on chart's own affinity."""

import pytest

from gpu_pool.model.catalog import GPU_FAMILIES
from gpu_pool.model.scheduling import pod_fits_node
from gpu_pool.plan.metrics import CLOUDWATCH_DCGM_EXPORTER_INSTANCE_TYPES
from tests.support import rules
from tests.support.chart_defaults import CLOUDWATCH_DCGM_EXPORTER_CHART_DEFAULTS

INSTANCE_TYPE = "node.kubernetes.io/instance-type"


def cloudwatch(**pools):
    return {"pools": pools, "metrics": {"gpu": "cloudwatch"}}


SKIPPED = (
    "the CloudWatch add-on (v6.4.0-eksbuild.1) runs its DCGM exporter only on the instance "
    "types its chart lists (dcgmExporter.affinity), and these are not among them: their nodes "
    "send no GPU metrics; use metrics.gpu: dcgm-exporter, which finds GPU nodes by label"
)

CASES = {
    "cloudwatch-on-types-its-exporter-skips": (
        cloudwatch(
            inference={
                "instance_types": ["g6.xlarge", ["g7e.2xlarge", "p5.4xlarge"]],
                "labels": {"workload": "inference"},
            },
            fractional={
                "instance_types": ["g6f.xlarge", "gr6f.4xlarge"],
                "labels": {"workload": "fractional"},
            },
        ),
        [
            ("W", f"pools.inference.instance_types: g7e.2xlarge, p5.4xlarge: {SKIPPED}"),
            ("W", f"pools.fractional.instance_types: g6f.xlarge, gr6f.4xlarge: {SKIPPED}"),
        ],
    ),
    "cloudwatch-on-a-karpenter-pool": (
        cloudwatch(gpu={"provisioner": "karpenter", "instance_types": ["g7e.2xlarge"]}),
        [("W", f"pools.gpu.instance_types: g7e.2xlarge: {SKIPPED}")],
    ),
    "cloudwatch-on-listed-types": (
        cloudwatch(
            gpu={"instance_types": ["g6.xlarge", "p5.48xlarge"]},
            arm={"instance_types": ["g5g.xlarge"], "labels": {"workload": "arm"}},
        ),
        [],
    ),
    "dcgm-exporter-on-any-type": (
        {
            "pools": {"gpu": {"instance_types": ["g7e.2xlarge", "p5.4xlarge"]}},
            "metrics": {"gpu": "dcgm-exporter"},
        },
        [],
    ),
}

RULE_IDS = {
    "cloudwatch-on-types-its-exporter-skips": ["GP-METRICS-02", "GP-METRICS-02"],
    "cloudwatch-on-a-karpenter-pool": ["GP-METRICS-02"],
    "cloudwatch-on-listed-types": [],
    "dcgm-exporter-on-any-type": [],
}


@pytest.mark.parametrize(("settings", "expected"), CASES.values(), ids=CASES.keys())
def test_rule_reports_its_exact_message(settings, expected):
    assert rules.findings(settings) == expected


@pytest.mark.parametrize("case", CASES.keys())
def test_each_finding_names_its_rule(case):
    assert rules.rule_ids(CASES[case][0]) == RULE_IDS[case]


def test_every_case_has_its_rule_ids():
    assert list(RULE_IDS) == list(CASES)


def test_the_rule_knows_the_instance_types_of_the_add_ons_chart():
    """The names the rule checks are the chart's required affinity's EC2 names (the ml.* ones
    are SageMaker HyperPod's)."""
    ((expression, _),) = [
        term["matchExpressions"]
        for term in CLOUDWATCH_DCGM_EXPORTER_CHART_DEFAULTS["affinity"]["nodeAffinity"][
            "requiredDuringSchedulingIgnoredDuringExecution"
        ]["nodeSelectorTerms"]
    ]
    assert expression["key"] == INSTANCE_TYPE
    ec2 = {name for name in expression["values"] if not name.startswith("ml.")}
    assert ec2 == CLOUDWATCH_DCGM_EXPORTER_INSTANCE_TYPES


def test_the_chart_schedules_the_exporter_on_every_catalog_type_but_the_ones_the_rule_names():
    """Each catalogued instance type's node against the exporter's scheduling terms as the chart
    sets them: it runs there exactly when the rule stays quiet. The chart lacks the g7e and
    fractional L4 families and the one-GPU p5."""
    missed = set()
    for family in GPU_FAMILIES.values():
        for size in family.gpus_by_size:
            name = f"{family.family}.{size}"
            labels = {INSTANCE_TYPE: name, "kubernetes.io/os": "linux"}
            runs = pod_fits_node(CLOUDWATCH_DCGM_EXPORTER_CHART_DEFAULTS, labels, [])
            assert runs is (name in CLOUDWATCH_DCGM_EXPORTER_INSTANCE_TYPES), name
            if not runs:
                missed.add(name)
    g7e = {f"g7e.{size}" for size in GPU_FAMILIES["g7e"].gpus_by_size}
    g6f = {f"g6f.{size}" for size in GPU_FAMILIES["g6f"].gpus_by_size}
    assert missed == g7e | g6f | {"gr6f.4xlarge", "p5.4xlarge"}
