"""`gpu-pool replacements` beyond node groups: the cluster, its network and launch templates,
with the setting that caused them; Auto Mode turned off or on; Capacity Block node group rolls.
Pairs of synthesized templates, as a deploy would see them."""

from __future__ import annotations

import json
import re

import pytest

from gpu_pool.cli.commands.replacements.changes import CREATE_ONLY_BY_TYPE, dependency_changes
from gpu_pool.cli.main import main
from tests.support.cfn import synth, write_assembly
from tests.support.looked_up import ACCOUNT, REGION, synth_looked_up

BOUND = {"account": ACCOUNT, "region": REGION}


def test_create_only_properties_are_those_of_the_cloudformation_schemas():
    # cfn-lint ships the CloudFormation registry's resource schemas (providers, us-east-1).
    from cfnlint.schema.manager import PROVIDER_SCHEMA_MANAGER

    for kind, names in CREATE_ONLY_BY_TYPE.items():
        schema = PROVIDER_SCHEMA_MANAGER.get_resource_schema(REGION, kind).schema
        paths = schema["createOnlyProperties"]
        assert sorted(names) == sorted(
            p.removeprefix("/properties/").replace("/", ".") for p in paths
        ), kind


def _run(tmp_path, deployed, new, *extra):
    old_file, new_file = tmp_path / "deployed.json", tmp_path / "new.json"
    old_file.write_text(json.dumps(deployed))
    new_file.write_text(json.dumps(new))
    return main(["replacements", "--deployed", str(old_file), "--new", str(new_file), *extra])


def test_a_change_of_the_clusters_zones_names_the_network_the_cluster_and_the_setting(
    tmp_path, capsys
):
    # A stack deployed with two zones (as pools that named two zones used to get), then
    # synthesized with the default, the region's first three.
    deployed = synth_looked_up({**BOUND, "cluster": {"zones": ["us-east-1a", "us-east-1b"]}})
    new = synth_looked_up(BOUND)
    changes = {c.logical_id: c for c in dependency_changes(deployed, new)}
    subnet = changes["VpcPrivateSubnet1Subnet536B997A"]
    assert subnet.reasons == ("replaced", 'CidrBlock: "10.0.128.0/18" -> "10.0.96.0/19"')
    nat = changes["VpcPublicSubnet1NATGateway4D7517AA"]
    assert nat.reasons == ("replaced", "SubnetId: VpcPublicSubnet1Subnet5C2D37C4 replaced")
    cluster = changes["ClusterEB0386A7"]
    assert cluster.reasons[0] == "updated in place"
    assert cluster.reasons[1].startswith("ResourcesVpcConfig.SubnetIds: ")

    code = _run(tmp_path, deployed, new, "--yes")
    assert code == 0
    out = capsys.readouterr().out.splitlines()
    assert (
        f"  {tmp_path / 'new.json'}: VpcPublicSubnet1NATGateway4D7517AA (AWS::EC2::NatGateway): "
        "replaced; SubnetId: VpcPublicSubnet1Subnet5C2D37C4 replaced"
    ) in out
    assert (
        f"  {tmp_path / 'new.json'}: the cause is the VPC's zones, us-east-1a, us-east-1b -> "
        "us-east-1a, us-east-1b, us-east-1c (cluster.zones, or the region's first three when it "
        "is unset)."
    ) in out
    assert "  To keep the deployed ones, set cluster.zones: [us-east-1a, us-east-1b]" in out
    # The node groups in the replaced subnets are named with the reason.
    system = [line for line in out if "SystemNodes" in line and "AWS::" not in line]
    assert system and "replaced; Subnets: " in system[0]


def test_the_zones_to_keep_are_printed_in_the_deployed_vpcs_order(tmp_path, capsys):
    # Earlier versions gave the VPC the pools' zones in order of first mention: [b, a] made
    # subnet 1 us-east-1b. The same zones sorted are other subnets (subnet N takes the Nth zone
    # and the Nth CIDR block), so the advice must keep the deployed order.
    deployed = synth_looked_up({**BOUND, "cluster": {"zones": ["us-east-1b", "us-east-1a"]}})
    sorted_zones = synth_looked_up({**BOUND, "cluster": {"zones": ["us-east-1a", "us-east-1b"]}})
    changes = {c.logical_id: c for c in dependency_changes(deployed, sorted_zones)}
    assert changes["VpcPrivateSubnet1Subnet536B997A"].reasons == (
        "replaced",
        'AvailabilityZone: "us-east-1b" -> "us-east-1a"',
    )
    assert _run(tmp_path, deployed, sorted_zones, "--yes") == 0
    out = capsys.readouterr().out.splitlines()
    assert (
        f"  {tmp_path / 'new.json'}: the cause is the VPC's zones, us-east-1b, us-east-1a -> "
        "us-east-1a, us-east-1b (cluster.zones, or the region's first three when it is unset)."
    ) in out
    assert "  To keep the deployed ones, set cluster.zones: [us-east-1b, us-east-1a]" in out


def test_turning_auto_mode_off_is_refused_without_yes(tmp_path, capsys, monkeypatch):
    deployed = synth({"pools": {"gpu": {"provisioner": "auto-mode"}}}).to_json()
    switched = synth({"pools": {"gpu": {}}}).to_json()
    monkeypatch.setattr("sys.stdin.isatty", lambda: False)
    assert _run(tmp_path, deployed, switched) == 2
    out, err = capsys.readouterr()
    assert (
        f"  {tmp_path / 'new.json'}: EKS Auto Mode is turned OFF on the cluster: EKS terminates "
        "every instance Auto Mode runs and deletes the load balancers it runs, users' own too "
        "(EKS user guide, Disable EKS Auto Mode). Set cluster.auto_mode: true to keep it."
    ) in out.splitlines()
    assert "re-run with --yes" in err
    assert _run(tmp_path, deployed, switched, "--yes") == 0
    # Kept on by the setting: nothing to say about Auto Mode.
    kept = synth({"cluster": {"auto_mode": True}, "pools": {"gpu": {}}}).to_json()
    capsys.readouterr()
    assert _run(tmp_path, deployed, kept) == 0
    assert "Auto Mode" not in capsys.readouterr().out


# DescribeAddon as the stub answers it: a version, or None for ResourceNotFoundException (no
# EKS add-on of that name: not installed, or self-managed, as aws-cdk-lib's clusters run VPC
# CNI and kube-proxy, created by EKS's default bootstrapSelfManagedAddons).
@pytest.mark.parametrize(
    ("cni", "yes", "code"),
    [
        ("v1.18.5-eksbuild.1", True, 2),
        ("v1.19.2-eksbuild.1", False, 0),
        (None, True, 0),
        (None, False, 2),
    ],
    ids=["old", "new", "self-managed-confirmed", "self-managed-unconfirmed"],
)
def test_turning_auto_mode_on_checks_the_add_on_minimums(tmp_path, capsys, cni, yes, code):
    import boto3
    from botocore.stub import Stubber

    # Auto Mode turned on and nothing else: the add-ons alone decide whether it asks.
    deployed = synth({"pools": {"gpu": {}}}).to_json()
    enabled = synth({"cluster": {"auto_mode": True}, "pools": {"gpu": {}}}).to_json()
    out = write_assembly(tmp_path, enabled, f"aws://{ACCOUNT}/{REGION}")
    cloudformation = boto3.client("cloudformation", region_name=REGION)
    eks = boto3.client("eks", region_name=REGION)
    clients = {"cloudformation": cloudformation, "eks": eks}
    with Stubber(cloudformation) as cf_stub, Stubber(eks) as eks_stub:
        cf_stub.add_response(
            "get_template",
            {"TemplateBody": json.dumps(deployed)},
            {"StackName": "GpuPool", "TemplateStage": "Original"},
        )
        # The cluster runs 1.36, past the guide's kube-proxy table: no kube-proxy call.
        for addon, version in (
            ("vpc-cni", cni),
            ("aws-ebs-csi-driver", None),
            ("snapshot-controller", None),
            ("eks-pod-identity-agent", "v1.3.4-eksbuild.1"),
        ):
            params = {"clusterName": "gpu-pool", "addonName": addon}
            if version is None:
                eks_stub.add_client_error(
                    "describe_addon", "ResourceNotFoundException", "No addon", 404, None, params
                )
            else:
                eks_stub.add_response(
                    "describe_addon",
                    {"addon": {"addonName": addon, "addonVersion": version}},
                    params,
                )
        argv = ["replacements", "--cdk-out", str(out), *(["--yes"] if yes else [])]
        assert main(argv, aws=clients.get) == code
    printed, err = capsys.readouterr()
    assert "  Amazon VPC CNI plugin for Kubernetes (vpc-cni): v1.19.0-eksbuild.1" in printed
    assert "  EKS Pod Identity Agent (eks-pod-identity-agent): v1.3.4-eksbuild.1" in printed
    if cni is None:
        assert "  vpc-cni: not an EKS add-on of gpu-pool" in printed
        assert (
            "  GpuPool: vpc-cni: no EKS add-on version to compare (self-managed, as a new "
            "cluster's VPC CNI and kube-proxy are): check their versions against the table "
            "before you confirm (kubectl -n kube-system get daemonset aws-node kube-proxy "
            "eks-pod-identity-agent -o custom-columns=NAME:.metadata.name,"
            "IMAGE:.spec.template.spec.containers[0].image)"
        ) in printed
        assert err == (
            ""
            if yes
            else "gpu-pool: replacements: not confirmed (no terminal to ask on); re-run with "
            "--yes to proceed\n"
        )
        return
    assert f"  vpc-cni: {cni} on gpu-pool" in printed
    if code:
        assert err == (
            f"gpu-pool: replacements: gpu-pool runs vpc-cni {cni} (needs v1.19.0-eksbuild.1): "
            "update them first (aws eks update-addon --cluster-name ... --addon-name ... "
            "--addon-version ...), then deploy\n"
        )


def test_a_capacity_block_group_roll_says_desired_zero_first_and_asks(
    tmp_path, capsys, monkeypatch
):
    from tests.support.settings import TRAINING

    changed = json.loads(json.dumps(TRAINING))
    block = next(
        p
        for p in changed["pools"].values()
        if p.get("capacity_reservation", {}).get("type") == "capacity-block"
    )
    block["disk_size_gib"] = block.get("disk_size_gib", 200) + 100
    monkeypatch.setattr("sys.stdin.isatty", lambda: False)
    assert _run(tmp_path, synth(TRAINING).to_json(), synth(changed).to_json()) == 2
    out = capsys.readouterr().out
    advice = [line for line in out.splitlines() if "Capacity Block node group" in line]
    assert len(advice) == 1, out
    assert advice[0].endswith(
        ": the Capacity Block node group of pool train: EKS updates one only at "
        "desired size 0 (EKS user guide, Capacity Blocks for managed node groups). Let its jobs "
        "finish, scale it to 0, then deploy:"
    )
    command = out.splitlines()[out.splitlines().index(advice[0]) + 1]
    # #39 item 5: the whole command, not "desiredSize=0,...": the group's name from its stack.
    assert re.fullmatch(
        r"  id=\$\(aws cloudformation describe-stack-resource --stack-name STACK "
        r"--logical-resource-id \w+ --query StackResourceDetail.PhysicalResourceId --output "
        r"text\) && aws eks update-nodegroup-config --cluster-name \"\$\{id%%/\*\}\" "
        r"--nodegroup-name \"\$\{id#\*/\}\" --scaling-config minSize=0,desiredSize=0",
        command,
    ), command
    assert _run(tmp_path, synth(TRAINING).to_json(), synth(changed).to_json(), "--yes") == 0


def test_a_label_or_taint_change_is_said_to_update_in_place(tmp_path, capsys):
    """#39 item 5: a changed label replaced nothing and was not mentioned; EKS updates a managed
    node group's labels and taints on its running nodes (UpdateNodegroupConfig)."""
    changed = {
        "pool": {
            "labels": {"accelerator": "nvidia", "team": "ml"},
            "taints": [{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}],
        }
    }
    assert _run(tmp_path, synth({}).to_json(), synth(changed).to_json()) == 0
    out = capsys.readouterr().out.splitlines()
    heading = out.index(
        "gpu-pool replacements: node groups whose labels, taints or repair this deploy changes "
        "in place (the node group is updated, no node is replaced: docs/day2.md):"
    )
    (line,) = [row for row in out[heading + 1 :] if row.startswith("  ")][:1]
    assert "(pool gpu, g5.xlarge): updated in place; Labels: " in line
    assert '"team":"ml"' in line.rsplit(" -> ", 1)[1]
    assert "gpu-pool replacements: no node group is replaced or deleted" in out


def _cluster(compute_config=None):
    properties = {"Name": "gpu-pool", "Version": "1.35"}
    if compute_config is not None:
        properties["ComputeConfig"] = compute_config
    return {"Resources": {"Cluster": {"Type": "AWS::EKS::Cluster", "Properties": properties}}}


@pytest.mark.parametrize(
    ("deployed", "new", "switch"),
    [
        # #38 item 9: CloudFormation's ComputeConfig (AWS::EKS::Cluster) turns Auto Mode on
        # only with Enabled true; a ComputeConfig without it (or false) is not Auto Mode, and
        # dropping it turns nothing off.
        ({"NodePools": ["system"]}, None, None),
        ({"Enabled": False, "NodePools": []}, None, None),
        (None, {"NodeRoleArn": "arn:aws:iam::123456789012:role/n"}, None),
        ({"Enabled": True, "NodePools": ["system"]}, None, False),
        ({"Enabled": True}, {"Enabled": False}, False),
        (None, {"Enabled": True}, True),
    ],
)
def test_auto_mode_is_a_compute_config_with_enabled_true(deployed, new, switch):
    from gpu_pool.cli.commands.replacements.changes import auto_mode_switch

    assert auto_mode_switch(_cluster(deployed), _cluster(new)) is switch


def _subnets(*zones):
    return {
        "Resources": {
            f"VpcPrivateSubnet{n}Subnet0A1B2C3D": {
                "Type": "AWS::EC2::Subnet",
                "Properties": {"AvailabilityZone": zone},
            }
            for n, zone in enumerate(zones, 1)
        }
    }


def test_a_local_zone_pools_subnet_is_no_change_of_the_vpcs_zones():
    """Review of #38: a pool's node-only Local Zone subnet (cdk/network/local_zones.py) comes with the
    pool; replacements blamed 'the VPC's zones' for it and offered a cluster.zones that cannot
    keep it. A change of the Availability Zones is still named."""
    from gpu_pool.cli.commands.replacements.changes import zone_change

    azs = ("us-east-1a", "us-east-1b")
    assert zone_change(_subnets(*azs), _subnets(*azs, "us-east-1-dfw-2a")) == ([], [])
    assert zone_change(_subnets(*azs), _subnets("us-east-1a", "us-east-1c")) == (
        list(azs),
        ["us-east-1a", "us-east-1c"],
    )


def test_the_first_deploy_with_repair_says_each_group_updates_in_place(tmp_path, capsys):
    """Review of #38/#36: the upgrade that adds NodeRepairConfig to every node group (not
    create-only: an in-place update) was invisible to replacements."""
    new = synth({}).to_json()
    deployed = json.loads(json.dumps(new))
    for resource in deployed["Resources"].values():
        if resource["Type"] == "AWS::EKS::Nodegroup":
            resource["Properties"].pop("NodeRepairConfig", None)
    assert _run(tmp_path, deployed, new) == 0
    out = capsys.readouterr().out.splitlines()
    rows = [row for row in out if "updated in place; NodeRepairConfig: (unset) -> " in row]
    assert len(rows) == 1 and "(pool gpu, g5.xlarge)" in rows[0], out
    assert "gpu-pool replacements: no node group is replaced or deleted" in out
