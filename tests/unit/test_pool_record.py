"""The pool record: its JSON (what the constructs write and the command reads), its version,
and where the command finds records in a cloud assembly."""

from __future__ import annotations

import json

import boto3
import pytest
from botocore.exceptions import EndpointConnectionError
from botocore.stub import Stubber

from gpu_pool.cli.errors import CliError
from gpu_pool.cli.main import main
from gpu_pool.cli.sources import Pools, assembly_pools, settings_pools, stack_pools
from gpu_pool.plan.pool import plan_pool
from gpu_pool.plan.record import (
    POOL_RECORD_TYPE,
    NodeGroupRecord,
    PoolRecord,
    RecordError,
    pool_record,
)
from gpu_pool.settings import PoolSettings, load_settings
from tests.support.aws_stubs import stubbed

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
    "min_size": 0,
    "max_size": 8,
    "capacity_type": "ON_DEMAND",
    "repair": {
        "provisioner": "cluster-autoscaler",
        "enabled": True,
        "reserved": False,
        "max_parallel_count": 1,
        "overrides": [
            {
                "condition": "AcceleratedHardwareReady",
                "reason": f"NvidiaXID{xid}Error",
                "wait_minutes": 10,
                "action": "Reboot",
            }
            for xid in (48, 63, 64, 95)
        ],
    },
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
    """pool_record is the library's: a plan whose entries all failed to resolve (the rules
    refuse it before a construct or the command records it) still gives a record, with no node
    group and no GPU a pod could ask for, rather than an exception from min()."""
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
        (
            {**DEFAULT_RECORD, "name": "XXXX"},
            "malformed record: name: String should match pattern "
            "'^[a-z]([a-z0-9-]{0,19}[a-z0-9])?$'",
        ),
        (
            {
                **DEFAULT_RECORD,
                "sharing": {"settings": {"mode": "time-slicing"}, "config_name": "gpu"},
            },
            "malformed record: sharing.settings.replicas: required with mode time-slicing",
        ),
    ],
    ids=[
        "not-a-record",
        "newer-version",
        "malformed",
        "malformed-nested",
        "not-a-pool-name",
        "time-slicing-without-replicas",
    ],
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
            ["verify", "--cdk-out", "{out}", "--pool", "gpu"],
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


def test_doctor_checks_each_cluster_of_the_assembly(tmp_path, capsys):
    """Pools on several clusters (one with a name EKS generates): one row each, and the
    command that would let the doctor reach it (the fleet itself: test_doctor_fleet.py)."""
    named = {**DEFAULT_RECORD, "region": "us-east-1"}
    nameless = {k: v for k, v in named.items() if k != "cluster_name"} | {"name": "b"}
    _assembly(tmp_path, [named, nameless], [{**named, "name": "c", "cluster_name": "x"}])
    argv = ["doctor", "--cdk-out", str(tmp_path), "--kubeconfig", str(tmp_path / "none")]
    assert main(argv) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[-4:] == [
        "cluster                   region     account  pools  verdict      first fix",
        "ml                        us-east-1  -        gpu    unreachable  aws eks "
        f"update-kubeconfig --name ml --region us-east-1 --kubeconfig {tmp_path}/none",
        "(generated, stack Stack)  us-east-1  -        b      unreachable  gpu-pool doctor "
        "--stack Stack (reads the deployed stack's records)",
        "x                         us-east-1  -        c      unreachable  aws eks "
        f"update-kubeconfig --name x --region us-east-1 --kubeconfig {tmp_path}/none",
    ]
    assert (
        "[fail] cluster: no kubeconfig context named by the ARN of cluster ml "
        "(arn:aws:eks:us-east-1:ACCOUNT:cluster/ml)"
    ) in out


def test_the_missing_contexts_cluster_arn_is_in_its_regions_partition(tmp_path, capsys):
    """A GovCloud cluster's ARN starts arn:aws-us-gov (fails before: arn:aws always)."""
    _assembly(tmp_path, [{**DEFAULT_RECORD, "region": "us-gov-west-1"}], [])
    argv = ["doctor", "--cdk-out", str(tmp_path), "--kubeconfig", str(tmp_path / "none")]
    main(argv)
    assert (
        "[fail] cluster: no kubeconfig context named by the ARN of cluster ml "
        "(arn:aws-us-gov:eks:us-gov-west-1:ACCOUNT:cluster/ml)"
    ) in capsys.readouterr().out.splitlines()


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


def _manifest(directory, artifacts):
    """A cloud assembly whose manifest has these artifacts (None: no `artifacts` key)."""
    manifest = {"version": "55.0.0"}
    if artifacts is not None:
        manifest["artifacts"] = artifacts
    (directory / "manifest.json").write_text(json.dumps(manifest))


def _stack(records, **artifact):
    """A stack artifact with `records` in its manifest metadata."""
    metadata = {f"/Stack/{r['name']}": [{"type": POOL_RECORD_TYPE, "data": r}] for r in records}
    return {"type": "aws:cloudformation:stack", "metadata": metadata, **artifact}


def test_records_are_read_past_other_artifacts_and_from_a_stack_without_manifest_metadata(
    tmp_path,
):
    (tmp_path / "B.metadata.json").write_text(
        json.dumps({"/B/b": [{"type": POOL_RECORD_TYPE, "data": {**DEFAULT_RECORD, "name": "b"}}]})
    )
    _manifest(
        tmp_path,
        {
            "Tree": {"type": "cdk:tree", "properties": {"file": "tree.json"}},
            "A": _stack([DEFAULT_RECORD]),
            "B": {"type": "aws:cloudformation:stack", "additionalMetadataFile": "B.metadata.json"},
        },
    )
    assert [r.name for r in assembly_pools(tmp_path).records] == ["gpu", "b"]


@pytest.mark.parametrize(
    ("artifacts", "message"),
    [
        (
            {"Pools": _stack([{**DEFAULT_RECORD, "version": 2}], displayName="Stage/Pools")},
            "--cdk-out: stack Stage/Pools: record version 2; this gpu-pool reads versions 1 to "
            "1: upgrade the command to the library's version",
        ),
        (
            {"Pools": _stack([{**DEFAULT_RECORD, "version": 2}])},
            "--cdk-out: stack Pools: record version 2; this gpu-pool reads versions 1 to 1: "
            "upgrade the command to the library's version",
        ),
        (
            None,
            "the pool records in '{out}': no pools (the app has no GpuNodePool or "
            "KarpenterNodePool, or was synthesized with a gpu-pool older than the pool record)",
        ),
    ],
    ids=["named-stack", "stack-without-display-name", "no-artifacts"],
)
def test_an_assembly_the_command_cannot_use_says_why(tmp_path, artifacts, message):
    _manifest(tmp_path, artifacts)
    with pytest.raises(CliError) as raised:
        assembly_pools(tmp_path).pool(None)
    assert str(raised.value) == message.format(out=tmp_path)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "{",
            "--cdk-out: cannot read '{path}': Expecting property name enclosed in double quotes: "
            "line 1 column 2 (char 1)",
        ),
        ("[]", "--cdk-out: '{path}' is not a JSON object"),
    ],
    ids=["not-json", "not-an-object"],
)
def test_a_manifest_that_is_not_a_json_object_is_named(tmp_path, text, message):
    (tmp_path / "manifest.json").write_text(text)
    with pytest.raises(CliError) as raised:
        assembly_pools(tmp_path)
    assert str(raised.value) == message.format(path=tmp_path / "manifest.json")


def _pools(*records):
    return Pools([PoolRecord.from_json({**DEFAULT_RECORD, **r}) for r in records], "the test")


@pytest.mark.parametrize(
    ("region", "cluster"),
    [({"region": "eu-west-1"}, ("ml", "eu-west-1")), ({}, ("ml", None))],
    ids=["with-region", "without-region"],
)
def test_the_pools_cluster_and_its_region(region, cluster):
    assert _pools(region).cluster() == cluster


def test_one_pools_cluster_is_its_own_among_several():
    pools = _pools({"name": "a", "cluster_name": "x"}, {"name": "b", "region": "eu-west-1"})
    assert pools.cluster(pools.records[1]) == ("ml", "eu-west-1")
    with pytest.raises(CliError) as raised:
        _pools({"name": "a"}, {"name": "b", "cluster_name": None}).cluster()
    assert str(raised.value) == (
        "the test: its pools are on several clusters ((generated), ml); the command checks "
        "one: give --stack NAME of one of them"
    )


def test_two_clusters_of_one_name_are_told_apart_by_region():
    with pytest.raises(CliError) as raised:
        _pools({"name": "a", "region": "us-east-1"}, {"name": "b", "region": "eu-west-1"}).cluster()
    assert str(raised.value) == (
        "the test: its pools are on several clusters (ml in eu-west-1, ml in us-east-1); the "
        "command checks one: give --stack NAME of one of them"
    )


def test_the_bundled_apps_pools_are_its_settings():
    settings = load_settings(
        {"region": "eu-west-1", "cluster": {"name": "ml"}, "metrics": {"gpu": "dcgm-exporter"}},
        None,
    )
    pools = settings_pools(settings)
    assert [(r.name, r.cluster_name, r.region) for r in pools.records] == [
        ("gpu", "ml", "eu-west-1")
    ]
    assert (pools.source, pools.metrics) == ("the settings", "dcgm-exporter")


def test_the_bundled_app_refuses_a_pool_the_synth_refuses_but_not_an_old_cluster():
    """Pools the synth refuses are refused; an app-wide error (here a Kubernetes version
    gpu-pool does not support) does not stop the command: an old cluster still wants a doctor."""
    sliced = {"sharing": {"mode": "time-slicing"}}
    refused = load_settings(
        {"pools": {"a": sliced, "b": {**sliced, "labels": {"workload": "b"}}}}, None
    )
    with pytest.raises(CliError) as raised:
        settings_pools(refused)
    assert str(raised.value).splitlines() == [
        "the settings describe pools a synth refuses (fix them, or read what is deployed with "
        "--stack NAME or --cdk-out DIR):",
        *(
            f"  pools.{name}.sharing.replicas: required with mode time-slicing: how many pods "
            "share each GPU, 2 to 48"
            for name in ("a", "b")
        ),
    ]
    old = load_settings({"cluster": {"kubernetes_version": "1.30"}}, None)
    assert [r.name for r in settings_pools(old).records] == ["gpu"]


def _outputs(*outputs):
    """A CloudFormation client whose DescribeStacks of 'Pools' answers these outputs (None: no
    Outputs key), checked against botocore's model by its Stubber."""
    stack = {
        "StackName": "Pools",
        "CreationTime": "2026-12-01T00:00:00Z",
        "StackStatus": "CREATE_COMPLETE",
    }
    if outputs != (None,):
        stack["Outputs"] = list(outputs)
    return stubbed(
        "cloudformation", [("describe_stacks", {"Stacks": [stack]}, {"StackName": "Pools"})]
    )


def test_a_deployed_stacks_records_are_its_pool_record_outputs():
    """Other outputs (not JSON, JSON of another kind, no value) are passed over."""
    cloudformation = _outputs(
        {"OutputKey": "Endpoint", "OutputValue": "https://example.com"},
        {"OutputKey": "Empty"},
        {"OutputKey": "Zones", "OutputValue": '["us-east-1a"]'},
        {"OutputKey": "Other", "OutputValue": '{"kind": "other"}'},
        {"OutputKey": "GpuRecord", "OutputValue": json.dumps(DEFAULT_RECORD)},
    )
    pools = stack_pools("Pools", cloudformation)
    assert pools.records == [PoolRecord.from_json(DEFAULT_RECORD)]
    assert pools.source == "the pool records of stack 'Pools'"


def test_a_stack_without_outputs_has_no_pools():
    assert list(stack_pools("Pools", _outputs(None)).records) == []


class _Unreachable:
    """A CloudFormation client that cannot reach its endpoint."""

    def describe_stacks(self, StackName):
        raise EndpointConnectionError(
            endpoint_url="https://cloudformation.us-east-1.amazonaws.com/"
        )


def _refusing():
    """A CloudFormation client whose DescribeStacks of 'Gone' is refused."""
    client = boto3.client(
        "cloudformation", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x"
    )
    stubber = Stubber(client)
    stubber.add_client_error(
        "describe_stacks",
        service_error_code="ValidationError",
        service_message="Stack with id Gone does not exist",
        expected_params={"StackName": "Gone"},
    )
    stubber.activate()
    return client


NEWER = {"OutputKey": "GpuRecord", "OutputValue": json.dumps({**DEFAULT_RECORD, "version": 2})}


@pytest.mark.parametrize(
    ("stack", "cloudformation", "message"),
    [
        (
            "Pools",
            lambda: _outputs(NEWER),
            "--stack: Pools: output GpuRecord: record version 2; this gpu-pool reads versions "
            "1 to 1: upgrade the command to the library's version",
        ),
        (
            "Gone",
            _refusing,
            "--stack: CloudFormation refused DescribeStacks for Gone: An error occurred "
            "(ValidationError) when calling the DescribeStacks operation: Stack with id Gone does "
            "not exist",
        ),
        (
            "Pools",
            _Unreachable,
            "--stack: cannot read stack Pools: Could not connect to the endpoint URL: "
            '"https://cloudformation.us-east-1.amazonaws.com/"',
        ),
    ],
    ids=["newer-record", "refused", "unreachable"],
)
def test_a_stack_the_command_cannot_read_says_why(stack, cloudformation, message):
    with pytest.raises(CliError) as raised:
        stack_pools(stack, cloudformation())
    assert str(raised.value) == message
