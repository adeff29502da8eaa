"""A controller gpu-pool installs (Cluster Autoscaler, Karpenter): its pinned chart, whose pod
runs as a service account with its own AWS role through EKS Pod Identity."""

from __future__ import annotations

from typing import Any

from aws_cdk import aws_eks_v2 as eks
from aws_cdk import aws_iam as iam
from constructs import Construct, IDependable

from gpu_pool.cdk.gpu_software.charts import helm_chart
from gpu_pool.cdk.pod_identity import pod_identity_agent, pod_identity_role
from gpu_pool.model.versions import ChartPin


def install_controller(
    scope: Construct,
    *,
    cluster: eks.ICluster,
    pin: ChartPin,
    release: str,
    service_account: str,
    role_id: str,
    description: str,
    version: str | None,
    values: dict[str, Any],
    install_pod_identity_agent: bool | None,
    after: tuple[IDependable, ...] = (),
) -> tuple[iam.Role, eks.HelmChart]:
    """The controller's role (construct id `role_id`, with association `PodIdentity`) and its
    chart (`Chart`, release `release` in the pin's namespace, `version` overriding the pin).

    The chart waits for `after`, the association and the cluster's Pod Identity agent
    (`install_pod_identity_agent`: see pod_identity_agent): credentials must exist before the
    pod starts, or it crash-loops on the node role.
    """
    role, association = pod_identity_role(
        scope,
        role_id,
        cluster=cluster,
        namespace=pin.namespace,
        service_account=service_account,
        description=description,
    )
    chart = helm_chart(
        scope,
        "Chart",
        cluster=cluster,
        pin=pin,
        version=version,
        release=release,
        values=values,
    )
    chart.node.add_dependency(*after, association)
    agent = pod_identity_agent(cluster, install_pod_identity_agent)
    if agent is not None:
        chart.node.add_dependency(agent)
    return role, chart
