"""`gpu-pool plan` (#29 item 1): what each pool builds, from the settings or a cloud assembly,
without AWS; every figure is the catalog's (GPUs, EFA, MIG) and the price table's."""

from __future__ import annotations

import copy
import json

import pytest
import yaml

from gpu_pool.cli.commands.plan.render import plan_table
from gpu_pool.cli.main import main
from gpu_pool.model import catalog
from gpu_pool.model.prices import ON_DEMAND_USD_PER_HOUR, PRICE_SOURCE
from gpu_pool.plan.record import POOL_RECORD_TYPE, PoolRecord
from gpu_pool.plan.summary import pool_summary
from tests.support.paths import ROOT
from tests.support.settings import CAPACITY_BLOCK_ID, DRA, ODCR_ID, TRAINING, ULTRASERVER

CDK_JSON = str(ROOT / "cdk.json")
PRICES = f"Prices: {PRICE_SOURCE}; unknown: a type the table has no price for."


def _plan(capsys, tmp_path, settings=None, *options):
    argv = ["plan", "--cdk-json", CDK_JSON, *options]
    if settings is not None:
        config = tmp_path / "settings.yaml"
        config.write_text(yaml.safe_dump(settings, sort_keys=False))
        argv += ["--config", str(config)]
    code = main(argv)
    out, err = capsys.readouterr()
    assert (code, err) == (0, "")
    return out


def _pools(capsys, tmp_path, settings=None):
    data = json.loads(_plan(capsys, tmp_path, settings, "--output", "json"))
    assert data["prices"] == PRICE_SOURCE
    return {pool["pool"]: pool for pool in data["pools"]}


# A node group pool's repair (plan/repair.py defaults): EKS's reboot XIDs the agent raises.
REPAIR = (
    "on; pauses as EKS does (more than 5 nodes and 20% unhealthy); 1 node at a time; "
    "reboots on XID 48, XID 63, XID 64, XID 95"
)


def test_the_default_app_is_one_table_of_its_pool(capsys, tmp_path):
    """cdk.json: one g5.xlarge node group (1 A10G, $1.006/h in us-east-1), at most 8 nodes."""
    assert catalog.lookup("g5.xlarge").gpu_count == 1
    assert ON_DEMAND_USD_PER_HOUR["g5.xlarge"] == 1.006
    assert _plan(capsys, tmp_path) == (
        "Cluster gpu-pool, region of the deploy environment\n"
        "  Pool gpu\n"
        "    provisioner       cluster-autoscaler\n"
        "    launched by       node group g5.xlarge\n"
        "    per node          g5.xlarge: 1 GPU\n"
        "    zones             every zone of the cluster's subnets\n"
        "    nodes             min 0, max 8 (per node group)\n"
        "    max GPUs          8\n"
        "    GPU sharing       none (whole GPUs)\n"
        "    reservation       none\n"
        "    EFA               no\n"
        "    device software   device-plugin\n"
        "    pods tolerate     nvidia.com/gpu=true:NoSchedule\n"
        f"    repair            {REPAIR}\n"
        "    vCPUs at max      32 of Running On-Demand G and VT instances (L-DB2E81BA; read the "
        "quota with: aws service-quotas get-service-quota --service-code ec2 --quota-code "
        "L-DB2E81BA --region REGION)\n"
        "    on-demand at max  $8.05/hour\n"
        f"{PRICES}\n"
    )


def test_the_default_app_as_json(capsys, tmp_path):
    (pool,) = _pools(capsys, tmp_path).values()
    g5 = catalog.lookup("g5.xlarge")
    assert pool == {
        "pool": "gpu",
        "cluster": "gpu-pool",
        "region": None,
        "provisioner": "cluster-autoscaler",
        "launched_by": ["node group g5.xlarge"],
        "nodes": [
            {
                "instance_type": "g5.xlarge",
                "gpus": g5.gpu_count,
                "advertises": {"nvidia.com/gpu": g5.gpu_count},
                "usd_per_hour": ON_DEMAND_USD_PER_HOUR["g5.xlarge"],
            }
        ],
        "zones": [],
        "min_size": 0,
        "max_size": 8,
        "max_nodes": 8,
        "max_gpus": 8 * g5.gpu_count,
        "reservation": None,
        "efa_interfaces": 0,
        "gpu_software": "device-plugin",
        "sharing": None,
        "device_classes": [],
        "tolerations": ["nvidia.com/gpu=true:NoSchedule"],
        "repair": REPAIR,
        "usd_per_hour_at_max": round(8 * ON_DEMAND_USD_PER_HOUR["g5.xlarge"], 4),
        # 8 nodes of 4 vCPUs; the quota's value is not known offline.
        "vcpu_quotas": [
            {
                "code": "L-DB2E81BA",
                "name": "Running On-Demand G and VT instances",
                "vcpus_at_max": 8 * g5.vcpus,
                "value": None,
            }
        ],
        "billing_note": None,
    }


def test_a_training_fleet_names_each_pools_reservation_efa_and_size(capsys, tmp_path):
    """tests/support/settings.py TRAINING: a Capacity Block pool and its on-demand twin
    (p5.48xlarge, EFA), an ODCR node group pool, a Karpenter pool on an ODCR with fallback."""
    pools = _pools(capsys, tmp_path, TRAINING)
    assert list(pools) == ["train", "train-od", "odcr", "kodcr"]
    p5, g6e, p5en = (catalog.lookup(t) for t in ("p5.48xlarge", "g6e.12xlarge", "p5en.48xlarge"))
    figures = {
        name: (
            pool["provisioner"],
            [n["instance_type"] for n in pool["nodes"]],
            pool["zones"],
            pool["max_gpus"],
            pool["efa_interfaces"],
            pool["reservation"],
            pool["usd_per_hour_at_max"],
            pool["billing_note"],
        )
        for name, pool in pools.items()
    }
    block = "reserved (capacity-block): billed by the reservation"
    assert figures == {
        "train": (
            "cluster-autoscaler",
            ["p5.48xlarge"],
            ["us-east-1a"],
            8 * p5.gpu_count,
            p5.efa_interfaces,
            f"capacity-block {CAPACITY_BLOCK_ID}",
            round(8 * ON_DEMAND_USD_PER_HOUR["p5.48xlarge"], 4),
            block,
        ),
        "train-od": (
            "cluster-autoscaler",
            ["p5.48xlarge"],
            ["us-east-1a"],
            8 * p5.gpu_count,
            p5.efa_interfaces,
            None,
            round(8 * ON_DEMAND_USD_PER_HOUR["p5.48xlarge"], 4),
            None,
        ),
        "odcr": (
            "cluster-autoscaler",
            ["g6e.12xlarge"],
            [],
            8 * g6e.gpu_count,
            0,
            f"odcr {ODCR_ID}",
            round(8 * ON_DEMAND_USD_PER_HOUR["g6e.12xlarge"], 4),
            "reserved (odcr): billed by the reservation",
        ),
        "kodcr": (
            "karpenter",
            ["p5en.48xlarge"],
            ["us-east-1a"],
            8 * p5en.gpu_count,
            p5en.efa_interfaces,
            f"odcr {ODCR_ID}, on-demand when it is full",
            round(8 * ON_DEMAND_USD_PER_HOUR["p5en.48xlarge"], 4),
            "reserved (odcr): billed by the reservation, on demand past it",
        ),
    }
    assert pools["kodcr"]["launched_by"] == ["NodePool gpu-pool-kodcr"]
    assert pools["train"]["launched_by"] == ["node group p5.48xlarge in us-east-1a"]
    assert (pools["train"]["region"], pools["train"]["cluster"]) == ("us-east-1", "gpu-pool")


def test_a_training_fleets_table_shows_the_capacity_block_pool(capsys, tmp_path):
    table = _plan(capsys, tmp_path, TRAINING)
    assert table.startswith("Cluster gpu-pool, region us-east-1\n  Pool train\n")
    block = table.split("  Pool train\n", 1)[1].split("  Pool ", 1)[0]
    # 8 nodes x 8 H100 (catalog), 32 EFA interfaces each, 8 x $55.04.
    assert block == (
        "    provisioner       cluster-autoscaler\n"
        "    launched by       node group p5.48xlarge in us-east-1a\n"
        "    per node          p5.48xlarge: 8 GPUs\n"
        "    zones             us-east-1a\n"
        "    nodes             min 0, max 8 (per node group)\n"
        "    max GPUs          64\n"
        "    GPU sharing       none (whole GPUs)\n"
        f"    reservation       capacity-block {CAPACITY_BLOCK_ID}\n"
        "    EFA               32 interfaces per node\n"
        "    device software   device-plugin\n"
        "    pods tolerate     nvidia.com/gpu=true:NoSchedule\n"
        f"    repair            {REPAIR}\n"
        "    vCPUs at max      none counted (a Capacity Block's instances, or sizes the record "
        "lacks)\n"
        "    on-demand at max  $440.32/hour; reserved (capacity-block): billed by the "
        "reservation\n"
    )
    assert "  Pool kodcr\n    provisioner       karpenter\n" in table
    assert "    nodes             max 8 (NodePool limit)\n" in table


SHARING = {
    "pools": {
        "share": {
            "instance_types": ["g6.12xlarge", ["g5.12xlarge"]],
            "max_size": 2,
            "taints": [],
            "sharing": {"mode": "time-slicing", "replicas": 4, "rename": True},
        },
        "mig": {
            "instance_types": ["p4d.24xlarge"],
            "max_size": 1,
            "gpu_software": "gpu-operator",
            "sharing": {"mode": "mig", "strategy": "single", "profile": "3g.20gb"},
        },
    }
}


def test_a_sharing_pool_shows_the_shares_each_node_advertises(capsys, tmp_path):
    pools = _pools(capsys, tmp_path, SHARING)
    share, mig = pools["share"], pools["mig"]
    g6, g5, p4d = (catalog.lookup(t) for t in ("g6.12xlarge", "g5.12xlarge", "p4d.24xlarge"))
    assert [(n["instance_type"], n["gpus"], n["advertises"]) for n in share["nodes"]] == [
        ("g6.12xlarge", g6.gpu_count, {"nvidia.com/gpu.shared": 4 * g6.gpu_count}),
        ("g5.12xlarge", g5.gpu_count, {"nvidia.com/gpu.shared": 4 * g5.gpu_count}),
    ]
    # Two node groups of at most 2 nodes each.
    assert (share["max_nodes"], share["max_gpus"]) == (4, 2 * (g6.gpu_count + g5.gpu_count))
    assert share["usd_per_hour_at_max"] == round(
        2 * (ON_DEMAND_USD_PER_HOUR["g6.12xlarge"] + ON_DEMAND_USD_PER_HOUR["g5.12xlarge"]), 4
    )
    assert share["tolerations"] == []
    # An A100-40GB holds max_count 3g.20gb instances (NVIDIA's MIG user guide, in the catalog).
    per_gpu = p4d.family.mig.profiles["3g.20gb"].max_count
    assert mig["nodes"][0]["advertises"] == {"nvidia.com/gpu": p4d.gpu_count * per_gpu}
    assert mig["sharing"] == f"mig (single), per GPU: {per_gpu} x 3g.20gb"
    table = _plan(capsys, tmp_path, SHARING)
    assert (
        "    per node          g6.12xlarge: 4 GPUs (16 nvidia.com/gpu.shared); g5.12xlarge: "
        "4 GPUs (16 nvidia.com/gpu.shared)\n"
        "    zones             every zone of the cluster's subnets\n"
        "    nodes             min 0, max 2 (per node group), 4 in all\n"
        "    max GPUs          16\n"
        "    GPU sharing       time-slicing, 4 shares per GPU\n"
    ) in table
    assert "    pods tolerate     nothing (no taints)\n" in table
    assert "    per node          p4d.24xlarge: 8 GPUs (16 nvidia.com/gpu)\n" in table


def test_a_type_the_price_table_lacks_costs_unknown(capsys, tmp_path):
    """p5e is sold as Capacity Blocks: Karpenter's on-demand table has no p5e price."""
    assert "p5e.48xlarge" not in ON_DEMAND_USD_PER_HOUR
    settings = {"pool": {"instance_types": ["p5e.48xlarge", "p5.48xlarge"]}}
    (pool,) = _pools(capsys, tmp_path, settings).values()
    assert [n["usd_per_hour"] for n in pool["nodes"]] == [
        None,
        ON_DEMAND_USD_PER_HOUR["p5.48xlarge"],
    ]
    assert pool["usd_per_hour_at_max"] is None
    assert "    on-demand at max  unknown\n" in _plan(capsys, tmp_path, settings)


def test_a_karpenter_pools_cost_is_its_node_limit_of_the_dearest_type_within_its_gpu_limit(
    capsys, tmp_path
):
    """4 nodes, at most 8 GPUs: 2 g5.12xlarge (4 GPUs) are the dearest mix; 4 g5.xlarge
    (1 GPU) or 1 g5.12xlarge and 3 g5.xlarge cost less."""
    settings = {
        "pool": {
            "provisioner": "karpenter",
            "instance_types": ["g5.xlarge", "g5.12xlarge"],
            "max_size": 4,
            "karpenter": {"gpu_limit": 8},
        }
    }
    (pool,) = _pools(capsys, tmp_path, settings).values()
    prices = ON_DEMAND_USD_PER_HOUR
    assert pool["max_gpus"] == 8
    assert pool["usd_per_hour_at_max"] == round(
        max(4 * prices["g5.xlarge"], 2 * prices["g5.12xlarge"]), 4
    )


def test_a_karpenter_pools_cost_at_max_is_its_dearest_mix_of_types(capsys, tmp_path):
    """10 nodes, at most 20 GPUs: 2 p5.48xlarge (8 GPUs) leave 4 GPUs and 8 nodes, which 4
    g5.xlarge fill; no single type costs as much (#29 review item 7: $110.08, 2 p5.48xlarge)."""
    settings = {
        "pool": {
            "provisioner": "karpenter",
            "instance_types": ["g5.xlarge", "p5.48xlarge"],
            "max_size": 10,
            "karpenter": {"gpu_limit": 20},
        }
    }
    (pool,) = _pools(capsys, tmp_path, settings).values()
    prices = ON_DEMAND_USD_PER_HOUR
    assert pool["usd_per_hour_at_max"] == round(
        2 * prices["p5.48xlarge"] + 4 * prices["g5.xlarge"], 4
    )
    assert "    on-demand at max  $114.10/hour\n" in _plan(capsys, tmp_path, settings)


@pytest.mark.synth
def test_a_cloud_assemblys_pools_are_planned_from_their_records(two_stack_assembly, capsys):
    """A library user's app (tests/support/two_stacks.py): no settings, the records only.
    Nothing on stderr: `./dev synth` runs it after every synth (#29 review item 2: a stale note
    that `plan --cdk-out` is no longer the replacements check; its old options exit 2)."""
    assert main(["plan", "--cdk-out", str(two_stack_assembly), "--output", "json"]) == 0
    out, err = capsys.readouterr()
    pools = {p["pool"]: p for p in json.loads(out)["pools"]}
    g6e = catalog.lookup("g6e.12xlarge")
    assert {name: (p["cluster"], p["max_gpus"]) for name, p in pools.items()} == {
        "inference": ("ml-platform", 8 * catalog.lookup("g5.xlarge").gpu_count),
        "training": ("ml-platform", 8 * g6e.gpu_count),
    }
    assert pools["training"]["tolerations"] == [
        "nvidia.com/gpu=true:NoSchedule",
        "team=ml:NoSchedule",
    ]
    assert err == ""


@pytest.mark.parametrize("argv", [["--help"], ["replacements", "--help"]])
def test_replacements_help_says_plan_is_no_longer_its_name(capsys, argv):
    with pytest.raises(SystemExit):
        main(argv)
    assert (
        "(offline: --deployed and --new; 'plan' was its name until it became the pools' plan)"
        in " ".join(capsys.readouterr().out.split())
    )


def test_a_record_written_before_sizes_were_recorded_says_unknown():
    """Records of an older gpu-pool lack min_size and max_size: the plan does not guess them."""
    record = PoolRecord.from_json(
        {
            "name": "gpu",
            "provisioner": "cluster-autoscaler",
            "node_selector": {"gpu-pool.io/pool": "gpu"},
            "tolerations": [],
            "gpu_software": "device-plugin",
            "gpu_resource": "nvidia.com/gpu",
            "gpus_per_node": 1,
            "node_groups": [{"instance_types": ["g5.xlarge"], "gpus": 1}],
            "kind": POOL_RECORD_TYPE,
            "version": 1,
        }
    )
    summary = pool_summary(record)
    assert (summary.max_nodes, summary.max_gpus, summary.usd_per_hour_at_max) == (None,) * 3
    table = plan_table([summary])
    assert (
        "    nodes             unknown (the record predates sizes: synthesize with this "
        "gpu-pool)\n    max GPUs          unknown\n"
    ) in table
    assert "    on-demand at max  unknown\n" in table


@pytest.mark.parametrize(
    ("argv", "given"),
    [
        (["--deployed", "old.json", "--new", "new.json"], "--deployed, --new"),
        (["--cdk-out", "cdk.out", "--yes"], "--yes"),
    ],
)
def test_plan_with_the_replacements_options_it_used_to_take_stops_a_script(capsys, argv, given):
    """`plan` was the replacements check's name: a deploy script calling it so gets exit 2 and
    the new name, not a plan and exit 0 that would let the deploy go on unchecked."""
    assert main(["plan", *argv]) == 2
    assert capsys.readouterr() == (
        "",
        f"gpu-pool: plan: {given}: options of 'gpu-pool replacements', which 'plan' used to "
        "run; 'plan' now prints the pools' plan: run 'gpu-pool replacements' with the same "
        "options\n",
    )


def test_a_reader_that_stops_early_gets_no_traceback():
    """`gpu-pool plan | head`: the reader may be gone before the table is written (here it
    is: `true` reads nothing and exits at once)."""
    import subprocess
    import sys

    command = f"{sys.executable} -m gpu_pool plan --cdk-json {CDK_JSON} | true"
    done = subprocess.run(
        ["bash", "-c", command],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    )
    assert (done.stdout, done.stderr) == ("", "")


def test_a_spot_pool_says_its_cost_is_below_the_on_demand_figure(capsys, tmp_path):
    settings = {"pool": {"capacity_type": "SPOT"}}
    (pool,) = _pools(capsys, tmp_path, settings).values()
    assert pool["usd_per_hour_at_max"] == round(8 * ON_DEMAND_USD_PER_HOUR["g5.xlarge"], 4)
    assert pool["billing_note"] == "Spot: billed at the Spot price, below on demand"
    assert (
        "    on-demand at max  $8.05/hour; Spot: billed at the Spot price, below on demand\n"
        in _plan(capsys, tmp_path, settings)
    )


def test_a_cluster_outside_the_price_tables_region_says_its_prices_are_us_east_1s(capsys, tmp_path):
    """The table is us-east-1's: a cluster elsewhere says so on its own line, not only in the
    footer (#29 review nit)."""
    settings = {"region": "eu-west-1", "pool": {"instance_types": ["g5.xlarge"]}}
    table = _plan(capsys, tmp_path, settings)
    assert table.startswith(
        "Cluster gpu-pool, region eu-west-1 (its prices below are us-east-1's)\n  Pool gpu\n"
    )


def test_an_auto_mode_pool_says_eks_adds_its_management_fee(capsys, tmp_path):
    """EKS bills each Auto Mode node a management fee on top of EC2 (EKS best practices, Auto
    Mode: "maintains standard EC2 pricing while adding a management fee"); the figure is EC2's."""
    settings = {"pool": {"provisioner": "auto-mode"}, "autoscaler": {"enabled": False}}
    (pool,) = _pools(capsys, tmp_path, settings).values()
    note = "EKS Auto Mode: plus its management fee per node, not in this figure"
    assert pool["billing_note"] == note
    assert f"    on-demand at max  $8.05/hour; {note}\n" in _plan(capsys, tmp_path, settings)


@pytest.mark.parametrize(
    ("pool", "software"),
    [
        (
            {"provisioner": "auto-mode"},
            "EKS Auto Mode's (its nodes come with the NVIDIA driver and device plugin)",
        ),
        (
            {"ami_family": "BOTTLEROCKET"},
            "none installed by gpu-pool (Bottlerocket's own device plugin, or yours)",
        ),
        ({"gpu_software": "gpu-operator"}, "gpu-operator"),
    ],
    ids=["auto-mode", "bottlerocket", "operator"],
)
def test_the_device_software_row_says_who_brings_the_plugin(capsys, tmp_path, pool, software):
    settings = {"pool": pool, "autoscaler": {"enabled": pool.get("provisioner") != "auto-mode"}}
    assert f"    device software   {software}\n" in _plan(capsys, tmp_path, settings)


def test_the_docs_show_the_default_apps_plan_as_it_is(capsys, tmp_path):
    page = (ROOT / "docs" / "verify-and-doctor.md").read_text(encoding="utf-8")
    block = page.split("For the default app:\n\n  ```text\n", 1)[1].split("  ```\n", 1)[0]
    shown = "".join(line.removeprefix("  ") + "\n" for line in block.splitlines())
    assert shown == _plan(capsys, tmp_path)


REFUSED = (
    "gpu-pool: the settings describe pools a synth refuses (fix them, or read what is deployed "
    "with --stack NAME or --cdk-out DIR):"
)


@pytest.mark.parametrize(
    ("settings", "lines"),
    [
        # #39 item 2: plan accepted what synth refuses; now the same rules, the same messages.
        (
            {"cluster": {"kubernetes_version": "1.28"}},
            [
                "  cluster.kubernetes_version: '1.28' is not supported; choose one of 1.32, "
                "1.33, 1.34, 1.35, 1.36"
            ],
        ),
        (
            {"region": "us-east-1", "pool": {"zones": ["us-west-2a"]}},
            [
                "  pool.zones: 'us-west-2a' is not in region us-east-1",
                "  cluster.zones: required when pools name zones (us-west-2a) and account is "
                "unset: without an account the region's zones cannot be looked up, and the VPC "
                "would hold only the pools' zones; list two or more zones of us-east-1 that "
                "include them, or set account",
            ],
        ),
    ],
)
def test_plan_refuses_what_synth_refuses(capsys, tmp_path, settings, lines):
    from gpu_pool.checks import check_settings
    from gpu_pool.plan.pool import plan_pools
    from gpu_pool.settings import load_settings

    config = tmp_path / "settings.yaml"
    config.write_text(yaml.safe_dump(settings))
    assert main(["plan", "--cdk-json", CDK_JSON, "--config", str(config)]) == 2
    assert capsys.readouterr().err.splitlines() == [REFUSED, *lines]
    # The synth's own rules say the same, word for word.
    context = json.loads((ROOT / "cdk.json").read_text())["context"]["gpu-pool"]
    app = load_settings(context, str(config))
    findings = check_settings(app, plan_pools(app))
    errors = [f"  {f}" for f in [*(f for p in findings.pools for f in p), *findings.app] if f.error]
    assert errors == lines


def test_doctor_still_reads_a_cluster_past_its_versions_support(capsys, tmp_path):
    """The app-wide rules are plan's alone: doctor on a 1.29 cluster gets to the cluster."""
    config = tmp_path / "settings.yaml"
    config.write_text(yaml.safe_dump({"cluster": {"kubernetes_version": "1.29"}}))
    main(["doctor", "--cdk-json", CDK_JSON, "--config", str(config), "--kubeconfig", "/nonexistent"])
    assert "synth refuses" not in capsys.readouterr().err


def test_dra_pools_show_their_device_classes_and_counts(capsys, tmp_path):
    """#37 item 6: a DRA pool's GPUs are devices of the driver's DeviceClass gpu.nvidia.com,
    one per GPU (no nvidia.com/gpu advertised); an UltraServer pool's ComputeDomains add the
    IMEX channel and daemon classes, one device of each per node (the chart's
    templates/deviceclass-*.yaml; cmd/compute-domain-kubelet-plugin/nvlib.go at v0.4.1)."""
    dra = copy.deepcopy(DRA)
    dra["pools"]["dra"]["instance_types"] = ["g6e.xlarge", "g6e.12xlarge"]
    gpus = "gpu.nvidia.com (1 per g6e.xlarge node, 4 per g6e.12xlarge node)"
    pools = _pools(capsys, tmp_path, dra)
    assert pools["dra"]["device_classes"] == [gpus]
    assert [n["advertises"] for n in pools["dra"]["nodes"]] == [{}, {}]
    assert pools["plugin"]["device_classes"] == []
    assert f"    DRA devices       {gpus}\n" in _plan(capsys, tmp_path, dra)
    channel = (
        "compute-domain-default-channel.nvidia.com and compute-domain-daemon.nvidia.com "
        "(1 each per node, for the ComputeDomain the node serves)"
    )
    (ultra,) = _pools(capsys, tmp_path, ULTRASERVER).values()
    assert ultra["device_classes"] == [channel]
    assert f"    DRA devices       {channel}\n" in _plan(capsys, tmp_path, ULTRASERVER)


# A DRA pool with the EFA DRA driver, and an Auto Mode DRA pool (issue #37 items 3, 4, 6).
DRA_PLAN = {
    "region": "us-east-1",
    "account": "123456789012",
    "cluster": {"kubernetes_version": "1.36"},
    "pools": {
        "train": {
            "instance_types": ["p5.48xlarge"],
            "zones": ["us-east-1a"],
            "efa": True,
            "efa_software": "dra-driver",
            "gpu_software": "dra-driver",
            "min_size": 1,
            "desired_size": 1,
        },
        "claims": {
            "provisioner": "auto-mode",
            "gpu_software": "dra-driver",
            "instance_types": ["g6e.xlarge"],
            "labels": {"workload": "claims"},
            "taints": [{"key": "nvidia.com/gpu", "value": "auto-mode", "effect": "NoSchedule"}],
        },
    },
}


def test_an_efa_dra_pool_shows_its_efa_device_class_and_count(capsys, tmp_path):
    pools = _pools(capsys, tmp_path, DRA_PLAN)
    assert pools["train"]["device_classes"] == [
        "gpu.nvidia.com (8 per p5.48xlarge node)",
        "efa.networking.k8s.aws (32 per node)",
    ]
    assert pools["claims"]["device_classes"] == ["gpu.nvidia.com (1 per g6e.xlarge node)"]
    table = _plan(capsys, tmp_path, DRA_PLAN)
    assert (
        "    DRA devices       gpu.nvidia.com (8 per p5.48xlarge node); efa.networking.k8s.aws "
        "(32 per node)\n"
    ) in table


def test_a_multi_type_groups_cost_at_max_is_its_dearest_type(capsys, tmp_path):
    """#38 item 9: a node group of interchangeable types (one entry, a list) may run every node
    on its dearest type, so its cost at max prices each node at that type; the first or the
    cheapest (the injected bugs) would understate it."""
    types = ["g6.xlarge", "g5.xlarge", "g4dn.xlarge"]
    prices = [ON_DEMAND_USD_PER_HOUR[t] for t in types]
    assert len(set(prices)) == 3 and max(prices) != prices[0]
    pools = _pools(capsys, tmp_path, {"pool": {"instance_types": [types], "max_size": 3}})
    assert pools["gpu"]["usd_per_hour_at_max"] == round(3 * max(prices), 4)


def test_the_plan_shows_each_pools_vcpus_against_its_cached_quota(capsys, tmp_path):
    """#39 item 4: `max_size` against the account's vCPU quota, whose value the synth's lookup
    cached in the app's cdk.context.json (beside its cdk.json); without it, the command that
    reads it."""
    from tests.support.looked_up import quota_key

    (tmp_path / "cdk.json").write_text((ROOT / "cdk.json").read_text())
    (tmp_path / "cdk.context.json").write_text(json.dumps({quota_key("L-DB2E81BA"): 16}))
    config = tmp_path / "settings.yaml"
    config.write_text(yaml.safe_dump({"account": "123456789012", "region": "us-east-1"}))
    argv = ["plan", "--cdk-json", str(tmp_path / "cdk.json"), "--config", str(config)]
    assert main(argv) == 0
    (row,) = [line for line in capsys.readouterr().out.splitlines() if "vCPUs at max" in line]
    # cdk.json's pool: 8 g5.xlarge, 4 vCPUs each.
    assert row == (
        "    vCPUs at max      32 of Running On-Demand G and VT instances (L-DB2E81BA; quota 16 "
        "(over it: launches past it fail))"
    )


def test_the_quota_key_is_the_one_the_cdk_caches():
    from gpu_pool.model.quotas import quota_context_key
    from tests.support.looked_up import quota_key

    assert quota_context_key("123456789012", "us-east-1", "L-417A185B") == quota_key("L-417A185B")


@pytest.mark.parametrize(
    ("settings", "warnings"),
    [
        pytest.param(
            {"pools": None},
            [
                "pools: is empty (nothing under it, or every line commented out), so the default "
                "pool applies: one pool 'gpu' of g5.xlarge nodes; give it settings or remove the "
                "key [ack: gpu-pool:GP-APP-06]"
            ],
            id="empty-pools",
        ),
        pytest.param(
            {"pool": {"min_size": 1}},
            [
                "pool.min_size: 1: that many GPU nodes per node group run (and bill) even when "
                "idle; 0 lets the pool scale to zero [ack: gpu-pool:GP-POOL-26]"
            ],
            id="min-size",
        ),
        pytest.param(
            {"pool": {"min_size": 1}, "acknowledge": {"GP-POOL-26": "a warm node"}},
            [],
            id="acknowledged",
        ),
    ],
)
def test_plan_shows_the_synths_warnings_about_the_settings(capsys, tmp_path, settings, warnings):
    """docs/verify-and-doctor.md: plan applies every rule that needs no AWS call, with the
    synth's messages; it showed their errors only (#48 item 6). An acknowledged one is not
    shown, as the synth shows it not."""
    table = _plan(capsys, tmp_path, settings)
    assert table.endswith(PRICES + "\n" + "".join(f"Warning: {w}\n" for w in warnings))
    data = json.loads(_plan(capsys, tmp_path, settings, "--output", "json"))
    assert data["warnings"] == warnings


def test_a_fleets_plan_names_the_file_of_each_warning(capsys, tmp_path):
    (tmp_path / "a.yaml").write_text("pool:\n  min_size: 1\n")
    (tmp_path / "b.yaml").write_text("cluster:\n  name: b\n")
    assert main(["plan", "--cdk-json", CDK_JSON, "--config", str(tmp_path)]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == (
        f"Warning: {tmp_path / 'a.yaml'}: pool.min_size: 1: that many GPU nodes per node group "
        "run (and bill) even when idle; 0 lets the pool scale to zero [ack: gpu-pool:GP-POOL-26]"
    )


def test_the_repair_line_names_every_override_by_its_action(capsys, tmp_path):
    """docs/gpu-health.md: the repair line shows a pool's overrides; it listed the reboots only
    (#48 item 6)."""
    overrides = [
        ("NvidiaXID64Error", "Reboot"),
        ("NvidiaXID79Error", "Replace"),
        ("NvidiaNVLinkError", "Replace"),
        ("NvidiaXID13Warning", "NoAction"),
    ]
    settings = {
        "pool": {
            "repair": {
                "overrides": [
                    {
                        "condition": "AcceleratedHardwareReady",
                        "reason": reason,
                        "wait_minutes": 10,
                        "action": action,
                    }
                    for reason, action in overrides
                ]
            }
        }
    }
    (pool,) = _pools(capsys, tmp_path, settings).values()
    assert pool["repair"] == (
        "on; pauses as EKS does (more than 5 nodes and 20% unhealthy); 1 node at a time; "
        "reboots on XID 64; replaces on XID 79, NvidiaNVLinkError; no action on "
        "NvidiaXID13Warning"
    )
