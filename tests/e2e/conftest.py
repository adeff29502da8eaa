"""The e2e session's control plane: built (or found in the cache) and started once, stopped at
the end whatever the tests did. These tests run in a pytest run of their own (`./dev e2e`, and a
step of `./dev test`) on two xdist workers, a test file at a time: each worker's session starts
a control plane of its own, so no test shares a cluster with another running at once."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from gpu_pool.model.versions import DEFAULT_KUBERNETES_VERSION
from tests.e2e.harness.autoscaler_build import autoscaler_version, build_autoscaler, source_tree
from tests.e2e.harness.build import build
from tests.e2e.harness.cluster import Cluster
from tests.e2e.harness.control_plane import ControlPlane
from tests.e2e.harness.crds import karpenter_module
from tests.e2e.harness.karpenter_build import build_karpenter
from tests.e2e.harness.layer import layer_binaries
from tests.e2e.harness.scenario import Scenario


@pytest.fixture(scope="session")
def control_plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    plane = ControlPlane(build(), tmp_path_factory.mktemp("control-plane"))
    try:
        yield plane.start()
    finally:
        plane.stop()


@pytest.fixture(scope="session")
def cluster(
    control_plane: ControlPlane, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Cluster]:
    """The API server through the official client, kubectl and helm of the default minor's
    layer, and the GPU advertiser running beside it."""
    kubectl, helm = layer_binaries(DEFAULT_KUBERNETES_VERSION, tmp_path_factory.mktemp("layer"))
    with Cluster(control_plane, kubectl, helm, tmp_path_factory.mktemp("work")) as connected:
        yield connected


@pytest.fixture
def scenario(cluster: Cluster) -> Iterator[Scenario]:
    """What the test installs and creates, removed after it whatever it did."""
    running = Scenario(cluster)
    try:
        yield running
    finally:
        running.cleanup()


@pytest.fixture(scope="session")
def autoscaler_binary() -> Path:
    """The real Cluster Autoscaler, built from its release source (or found in the cache)."""
    return build_autoscaler()


@pytest.fixture(scope="session")
def autoscaler_chart() -> Path:
    """The cluster-autoscaler chart the same release tree carries (harness/autoscaler.py)."""
    tree, _ = source_tree(autoscaler_version())
    return tree / "charts" / "cluster-autoscaler"


@pytest.fixture(scope="session")
def karpenter_binary() -> Path:
    """The real Karpenter controller, built from its Go module (or found in the cache)."""
    return build_karpenter()


@pytest.fixture(scope="session")
def karpenter_chart() -> Path:
    """The karpenter chart of the pinned module (the one the stack installs)."""
    return karpenter_module() / "charts" / "karpenter"
