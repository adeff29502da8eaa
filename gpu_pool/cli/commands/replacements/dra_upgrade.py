"""What a deploy does to the cluster's NVIDIA DRA driver release, read from two templates: a new
chart version is a `helm upgrade` of the same release (plan/dra.py keeps its name, namespace and
object names across the move from NVIDIA's nvidia-dra-driver-gpu 25.12.0 to
kubernetes-sigs' dra-driver-nvidia-gpu), but Helm leaves the CRDs of the old version in place, so
the user applies the new ones before the deploy (kubernetes-sigs/dra-driver-nvidia-gpu
docs/upgrade.md, "Upgrade procedure" step 1)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gpu_pool.plan.dra import DRA_RELEASE, dra_crd_urls

HELM_CHART = "Custom::AWSCDK-EKS-HelmChart"


@dataclass(frozen=True)
class DriverUpgrade:
    """The DRA driver release's chart and version before and after the deploy."""

    namespace: str
    before: tuple[str, str]
    after: tuple[str, str]

    def lines(self) -> list[str]:
        """What the user does before the deploy, and why."""
        (old_chart, old_version), (chart, version) = self.before, self.after
        found = [
            f"gpu-pool replacements: the NVIDIA DRA driver release {DRA_RELEASE} (namespace "
            f"{self.namespace}) is upgraded in place, {old_chart} {old_version} -> {chart} "
            f"{version}. Helm does not upgrade CRDs: apply the new ones before you deploy:",
            *(f"  kubectl apply -f {url}" for url in dra_crd_urls(version)),
        ]
        if old_chart != chart:
            found.append(
                f"  {old_chart} -> {chart} is the driver's move to kubernetes-sigs: there is no "
                "way back to the old chart once upgraded (kubernetes-sigs/dra-driver-nvidia-gpu "
                "docs/upgrade.md)."
            )
        return found


def driver_upgrade(deployed: dict[str, Any], new: dict[str, Any]) -> DriverUpgrade | None:
    """The DRA driver release's upgrade when `new` changes its chart or version; None when the
    release is not deployed yet (its first install creates its CRDs) or keeps its version."""
    before, after = _driver_release(deployed), _driver_release(new)
    if before is None or after is None:
        return None
    old, now = _chart(before), _chart(after)
    if old == now:
        return None
    return DriverUpgrade(str(after.get("Namespace")), old, now)


def _driver_release(template: dict[str, Any]) -> dict[str, Any] | None:
    resources = template.get("Resources", {})
    for resource in resources.values() if isinstance(resources, dict) else ():
        props = resource.get("Properties", {})
        if resource.get("Type") == HELM_CHART and props.get("Release") == DRA_RELEASE:
            return props if isinstance(props, dict) else None
    return None


def _chart(props: dict[str, Any]) -> tuple[str, str]:
    return str(props.get("Chart")), str(props.get("Version"))
