"""`gpu-pool replacements`: read the deployed templates (or two template files), compare them
with the new ones (changes.py beside this), print what the deploy adds, rolls, updates in
place, replaces or deletes, what running work needs done first (Capacity Block groups at 0, the
DRA driver's CRDs, Auto Mode's add-ons), and ask before a deploy that would harm it."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gpu_pool.cli.command import Command, Services
from gpu_pool.cli.commands.replacements.cluster_version import refuse_stale_version
from gpu_pool.cli.commands.replacements.unchecked import refuse_unchecked
from gpu_pool.cli.credentials import aws_clients, configured_region
from gpu_pool.cli.errors import CliError
from gpu_pool.cli.files import json_object

REPLACEMENTS = "replacements"
# `plan` was this command's first name, then its deprecated alias; it now prints the plan.
HELP = (
    "before a deploy: name the node groups, network and cluster resources it would "
    "replace or delete, and Auto Mode turned off, and ask (offline: --deployed and --new; "
    "'plan' was its name until it became the pools' plan)"
)


def add_options(command: argparse.ArgumentParser) -> None:
    command.add_argument("--new", metavar="TEMPLATE", help="the new template (with --deployed)")
    command.add_argument("--deployed", metavar="TEMPLATE", help="the deployed template (offline)")
    command.add_argument(
        "--cdk-out",
        metavar="DIR",
        help="every stack in this cloud assembly against its deployed template in CloudFormation",
    )
    command.add_argument(
        "--stack", metavar="NAME", help="with --cdk-out: only this stack (default: every one)"
    )
    command.add_argument("--yes", action="store_true", help="confirm without asking")


def run(args: argparse.Namespace, services: Services) -> int:
    """`gpu-pool replacements`: what a deploy would replace, delete, roll or turn off."""
    aws = services.aws
    from gpu_pool.cli.commands.replacements import changes as found
    from gpu_pool.cli.commands.replacements.dra_upgrade import driver_upgrade

    pairs: list[tuple[str, str | None, dict[str, Any], dict[str, Any]]] = []
    accounts: dict[str, str | None] = {}
    if args.cdk_out and not (args.new or args.deployed):
        stacks = _assembly_stacks(Path(args.cdk_out))
        if args.stack is not None:
            names = ", ".join(entry[0] for entry in stacks)
            stacks = [entry for entry in stacks if entry[0] == args.stack]
            if not stacks:
                raise CliError(f"--stack: no stack '{args.stack}' in {args.cdk_out} ({names})")
        refuse_unchecked(Path(args.cdk_out), [(entry[0], entry[4]) for entry in stacks])
        for stack, region, new, path, artifact in stacks:
            pairs.append((stack, region, _deployed_template(stack, region, aws, path), new))
            accounts[stack] = _account(artifact)
    elif args.new and args.deployed and not (args.cdk_out or args.stack):
        pairs.append((args.new, None, _template_file(args.deployed), _template_file(args.new)))
    else:
        raise CliError(
            "replacements: give --deployed and --new (two template files), or --cdk-out DIR "
            "(and --stack NAME)"
        )
    rolls = [
        (stack, region, roll)
        for stack, region, old, new in pairs
        for roll in found.nodegroup_rolls(old, new)
    ]
    additions = [
        (stack, group)
        for stack, _, old, new in pairs
        for group in found.nodegroup_additions(old, new)
    ]
    if additions:
        print("gpu-pool replacements: node groups this deploy adds:")
        for stack, group in additions:
            print(f"  {stack}: {group}")
    if rolls:
        print(
            "gpu-pool replacements: node groups this deploy rolls (EKS replaces their nodes one "
            "at a time, respecting PodDisruptionBudgets):"
        )
        for stack, _, roll in rolls:
            print(f"  {stack}: {roll}")
    blocks = [(stack, region, roll) for stack, region, roll in rolls if roll.capacity_block]
    for stack, region, roll in blocks:
        # The offline form names templates, not stacks: the command then says STACK.
        command = roll.scale_to_zero(stack if args.cdk_out else "STACK", region)
        print(
            f"{stack}: the Capacity Block node group of {roll.owner}: EKS updates one only at "
            "desired size 0 (EKS user guide, Capacity Blocks for managed node groups). Let its "
            f"jobs finish, scale it to 0, then deploy:\n  {command}"
        )
    updates = [
        (stack, group)
        for stack, _, old, new in pairs
        for group in found.nodegroup_updates(old, new)
    ]
    if updates:
        print(
            "gpu-pool replacements: node groups whose labels, taints or repair this deploy "
            "changes in place (the node group is updated, no node is replaced: docs/day2.md):"
        )
        for stack, group in updates:
            print(f"  {stack}: {group}")
    asks = bool(blocks)
    upgrades = [u for _, _, old, new in pairs if (u := driver_upgrade(old, new))]
    for upgrade in upgrades:
        print("\n".join(upgrade.lines()))
    asks |= bool(upgrades)
    for stack, region, old, new in pairs:
        asks |= _auto_mode(stack, region, old, new, args.yes, aws)
        _refuse_installed_addons(stack, region, found.addon_additions(old, new), aws)
        if found.nodegroup_creations(old, new):
            client = aws or (aws_clients(region) if region is not None else None)
            refuse_stale_version(stack, (accounts.get(stack), region), old, new, client)
    losses = [
        (stack, loss)
        for stack, _, old, new in pairs
        for loss in [*found.nodegroup_losses(old, new), *found.dependency_changes(old, new)]
    ]
    if losses:
        print("gpu-pool replacements: this deploy replaces or deletes what running work needs:")
        for stack, loss in losses:
            print(f"  {stack}: {loss}")
        print(
            "Nodes of a replaced or deleted node group are drained within minutes, "
            "PodDisruptionBudgets ignored: GPU jobs running on them stop. Drain them yourself "
            "first, or keep the old settings."
        )
        for stack, _, old, new in pairs:
            _print_zone_cause(stack, *found.zone_change(old, new))
    elif not asks:
        print("gpu-pool replacements: no node group is replaced or deleted")
        return 0
    if args.yes:
        return 0
    if not sys.stdin.isatty():
        raise CliError(
            "replacements: not confirmed (no terminal to ask on); re-run with --yes to proceed"
        )
    answer = input("Deploy anyway? [y/N] ").strip().lower()
    return 0 if answer in ("y", "yes") else 1


def _print_zone_cause(stack: str, before: list[str], after: list[str]) -> None:
    """The setting behind VPC, subnet, NAT and cluster changes: the VPC's zones."""
    if not before:
        return
    print(
        f"  {stack}: the cause is the VPC's zones, {', '.join(before)} -> {', '.join(after)} "
        "(cluster.zones, or the region's first three when it is unset)."
    )
    if len(before) >= 2:
        print(f"  To keep the deployed ones, set cluster.zones: [{', '.join(before)}]")


def _auto_mode(
    stack: str,
    region: str | None,
    deployed: dict[str, Any],
    new: dict[str, Any],
    confirmed: bool,
    aws: Callable[[str], Any] | None,
) -> bool:
    """Say what the deploy does to EKS Auto Mode; whether the user must confirm it."""
    from gpu_pool.cli.commands.replacements.changes import (
        auto_mode_switch,
        cluster_minor,
        cluster_name,
    )
    from gpu_pool.model.auto_mode_addons import minimums_table

    switch = auto_mode_switch(deployed, new)
    if switch is False:
        print(
            f"  {stack}: EKS Auto Mode is turned OFF on the cluster: EKS terminates every "
            "instance Auto Mode runs and deletes the load balancers it runs, users' own too "
            "(EKS user guide, Disable EKS Auto Mode). Set cluster.auto_mode: true to keep it."
        )
        return True
    if switch is True:
        print(
            f"  {stack}: EKS Auto Mode is turned on in place. EKS needs these add-ons, where "
            "installed, at least at (EKS user guide, Enable EKS Auto Mode on an existing "
            "cluster, Required add-on versions):"
        )
        print("\n".join(minimums_table()))
        # With --cdk-out (the stack's region known) and credentials, read the add-ons.
        name = cluster_name(new)
        client = aws or (aws_clients(region) if region is not None else None)
        if name is None or client is None:
            print(
                f"  {stack}: the add-ons were not read (that needs --cdk-out and AWS "
                f"credentials): {_ADDON_CHECK}"
            )
            return True
        unverified = _check_addons(name, cluster_minor(new), client)
        if unverified:
            print(
                f"  {stack}: {', '.join(unverified)}: no EKS add-on version to compare (self-"
                f"managed, as a new cluster's VPC CNI and kube-proxy are): {_ADDON_CHECK}"
            )
            return True
    return False


# How to read the version of an add-on EKS does not manage: its DaemonSet's image tag.
_ADDON_CHECK = (
    "check their versions against the table before you confirm (kubectl -n kube-system get "
    "daemonset aws-node kube-proxy eks-pod-identity-agent -o "
    "custom-columns=NAME:.metadata.name,IMAGE:.spec.template.spec.containers[0].image)"
)


def _check_addons(cluster: str, minor: str, aws: Callable[[str], Any]) -> list[str]:
    """Each installed EKS add-on of the table against its minimum (DescribeAddon); refuses
    the deploy while one is older. Returns the add-ons whose version it could not judge: not
    EKS add-ons (self-managed, or not installed), or a version of another shape."""
    from botocore.exceptions import BotoCoreError, ClientError

    from gpu_pool.model.auto_mode_addons import (
        ALWAYS_RUNNING,
        AUTO_MODE_ADDON_MINIMUMS,
        KUBE_PROXY,
        addon_minimum,
        below_minimum,
    )

    eks = aws("eks")
    old, unverified = [], []
    for addon in [*AUTO_MODE_ADDON_MINIMUMS, KUBE_PROXY]:
        minimum = addon_minimum(addon, minor)
        if minimum is None:
            continue
        try:
            version = eks.describe_addon(clusterName=cluster, addonName=addon)["addon"][
                "addonVersion"
            ]
        except ClientError as err:
            if err.response.get("Error", {}).get("Code") == "ResourceNotFoundException":
                print(f"  {addon}: not an EKS add-on of {cluster}")
                if addon in ALWAYS_RUNNING:
                    unverified.append(addon)
                continue
            raise CliError(f"replacements: EKS refused DescribeAddon {addon}: {err}") from None
        except BotoCoreError as err:
            raise CliError(f"replacements: cannot read add-on {addon}: {err}") from None
        print(f"  {addon}: {version} on {cluster}")
        judged = below_minimum(version, minimum)
        if judged is None:
            unverified.append(addon)
        elif judged:
            old.append(f"{addon} {version} (needs {minimum})")
    if old:
        raise CliError(
            f"replacements: {cluster} runs {', '.join(old)}: update them first (aws eks "
            "update-addon --cluster-name ... --addon-name ... --addon-version ...), then deploy"
        )
    return unverified


def _refuse_installed_addons(
    stack: str,
    region: str | None,
    added: list[tuple[str, str | None]],
    aws: Callable[[str], Any] | None,
) -> None:
    """Refuse a deploy that creates an EKS add-on the cluster has already (installed by hand, or
    by another stack): CloudFormation's create fails (EKS CreateAddon: ResourceInUseException)
    and the stack rolls back. Read with DescribeAddon where credentials and the cluster's name
    allow; otherwise not judged."""
    from botocore.exceptions import BotoCoreError, ClientError

    client = aws or (aws_clients(region) if region is not None and added else None)
    if client is None:
        return
    for addon, cluster in added:
        if cluster is None:
            continue
        try:
            found = client("eks").describe_addon(clusterName=cluster, addonName=addon)["addon"]
        except ClientError as err:
            code = err.response.get("Error", {}).get("Code")
            if code in ("ResourceNotFoundException",):
                continue
            raise CliError(f"replacements: EKS refused DescribeAddon {addon}: {err}") from None
        except BotoCoreError as err:
            raise CliError(f"replacements: cannot read add-on {addon}: {err}") from None
        where = f" --region {region}" if region else ""
        raise CliError(
            f"replacements: {stack} creates the EKS add-on {addon}, which cluster {cluster} has "
            f"already ({found.get('addonVersion', 'version unknown')}): CloudFormation's create "
            "would fail and roll the deploy back. Delete it first (aws eks delete-addon "
            f"--cluster-name {cluster} --addon-name {addon}{where}; not --preserve, whose "
            "leftover objects conflict with the add-on's creation), then deploy, which creates "
            "it again; for the node monitoring agent on a cluster the app imports, "
            "cluster.existing.node_monitoring_agent: false says the cluster has it instead"
        )


def _template_file(path_text: str) -> dict[str, Any]:
    return json_object(path_text, REPLACEMENTS, "a JSON CloudFormation template")


def _assembly_stacks(
    out: Path,
) -> list[tuple[str, str | None, dict[str, Any], str, dict[str, Any]]]:
    """(stack name, region or None, template, template file, its manifest artifact) for each
    stack of a synthesized assembly."""
    manifest = _template_file(str(out / "manifest.json"))
    stacks = []
    for artifact_id, artifact in manifest.get("artifacts", {}).items():
        if artifact.get("type") != "aws:cloudformation:stack":
            continue
        properties = artifact.get("properties", {})
        region = str(artifact.get("environment", "")).rsplit("/", 1)[-1]
        path = str(out / properties["templateFile"])
        stacks.append(
            (
                # The artifact id is the stack name unless the manifest says otherwise.
                properties.get("stackName", artifact_id),
                None if region in ("", "unknown-region") else region,
                _template_file(path),
                path,
                artifact,
            )
        )
    return stacks


def _account(artifact: dict[str, Any]) -> str | None:
    """The account of a stack artifact's environment (aws://ACCOUNT/REGION), None if open."""
    account = str(artifact.get("environment", "")).removeprefix("aws://").split("/", 1)[0]
    return None if account in ("", "unknown-account") else account


def _deployed_template(
    stack: str, region: str | None, aws: Callable[[str], Any] | None, new_path: str
) -> dict[str, Any]:
    """The stack's deployed template; empty when the stack does not exist yet. Without
    credentials or a region, the error names the offline form (--deployed and --new)."""
    from botocore.exceptions import BotoCoreError, ClientError, NoCredentialsError, NoRegionError

    if aws is None:
        import boto3

        aws = boto3.Session(region_name=region or configured_region()).client
    try:
        body = aws("cloudformation").get_template(StackName=stack, TemplateStage="Original")
    except ClientError as err:
        if "does not exist" in str(err):
            return {}
        raise CliError(
            f"replacements: CloudFormation refused GetTemplate for {stack}: {err}"
        ) from None
    except (NoCredentialsError, NoRegionError) as err:
        missing = "credentials" if isinstance(err, NoCredentialsError) else "region"
        region_option = f" --region {region}" if region else ""
        raise CliError(
            f"replacements: no AWS {missing} to read the deployed {stack} with (CloudFormation "
            "GetTemplate). Offline, compare two templates: where credentials exist, save the "
            f"deployed one (aws cloudformation get-template --stack-name {stack}{region_option} "
            "--query TemplateBody --output json > deployed.json), then run: gpu-pool replacements "
            f"--deployed deployed.json --new {new_path}"
        ) from None
    except BotoCoreError as err:
        raise CliError(f"replacements: cannot read the deployed {stack}: {err}") from None
    template = body["TemplateBody"]
    if isinstance(template, dict):
        return template
    try:
        return dict(json.loads(template))
    except (TypeError, ValueError):
        raise CliError(
            f"replacements: the deployed {stack} template is not JSON (CDK deploys JSON)"
        ) from None


COMMAND = Command(REPLACEMENTS, HELP, add_options, run, description=HELP)
