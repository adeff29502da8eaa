"""The e2e cluster as the tests use it: the official Python client, and kubectl and helm run
the way the stack's kubectl handler runs them (aws-cdk-lib 2.275.0,
custom-resource-handlers/dist/aws-eks-v2/kubectl-handler: apply/__init__.py writes a
KubernetesManifest's objects as a stream of JSON objects and runs `kubectl apply -f` when the
resource overwrites, else `kubectl create --save-config -f`; helm/__init__.py runs `helm upgrade
RELEASE CHART --install [--create-namespace] --values FILE --version V --namespace NS`).
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from kubernetes import client, config

from tests.e2e.harness.control_plane import ControlPlane
from tests.e2e.harness.nodes import GpuAdvertiser

T = TypeVar("T")


class Refused(Exception):
    """kubectl or helm failed; the message is the tool's own output."""


class Cluster:
    def __init__(self, plane: ControlPlane, kubectl: Path, helm: Path, work_dir: Path) -> None:
        self.plane = plane
        self.kubectl_binary = kubectl
        self.helm_binary = helm
        self.work_dir = work_dir
        self.api = config.new_client_from_config(str(plane.kubeconfig))
        self.core = client.CoreV1Api(self.api)
        self.apps = client.AppsV1Api(self.api)
        self.custom = client.CustomObjectsApi(self.api)
        self.resource = client.ResourceV1Api(self.api)
        self._advertiser = GpuAdvertiser(self.core, self.resource)
        self._files = 0

    def __enter__(self) -> Cluster:
        self._advertiser.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self._advertiser.__exit__(*exc)

    # -- tools --------------------------------------------------------------------------
    def _file(self, suffix: str, text: str) -> Path:
        self._files += 1
        path = self.work_dir / f"{self._files:04d}{suffix}"
        path.write_text(text)
        return path

    def run(self, tool: Path, *arguments: str) -> str:
        done = subprocess.run(
            [str(tool), *arguments, "--kubeconfig", str(self.plane.kubeconfig)],
            capture_output=True,
            text=True,
        )
        if done.returncode != 0:
            raise Refused((done.stderr or done.stdout).strip())
        return done.stdout

    def helm_binary_output(self, *arguments: str) -> str:
        """helm without a cluster (`helm template`)."""
        done = subprocess.run([str(self.helm_binary), *arguments], capture_output=True, text=True)
        if done.returncode != 0:
            raise Refused(done.stderr.strip())
        return done.stdout

    def server_version(self) -> str:
        return str(client.VersionApi(self.api).get_code().git_version)

    def kubectl(self, *arguments: str) -> str:
        return self.run(self.kubectl_binary, *arguments)

    def helm(self, *arguments: str) -> str:
        return self.run(self.helm_binary, *arguments)

    # -- as the stack's handler ---------------------------------------------------------
    def apply(
        self, objects: list[dict[str, Any]], *, overwrite: bool = True, dry_run: bool = False
    ) -> str:
        """A KubernetesManifest's objects, applied as the kubectl handler's Create does
        (server-side dry run with `dry_run`)."""
        manifest = self._file(".yaml", "".join(json.dumps(o) for o in objects))
        extra = ["--dry-run=server"] if dry_run else []
        if overwrite:
            return self.kubectl("apply", "-f", str(manifest), *extra)
        return self.kubectl("create", "-f", str(manifest), "--save-config", *extra)

    def apply_server_side(self, objects: list[dict[str, Any]], *, dry_run: bool = False) -> str:
        """The same objects through server-side apply (field ownership, stricter merges)."""
        manifest = self._file(".yaml", "".join(json.dumps(o) for o in objects))
        extra = ["--dry-run=server"] if dry_run else []
        return self.kubectl(
            "apply", "--server-side", "--field-manager=gpu-pool-e2e", "-f", str(manifest), *extra
        )

    def install_chart(
        self,
        release: str,
        chart: Path,
        namespace: str,
        values: dict[str, Any],
        *,
        create_namespace: bool = True,
    ) -> str:
        """`helm upgrade --install` of a chart directory, as the helm handler runs it."""
        values_file = self._file(".json", json.dumps(values))
        arguments = ["upgrade", release, str(chart), "--install"]
        if create_namespace:
            arguments.append("--create-namespace")
        return self.helm(*arguments, "--values", str(values_file), "--namespace", namespace)

    def uninstall_chart(self, release: str, namespace: str) -> None:
        self.helm("uninstall", release, "--namespace", namespace, "--wait")

    # -- waiting ------------------------------------------------------------------------
    def wait_for(self, what: str, probe: Callable[[], T | None], timeout: float = 30.0) -> T:
        """Polls `probe` until it returns something truthy; fails naming `what`."""
        deadline = time.monotonic() + timeout
        while True:
            self.plane.check_running()
            found = probe()
            if found:
                return found
            if time.monotonic() > deadline:
                advertiser = self._advertiser.last_error
                raise AssertionError(
                    f"e2e: timed out after {timeout:.0f} s waiting for {what}"
                    + (f" (the GPU advertiser fails: {advertiser!r})" if advertiser else "")
                )
            time.sleep(0.2)


def install_crds(cluster: Cluster, documents: list[dict[str, Any]]) -> None:
    """Creates the CRDs (server-side apply, as large CRDs need: their last-applied annotation
    would pass the 256 KiB limit) and waits until each is Established."""
    cluster.apply_server_side(documents)
    names = [d["metadata"]["name"] for d in documents]
    cluster.kubectl(
        "wait", "--for=condition=Established", "--timeout=30s", *(f"crd/{n}" for n in names)
    )
