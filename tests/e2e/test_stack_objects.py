"""Every object gpu-pool puts in a cluster, accepted by the real API server (k8s.io/kubernetes
at the pinned 1.36 patch) with the CRDs of the releases it pins: each KubernetesManifest's
objects and each Helm release rendered by helm with the stack's values, for the default app,
the suite's shared apps (Karpenter, Auto Mode, training, DRA, UltraServer, sharing, mixed
provisioners, an existing cluster), each settings example of the README and docs/, a fleet of
three clusters (docs/fleet.md, as app.py synthesizes it) and examples/app.py.

Each is applied twice, as the stack's kubectl handler applies it (`kubectl apply`, client-side)
and with server-side apply, which is stricter (field ownership, list merges by key); both as a
server-side dry run, so defaulting, the OpenAPI schemas, the CRDs' CEL rules and admission
judge everything and nothing needs a controller. Only the namespaces and the CRDs are created.
Three pinned charts are not held here, so their releases are not applied: cluster-autoscaler
9.59.0 (not vendored, and the Go module proxy serves no k8s.io/autoscaler module),
aws-efa-k8s-device-plugin v0.5.30 and dcgm-exporter (not vendored).
"""

from __future__ import annotations

import json
import runpy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes.client.exceptions import ApiException

from gpu_pool.model.versions import DEFAULT_KUBERNETES_VERSION
from tests.e2e.harness.cluster import Cluster, Refused
from tests.e2e.harness.crds import karpenter_module
from tests.e2e.harness.stack_objects import (
    Release,
    chart_directory,
    deployed,
    manifests,
    releases,
)
from tests.e2e.verdicts import with_crds as installed_crds
from tests.support import settings as shared
from tests.support.cfn import synth
from tests.support.docs_examples import app_settings, settings_examples
from tests.support.looked_up import synth_offline
from tests.support.paths import ROOT

pytestmark = pytest.mark.e2e

SHARED_APPS = {
    "default": shared.DEFAULT,
    "three-pools": shared.THREE_POOLS,
    "karpenter": shared.KARPENTER,
    "karpenter-operator": shared.KARPENTER_OPERATOR,
    "mixed": shared.MIXED,
    "auto-mode": shared.AUTO_MODE,
    "mixed-auto-mode": shared.MIXED_AUTO_MODE,
    "training": shared.TRAINING,
    "dra": shared.DRA,
    "karpenter-dra": shared.KARPENTER_DRA,
    "auto-mode-dra": shared.AUTO_MODE_DRA,
    "efa-dra": shared.EFA_DRA,
    "ultraserver": shared.ULTRASERVER,
    "operator": shared.OPERATOR,
    "existing": shared.EXISTING,
}
NOT_HELD = ("cluster-autoscaler", "aws-efa-k8s-device-plugin", "dcgm-exporter")


@pytest.fixture(scope="module")
def with_crds(cluster: Cluster) -> Cluster:
    return installed_crds(cluster)


def _templates_of_examples(tmp_path: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    for example in settings_examples():
        settings = app_settings(example, tmp_path)
        template = (
            synth_offline(settings)[0] if settings.get("account") else synth(settings).to_json()
        )
        yield example.id, template


def _ensure_namespaces(cluster: Cluster, names: set[str]) -> None:
    for name in sorted(names):
        try:
            cluster.core.create_namespace({"metadata": {"name": name}})
        except ApiException as exists:
            if exists.status != 409:
                raise


def _rendered(cluster: Cluster, release: Release) -> list[dict[str, Any]]:
    chart = chart_directory(release, karpenter_module())
    assert chart is not None
    values = cluster._file(".json", json.dumps(release.values))
    text = cluster.helm_binary_output(
        "template",
        release.release,
        str(chart),
        "--namespace",
        release.namespace,
        "--values",
        str(values),
        "--kube-version",
        cluster.server_version(),
    )
    import yaml

    return [d for d in yaml.safe_load_all(text) if d]


def _judge_template(cluster: Cluster, template: dict[str, Any]) -> list[str]:
    """What the API server refused of one template's objects (both ways of applying)."""
    from aws_cdk.assertions import Template

    parsed = Template.from_json(template)
    objects = [o for m in manifests(parsed) for o in m.objects]
    held = [r for r in releases(parsed) if r.chart not in NOT_HELD]
    charts = {r.logical_id: _rendered(cluster, r) for r in held}
    _ensure_namespaces(
        cluster,
        {o["metadata"]["namespace"] for o in objects if o["metadata"].get("namespace")}
        | {r.namespace for r in held},
    )
    # One batch of all the stack puts in the cluster, each way of applying once (kubectl names
    # the object it refuses).
    batch = objects + [o for rendered in charts.values() for o in rendered]
    assert batch, "a stack with nothing for the cluster would judge nothing"
    problems = []
    for how, apply in (
        ("kubectl apply", lambda b: cluster.apply(b, overwrite=True, dry_run=True)),
        ("server-side apply", lambda b: cluster.apply_server_side(b, dry_run=True)),
    ):
        try:
            apply(batch)
        except Refused as refused:
            problems.append(f"{how}: {refused}")
    return problems


@pytest.mark.parametrize("app", sorted(SHARED_APPS))
def test_each_shared_apps_objects_are_accepted(with_crds, app):
    assert _judge_template(with_crds, synth(SHARED_APPS[app]).to_json()) == []


def test_each_docs_examples_objects_are_accepted(with_crds, tmp_path):
    refused = {
        example: problems
        for example, template in _templates_of_examples(tmp_path)
        if (problems := _judge_template(with_crds, template))
    }
    assert refused == {}


def test_the_example_apps_objects_are_accepted(with_crds):
    assembly = runpy.run_path(str(ROOT / "examples" / "app.py"), run_name="__main__")["app"].synth()
    refused = {
        stack.stack_name: problems
        for stack in assembly.stacks
        if (problems := _judge_template(with_crds, stack.template))
    }
    assert refused == {}
    assert len(assembly.stacks) == 2


def test_a_fleets_clusters_objects_are_accepted(with_crds, fleet_assembly):
    """docs/fleet.md's fleet (tests/support/fleet.py: three clusters, two accounts, three
    Regions), as app.py synthesizes it: each cluster's stack."""
    manifest = json.loads((fleet_assembly / "manifest.json").read_text())
    templates = {
        name: json.loads((fleet_assembly / artifact["properties"]["templateFile"]).read_text())
        for name, artifact in manifest["artifacts"].items()
        if artifact["type"] == "aws:cloudformation:stack"
    }
    assert len(templates) == 3
    refused = {
        name: problems
        for name, template in templates.items()
        if (problems := _judge_template(with_crds, template))
    }
    assert refused == {}


def test_the_server_is_the_pinned_minor(with_crds):
    """The scenarios ask for gpu-pool's default minor; the server they run on is it."""
    assert with_crds.server_version().startswith(f"v{DEFAULT_KUBERNETES_VERSION}.")


__all__ = ["deployed"]
