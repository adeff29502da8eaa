"""A node group this deploy creates on an existing cluster must have the cluster's current
Kubernetes version: EKS CreateNodegroup takes no other ("By default, the Kubernetes version of
the cluster is used, and this is the only accepted specified value": EKS API Reference,
CreateNodegroup, `version`). The stack takes the version from the cluster's lookup, cached in
cdk.context.json, which a control-plane upgrade leaves behind; so before the deploy, the groups it
adds or replaces are held to DescribeCluster's answer, and a stale one is refused with the
command that looks the cluster up again."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gpu_pool.cli.commands.replacements.changes import nodegroup_creations
from gpu_pool.cli.errors import CliError
from gpu_pool.plan.existing_cluster import cluster_context_key


def refuse_stale_version(
    stack: str,
    environment: tuple[str | None, str | None],
    deployed: dict[str, Any],
    new: dict[str, Any],
    aws: Callable[[str], Any] | None,
) -> None:
    """Refuse the deploy where a node group it creates on an imported cluster (its ClusterName
    literal) names another version than the cluster runs. `environment`: the stack's account
    and region (None where the assembly leaves them open). Not judged without credentials."""
    from botocore.exceptions import BotoCoreError, ClientError

    created = nodegroup_creations(deployed, new)
    if aws is None or not created:
        return
    account, region = environment
    running: dict[str, str] = {}
    for group, cluster, version in created:
        if cluster not in running:
            try:
                running[cluster] = aws("eks").describe_cluster(name=cluster)["cluster"]["version"]
            except (BotoCoreError, ClientError) as err:
                raise CliError(
                    f"replacements: cannot read cluster {cluster}'s version (EKS "
                    f"DescribeCluster), which the node groups {stack} creates must have: {err}"
                ) from None
        if running[cluster] == version:
            continue
        key = (
            cluster_context_key(account, region, cluster)
            if account and region
            else f"the gpu-pool-eks-cluster entry of {cluster}"
        )
        raise CliError(
            f"replacements: {stack} creates node group {group} with Kubernetes {version}, and "
            f"cluster {cluster} runs {running[cluster]}: EKS creates node groups of the "
            "cluster's version only, so the deploy would fail and roll back. The version comes "
            "from the cluster's lookup cached in cdk.context.json, taken before the control "
            f'plane moved: look it up again (cdk context --reset "{key}"), synthesize and '
            "deploy; the stack's other node groups then move to it too"
        )
