"""Guardrails of GPU sharing (pool.sharing): one case per rule, each with its exact message."""

import pytest

from gpu_pool.model import catalog
from gpu_pool.settings import ConfigError, load_settings
from tests.support import rules

OPERATOR = {"gpu_software": "gpu-operator"}


def time_slicing(**pool):
    return {"pool": {"sharing": {"mode": "time-slicing", "replicas": 4}, **pool}}


def mig(sharing, instance_type="p5.48xlarge", **pool):
    return {
        "pool": {
            "instance_types": [instance_type],
            **OPERATOR,
            "sharing": {"mode": "mig", **sharing},
            **pool,
        }
    }


MIG_FAMILIES = (
    "g7e (nvidia-rtx-pro-6000), p4d (nvidia-a100), p4de (nvidia-a100), p5 (nvidia-h100), "
    "p5e (nvidia-h200), p5en (nvidia-h200), p6-b200 (nvidia-b200)"
)

CASES = {
    "mig-on-a-gpu-without-it": (
        mig({"strategy": "single", "profile": "1g.10gb"}, instance_type="g6e.xlarge"),
        [
            (
                "E",
                f"pool.instance_types[0]: 'g6e.xlarge' (nvidia-l40s) has no MIG; MIG GPUs on EC2: {MIG_FAMILIES}: use one of those, or sharing mode time-slicing",
            )
        ],
    ),
    "mig-unknown-profile": (
        mig({"strategy": "single", "profile": "1g.5gb"}),
        [
            (
                "E",
                "pool.sharing.profile: '1g.5gb' is not a MIG profile of p5.48xlarge's nvidia-h100: use one of 1g.10gb, 1g.10gb+me, 1g.20gb, 2g.20gb, 3g.40gb, 4g.40gb, 7g.80gb",
            )
        ],
    ),
    "valid-mig-mixed-on-h200": (
        mig({"strategy": "mixed", "layout": {"3g.71gb": 1}}, instance_type="p5en.48xlarge"),
        [],
    ),
    "mig-layout-profile-of-another-gpu": (
        mig({"strategy": "mixed", "layout": {"3g.40gb": 1, "1g.18gb": 2}}),
        [
            (
                "E",
                "pool.sharing.layout: '1g.18gb' is not a MIG profile of p5.48xlarge's nvidia-h100: use one of 1g.10gb, 1g.10gb+me, 1g.20gb, 2g.20gb, 3g.40gb, 4g.40gb, 7g.80gb",
            )
        ],
    ),
    "mig-layout-over-compute": (
        mig({"strategy": "mixed", "layout": {"4g.40gb": 1, "2g.20gb": 1, "1g.10gb": 2}}),
        [
            (
                "E",
                "pool.sharing.layout: needs 8 compute and 8 memory slices; p5.48xlarge's nvidia-h100 has 7 and 8: take instances out of the layout",
            )
        ],
    ),
    "mig-layout-over-memory": (
        mig({"strategy": "mixed", "layout": {"3g.40gb": 1, "1g.20gb": 3}}),
        [
            (
                "E",
                "pool.sharing.layout: needs 6 compute and 10 memory slices; p5.48xlarge's nvidia-h100 has 7 and 8: take instances out of the layout",
            )
        ],
    ),
    "valid-mig-single-whole-gpu": (mig({"strategy": "single", "profile": "7g.80gb"}), []),
    "valid-mig-mixed-at-a-profiles-count": (
        mig({"strategy": "mixed", "layout": {"1g.10gb": 4}}, instance_type="p4d.24xlarge"),
        [],
    ),
    "mig-layout-count-above-the-gpus": (
        mig({"strategy": "mixed", "layout": {"1g.10gb": 5}}, instance_type="p4d.24xlarge"),
        [
            (
                "E",
                "pool.sharing.layout: 5 x '1g.10gb', but p4d.24xlarge's nvidia-a100 holds at most 4: lower its count",
            ),
            (
                "E",
                "pool.sharing.layout: needs 5 compute and 10 memory slices; p4d.24xlarge's nvidia-a100 has 7 and 8: take instances out of the layout",
            ),
        ],
    ),
    "mig-two-gpus-in-one-pool": (
        {
            "pool": {
                "instance_types": ["p4d.24xlarge", "p5.48xlarge"],
                **OPERATOR,
                "sharing": {"mode": "mig", "strategy": "single", "profile": "3g.40gb"},
            }
        },
        [
            (
                "E",
                "pool.sharing.mode: 'mig' with instance types of different MIG GPUs (p4d.24xlarge, p5.48xlarge); one layout is for one GPU: put them in separate pools",
            ),
            (
                "E",
                "pool.sharing.profile: '3g.40gb' is not a MIG profile of p4d.24xlarge's nvidia-a100: use one of 1g.5gb, 1g.5gb+me, 1g.10gb, 2g.10gb, 3g.20gb, 4g.20gb, 7g.40gb",
            ),
        ],
    ),
    "mig-without-the-gpu-operator": (
        mig({"strategy": "single", "profile": "1g.10gb"}, gpu_software="device-plugin"),
        [
            (
                "E",
                "pool.gpu_software: 'device-plugin' with sharing mode mig: only the GPU Operator's MIG manager partitions the GPUs (the device plugin advertises only partitions that exist): set gpu_software: gpu-operator",
            )
        ],
    ),
    "mig-with-the-default-gpu-software": (
        {
            "pool": {
                "instance_types": ["p5.48xlarge"],
                "sharing": {"mode": "mig", "strategy": "single", "profile": "1g.10gb"},
            }
        },
        [
            (
                "E",
                "pool.gpu_software: the default 'device-plugin' with sharing mode mig: only the GPU Operator's MIG manager partitions the GPUs (the device plugin advertises only partitions that exist): set gpu_software: gpu-operator",
            )
        ],
    ),
    "mig-without-strategy": (
        mig({}),
        [
            (
                "E",
                "pool.sharing.strategy: required with mode mig: single (one profile on every GPU) or mixed (a layout of profiles)",
            )
        ],
    ),
    "mig-single-with-a-layout": (
        mig({"strategy": "single", "layout": {"1g.10gb": 7}}),
        [
            (
                "E",
                "pool.sharing.layout: is for strategy mixed; strategy single takes profile: use profile",
            ),
            (
                "E",
                "pool.sharing.profile: required with strategy single: the profile every GPU is split into, e.g. 1g.10gb",
            ),
        ],
    ),
    "mig-mixed-with-a-profile": (
        mig({"strategy": "mixed", "profile": "1g.10gb", "layout": {"1g.10gb": 7}}),
        [
            (
                "E",
                "pool.sharing.profile: is for strategy single; strategy mixed takes layout: use layout",
            )
        ],
    ),
    "mig-mixed-without-a-layout": (
        mig({"strategy": "mixed"}),
        [
            (
                "E",
                "pool.sharing.layout: required with strategy mixed: profile -> instances per GPU, e.g. {3g.40gb: 1, 2g.20gb: 1, 1g.10gb: 2}",
            )
        ],
    ),
    "time-slicing-without-replicas": (
        {"pool": {"sharing": {"mode": "time-slicing"}}},
        [
            (
                "E",
                "pool.sharing.replicas: required with mode time-slicing: how many pods share each GPU, 2 to 48",
            )
        ],
    ),
    "time-slicing-with-a-mig-field": (
        time_slicing(sharing={"mode": "time-slicing", "replicas": 4, "strategy": "single"}),
        [
            (
                "E",
                "pool.sharing.strategy: is for mode mig, but mode is time-slicing: remove it, or set mode: mig",
            )
        ],
    ),
    "mig-with-a-time-slicing-field": (
        mig({"strategy": "single", "profile": "1g.10gb", "rename": True}),
        [
            (
                "E",
                "pool.sharing.rename: is for mode time-slicing, but mode is mig: remove it, or set mode: time-slicing",
            )
        ],
    ),
    "no-mode-with-replicas": (
        {"pool": {"sharing": {"replicas": 4}}},
        [
            (
                "E",
                "pool.sharing.replicas: is for mode time-slicing, but mode is none: remove it, or set mode: time-slicing",
            )
        ],
    ),
    "sharing-with-karpenter": (
        time_slicing(provisioner="karpenter"),
        [
            (
                "E",
                "pool.sharing.mode: 'time-slicing' with provisioner: karpenter: Karpenter counts a node's physical GPUs from EC2's data, not the shares its device plugin advertises (kubernetes-sigs/karpenter#2140), so it launches a node per pod asking for nvidia.com/gpu and none for other GPU resources; NodeOverlay, which could tell it, is alpha in Karpenter 1.15.0: use provisioner: cluster-autoscaler",
            )
        ],
    ),
    "sharing-with-auto-mode": (
        time_slicing(provisioner="auto-mode"),
        [
            (
                "E",
                "pool.sharing.mode: 'time-slicing' with provisioner: auto-mode: Auto Mode runs its own device plugin and its NodeClass has no setting to share GPUs with (EKS user guide, automode/auto-accelerated.adoc, create-node-class.adoc), and its Karpenter counts physical GPUs: use provisioner: cluster-autoscaler",
            )
        ],
    ),
    "mig-on-an-unknown-instance-type": (
        mig({"strategy": "single", "profile": "1g.10gb"}, instance_type="p9.48xlarge"),
        [
            (
                "E",
                "pool.instance_types[0]: 'p9.48xlarge' is not an NVIDIA GPU instance type in the catalog (families: g4dn, g5, g5g, g6, g6e, g6f, g7, g7e, gr6, gr6f, p3, p3dn, p4d, p4de, p5, p5e, p5en, p6-b200, p6-b300, p6e-gb200)",
            )
        ],
    ),
    "time-slicing-on-bottlerocket": (
        time_slicing(ami_family="BOTTLEROCKET"),
        [
            (
                "E",
                "pool.sharing.mode: 'time-slicing' on Bottlerocket: its NVIDIA AMI runs its own device plugin, which takes sharing from Bottlerocket settings (settings.kubelet-device-plugins.nvidia: time-slicing, and MIG with one profile) that gpu-pool does not write: use ami_family: AL2023",
            )
        ],
    ),
    "mig-on-bottlerocket": (
        mig({"strategy": "single", "profile": "1g.10gb"}, ami_family="BOTTLEROCKET"),
        [
            (
                "E",
                "pool.sharing.mode: 'mig' on Bottlerocket: its NVIDIA AMI runs its own device plugin, which takes sharing from Bottlerocket settings (settings.kubelet-device-plugins.nvidia: time-slicing, and MIG with one profile) that gpu-pool does not write: use ami_family: AL2023",
            )
        ],
    ),
    "sharing-labels-are-gpu-pools": (
        time_slicing(labels={"nvidia.com/device-plugin.config": "other"}),
        [
            (
                "E",
                "pool.labels: 'nvidia.com/device-plugin.config' is set by gpu-pool itself (it picks the pool's device plugin config: set pool.sharing): remove it",
            )
        ],
    ),
    "valid-time-slicing": (time_slicing(), []),
    "valid-renamed-time-slicing": (
        {"pool": {"sharing": {"mode": "time-slicing", "replicas": 48, "rename": True}}},
        [],
    ),
    "valid-mig-single-on-b200": (
        mig({"strategy": "single", "profile": "1g.23gb"}, instance_type="p6-b200.48xlarge"),
        [],
    ),
    "valid-mig-mixed-on-rtx-pro-6000": (
        mig({"strategy": "mixed", "layout": {"2g.48gb": 1, "1g.24gb": 2}}, "g7e.48xlarge"),
        [],
    ),
}


@pytest.mark.parametrize(("settings", "expected"), CASES.values(), ids=CASES.keys())
def test_rule_reports_its_exact_message(settings, expected):
    assert rules.findings(settings) == expected


# Each case's findings by rule id, in the same order: the id is what docs/guardrails.md indexes
# and what an app acknowledges a warning by.
RULE_IDS = {
    "mig-on-a-gpu-without-it": ["GP-SHARE-10"],
    "mig-unknown-profile": ["GP-SHARE-12"],
    "valid-mig-mixed-on-h200": [],
    "mig-layout-profile-of-another-gpu": ["GP-SHARE-12"],
    "mig-layout-over-compute": ["GP-SHARE-14"],
    "mig-layout-over-memory": ["GP-SHARE-14"],
    "valid-mig-single-whole-gpu": [],
    "valid-mig-mixed-at-a-profiles-count": [],
    "mig-layout-count-above-the-gpus": ["GP-SHARE-13", "GP-SHARE-14"],
    "mig-two-gpus-in-one-pool": ["GP-SHARE-11", "GP-SHARE-12"],
    "mig-without-the-gpu-operator": ["GP-SHARE-06"],
    "mig-with-the-default-gpu-software": ["GP-SHARE-06"],
    "mig-without-strategy": ["GP-SHARE-07"],
    "mig-single-with-a-layout": ["GP-SHARE-08", "GP-SHARE-09"],
    "mig-mixed-with-a-profile": ["GP-SHARE-08"],
    "mig-mixed-without-a-layout": ["GP-SHARE-09"],
    "time-slicing-without-replicas": ["GP-SHARE-05"],
    "time-slicing-with-a-mig-field": ["GP-SHARE-01"],
    "mig-with-a-time-slicing-field": ["GP-SHARE-01"],
    "no-mode-with-replicas": ["GP-SHARE-01"],
    "sharing-with-karpenter": ["GP-SHARE-02"],
    "sharing-with-auto-mode": ["GP-SHARE-03"],
    "mig-on-an-unknown-instance-type": ["GP-CATALOG-02"],
    "time-slicing-on-bottlerocket": ["GP-SHARE-04"],
    "mig-on-bottlerocket": ["GP-SHARE-04"],
    "sharing-labels-are-gpu-pools": ["GP-POOL-11"],
    "valid-time-slicing": [],
    "valid-renamed-time-slicing": [],
    "valid-mig-single-on-b200": [],
    "valid-mig-mixed-on-rtx-pro-6000": [],
}


@pytest.mark.parametrize("case", CASES.keys())
def test_each_finding_names_its_rule(case):
    assert rules.rule_ids(CASES[case][0]) == RULE_IDS[case]


def test_every_case_has_its_rule_ids():
    assert list(RULE_IDS) == list(CASES)


ERROR_CASES = {k: v for k, v in CASES.items() if any(level == "E" for level, _ in v[1])}


@pytest.mark.synth
@pytest.mark.parametrize(("settings", "expected"), ERROR_CASES.values(), ids=ERROR_CASES.keys())
def test_errors_stop_before_anything_is_synthesized(settings, expected):
    rules.assert_nothing_built(settings, expected)


@pytest.mark.parametrize(
    ("sharing", "message"),
    [
        (
            {"mode": "time-slicing", "replicas": 1},
            "pool.sharing.replicas: must be at least 2 (got 1)",
        ),
        (
            {"mode": "time-slicing", "replicas": 49},
            "pool.sharing.replicas: must be at most 48 (got 49)",
        ),
        (
            {"mode": "mps"},
            "pool.sharing.mode: must be one of 'none', 'time-slicing' or 'mig' (got 'mps')",
        ),
        (
            {"mode": "mig", "strategy": "mixed", "layout": {"1g.10gb": 0}},
            "pool.sharing.layout.1g.10gb: must be at least 1 (got 0)",
        ),
    ],
)
def test_sharing_values_out_of_range_are_refused_where_they_enter(sharing, message):
    with pytest.raises(ConfigError) as err:
        load_settings({"pool": {"sharing": sharing}}, None)
    assert str(err.value) == message


# NVIDIA Multi-Instance GPU user guide, "Supported GPUs": MIG from Ampere on (A100, A30, H100,
# H200, B200, RTX PRO 6000 Blackwell); the others on EC2 have none.
@pytest.mark.parametrize(
    ("family", "has_mig"),
    [
        ("p4d", True),
        ("p4de", True),
        ("p5", True),
        ("p5e", True),
        ("p5en", True),
        ("p6-b200", True),
        ("g7e", True),
        ("g5", False),
        ("g6", False),
        ("g6e", False),
        ("g4dn", False),
        ("p3", False),
    ],
)
def test_the_catalog_knows_which_gpus_have_mig(family, has_mig):
    assert (catalog.GPU_FAMILIES[family].mig is not None) is has_mig


def test_every_mig_gpu_holds_each_profile_alone_at_its_count():
    """Each profile at its documented count fits its GPU's slices (the table is consistent)."""
    for family in catalog.GPU_FAMILIES.values():
        if family.mig is None:
            continue
        for profile in family.mig.profiles.values():
            assert profile.compute_slices * profile.max_count <= family.mig.compute_slices
            assert profile.memory_slices * profile.max_count <= family.mig.memory_slices
