"""The pool record: its JSON (what the constructs write and the command reads), its version,
and where the command finds records in a cloud assembly."""

from __future__ import annotations

import json

import pytest

from gpu_pool.cli.main import main
from gpu_pool.cli.sources import assembly_pools
from gpu_pool.plan.pool import plan_pool
from gpu_pool.plan.record import (
    POOL_RECORD_TYPE,
    NodeGroupRecord,
    PoolRecord,
    RecordError,
    pool_record,
)
from gpu_pool.settings import PoolSettings

DEFAULT_RECORD = {
    "name": "gpu",
    "provisioner": "cluster-autoscaler",
    "node_selector": {"gpu-pool.io/pool": "gpu"},
    "tolerations": [
        {"key": "nvidia.com/gpu", "operator": "Equal", "value": "true", "effect": "NoSchedule"}
    ],
    "gpu_software": "device-plugin",
    "gpu_resource": "nvidia.com/gpu",
    "gpus_per_node": 1,
    "node_groups": [{"instance_types": ["g5.xlarge"], "gpus": 1, "zone": "us-east-1a"}],
    "cluster_name": "ml",
    "kind": POOL_RECORD_TYPE,
    "version": 1,
}


def test_a_pools_record_is_its_json_and_reads_back():
    record = pool_record(plan_pool(PoolSettings(zones=["us-east-1a"])), "ml", None)
    assert record.to_json() == DEFAULT_RECORD
    assert PoolRecord.from_json(json.loads(json.dumps(record.to_json()))) == record


def test_a_karpenter_pool_records_its_node_pool_and_smallest_node():
    settings = PoolSettings(provisioner="karpenter", instance_types=["g5.12xlarge", "g5.xlarge"])
    record = pool_record(plan_pool(settings), None, None)
    assert (record.node_pool, record.node_groups, record.gpus_per_node) == ("gpu-pool-gpu", (), 1)


def test_an_auto_mode_pool_records_its_node_pool():
    record = pool_record(plan_pool(PoolSettings(provisioner="auto-mode")), None, None)
    assert (record.provisioner, record.node_pool, record.gpu_software) == (
        "auto-mode",
        "gpu-pool-gpu",
        "none",
    )


def test_a_sharing_pool_records_what_its_nodes_advertise_and_reads_it_back():
    """verify's smoke pod and doctor's expected counts come from the record's sharing."""
    settings = PoolSettings(
        sharing={"mode": "time-slicing", "replicas": 4, "rename": True}  # type: ignore[arg-type]
    )
    record = pool_record(plan_pool(settings), "ml", None)
    assert record.gpu_resource == "nvidia.com/gpu.shared"
    back = PoolRecord.from_json(json.loads(json.dumps(record.to_json())))
    assert back.sharing is not None
    assert back.sharing.advertised(1) == {"nvidia.com/gpu": 0, "nvidia.com/gpu.shared": 4}
    assert back == record


def test_the_deployed_record_names_its_region_and_each_node_group_in_plan_order():
    plan = plan_pool(PoolSettings(instance_types=["g5.xlarge", "g6.xlarge"], zones=["us-east-1a"]))
    record = pool_record(plan, "ml", "us-east-1", ["gpu-g5", "gpu-g6"])
    assert (record.region, record.node_groups) == (
        "us-east-1",
        (
            NodeGroupRecord(("g5.xlarge",), 1, "us-east-1a", "gpu-g5"),
            NodeGroupRecord(("g6.xlarge",), 1, "us-east-1a", "gpu-g6"),
        ),
    )
    # One name per node group: a group without one would be left out of the record.
    with pytest.raises(ValueError, match="shorter"):
        pool_record(plan, "ml", "us-east-1", ["gpu-g5"])


def test_a_pool_whose_entries_all_fail_to_resolve_records_no_node():
    """The command plans settings it has not checked (--config): such a pool still gets a
    record, with no node group and no GPU a pod could ask for."""
    record = pool_record(plan_pool(PoolSettings(instance_types=[["g4ad.xlarge"]])), "ml", None)
    assert (record.node_groups, record.gpus_per_node) == ((), 0)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ([], f'not a gpu-pool record (no "kind": "{POOL_RECORD_TYPE}")'),
        (
            {**DEFAULT_RECORD, "version": 2},
            "record version 2; this gpu-pool reads versions 1 to 1: upgrade the command to the "
            "library's version",
        ),
        (
            {**DEFAULT_RECORD, "gpus_per_node": "many"},
            "malformed record: gpus_per_node: Input "
            "should be a valid integer, unable to parse string as an integer",
        ),
        (
            {**DEFAULT_RECORD, "node_groups": [{"instance_types": ["g5.xlarge"], "gpus": "one"}]},
            "malformed record: node_groups.0.gpus: Input "
            "should be a valid integer, unable to parse string as an integer",
        ),
    ],
    ids=["not-a-record", "newer-version", "malformed", "malformed-nested"],
)
def test_a_record_the_command_cannot_read_says_why(data, message):
    with pytest.raises(RecordError) as raised:
        PoolRecord.from_json(data)
    assert str(raised.value) == message


def test_fields_a_newer_library_adds_are_ignored():
    assert PoolRecord.from_json({**DEFAULT_RECORD, "spot": True}).name == "gpu"


def _assembly(directory, records_in_manifest, records_in_file, nested=None):
    """A cloud assembly with one stack: records as manifest metadata and in the stack's
    additionalMetadataFile; `nested`: a stage's directory name."""

    def entries(records):
        return {f"/Stack/{r['name']}": [{"type": POOL_RECORD_TYPE, "data": r}] for r in records}

    artifacts = {
        "Stack": {
            "type": "aws:cloudformation:stack",
            "properties": {"templateFile": "Stack.template.json"},
            "metadata": entries(records_in_manifest),
            "additionalMetadataFile": "Stack.metadata.json",
        }
    }
    if nested:
        artifacts["Stage"] = {"type": "cdk:cloud-assembly", "properties": {"directoryName": nested}}
    directory.mkdir(exist_ok=True)
    (directory / "manifest.json").write_text(
        json.dumps({"version": "55.0.0", "artifacts": artifacts})
    )
    (directory / "Stack.metadata.json").write_text(json.dumps(entries(records_in_file)))


def test_records_are_read_from_the_manifest_its_metadata_files_and_nested_assemblies(tmp_path):
    _assembly(tmp_path, [DEFAULT_RECORD], [{**DEFAULT_RECORD, "name": "b"}], nested="stage")
    _assembly(tmp_path / "stage", [], [{**DEFAULT_RECORD, "name": "c"}])
    assert [r.name for r in assembly_pools(tmp_path).records] == ["gpu", "b", "c"]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["smoke-test-manifest", "--cdk-out", "{out}/nothing"],
            "--cdk-out: '{out}/nothing' has no manifest.json (run cdk synth first)",
        ),
        (
            ["smoke-test-manifest", "--cdk-out", "{out}", "--config", "x.yaml"],
            "--config: settings are not read with --cdk-out or --stack; drop one",
        ),
        (
            ["doctor", "--cdk-out", "{out}"],
            "the pool records in '{out}': the cluster's name is generated by EKS at deploy, so "
            "the assembly does not hold it: read the deployed stack with --stack NAME",
        ),
        (
            ["smoke-test-manifest", "--cdk-out", "{out}"],
            "--pool: the pool records in '{out}' describe several pools (gpu, b); name one",
        ),
    ],
    ids=["no-assembly", "config-too", "generated-cluster-name", "several-pools"],
)
def test_what_the_command_cannot_use_is_one_line(tmp_path, capsys, argv, message):
    nameless = {k: v for k, v in DEFAULT_RECORD.items() if k != "cluster_name"}
    _assembly(tmp_path, [nameless], [{**nameless, "name": "b"}])
    code = main([part.format(out=tmp_path) for part in argv])
    assert capsys.readouterr().err == f"gpu-pool: {message.format(out=tmp_path)}\n"
    assert code == 2


def test_doctor_refuses_pools_of_several_clusters(tmp_path, capsys):
    _assembly(tmp_path, [DEFAULT_RECORD], [{**DEFAULT_RECORD, "name": "b", "cluster_name": "x"}])
    assert main(["doctor", "--cdk-out", str(tmp_path)]) == 2
    assert capsys.readouterr().err == (
        f"gpu-pool: the pool records in '{tmp_path}': its pools are on several clusters (ml, x); "
        "the command checks one: give --stack NAME of one of them\n"
    )


def test_an_assembly_without_pools_says_so(tmp_path, capsys):
    _assembly(tmp_path, [], [])
    assert main(["smoke-test-manifest", "--cdk-out", str(tmp_path)]) == 2
    assert capsys.readouterr().err == (
        f"gpu-pool: the pool records in '{tmp_path}': no pools (the app has no GpuNodePool or "
        "KarpenterNodePool, or was synthesized with a gpu-pool older than the pool record)\n"
    )


def test_an_efa_pool_without_a_reservation_reads_back():
    """The writer leaves a None reservation out of the JSON; the reader must take that."""
    settings = PoolSettings(instance_types=["p5.48xlarge"], zones=["us-east-1a"], efa=True)
    record = pool_record(plan_pool(settings), "ml", None)
    data = json.loads(json.dumps(record.to_json()))
    assert data["capacity"] == {"efa_interfaces": 32}
    assert PoolRecord.from_json(data) == record
