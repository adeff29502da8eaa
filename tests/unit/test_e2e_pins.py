"""The e2e components' pins (tests/e2e/components/go.mod) agree with gpu-pool's own: the control
plane the scenarios run on is gpu-pool's default Kubernetes minor, and every staging module is
replaced by the same release as k8s.io/kubernetes (a mix would build a control plane no release
ever was)."""

from __future__ import annotations

import re

from gpu_pool.model.versions import DEFAULT_KUBERNETES_VERSION
from tests.e2e.harness.build import COMPONENTS, pinned_versions


def test_the_control_plane_is_the_default_minor():
    kubernetes = pinned_versions()["k8s.io/kubernetes"]
    assert kubernetes.startswith(f"v{DEFAULT_KUBERNETES_VERSION}.")


def test_every_staging_module_is_the_kubernetes_release():
    kubernetes = pinned_versions()["k8s.io/kubernetes"].lstrip("v")
    staging = re.findall(
        r"^\s*(k8s\.io/\S+) => \1 (v\S+)$", (COMPONENTS / "go.mod").read_text(), re.M
    )
    assert len(staging) >= 30
    assert {version for _, version in staging} == {"v0." + kubernetes.split(".", 1)[1]}
