"""A real Kubernetes control plane on 127.0.0.1: etcd, kube-apiserver, kube-controller-manager,
kube-scheduler and kwok, as built by build.py, started once per test session.

Everything listens on loopback ports chosen free at start; nothing else is served (the
controller manager and scheduler run without their HTTPS endpoints). The API server authorizes
with Node and RBAC, as EKS does, so any identity but the admin is judged by Kubernetes' RBAC.
kwok keeps the nodes annotated `kwok.x-k8s.io/node: fake` Ready and their pods Running, with
the node and pod stages of its own release (its module's kustomize/stage files).
Every process gets SIGTERM when the test process dies (PR_SET_PDEATHSIG), so an interrupted
run leaves nothing behind; stop() ends them in reverse order of start.
"""

from __future__ import annotations

import json
import ssl
import subprocess
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from tests.e2e.harness.build import module_dir, pinned_versions
from tests.e2e.harness.pki import Pki, make_pki
from tests.e2e.harness.processes import die_with_parent, free_port

# The annotation kwok's --manage-nodes-with-annotation-selector picks nodes by.
KWOK_NODE_ANNOTATION = {"kwok.x-k8s.io/node": "fake"}
# kwok's stages (kustomize/stage in its module): nodes become Ready and send heartbeats through
# their Lease; pods are Ready once bound, and Job pods complete.
KWOK_STAGES = (
    "kustomize/stage/node/fast/node-initialize.yaml",
    "kustomize/stage/node/heartbeat-with-lease/node-heartbeat-with-lease.yaml",
    "kustomize/stage/pod/fast/pod-ready.yaml",
    "kustomize/stage/pod/fast/pod-complete.yaml",
    "kustomize/stage/pod/fast/pod-delete.yaml",
)
START_TIMEOUT_SECONDS = 60
# The smoke-test pod completing once it runs (a Stage of our own, kwok/ beside this file).
SMOKE_POD_STAGE = Path(__file__).parent / "kwok" / "smoke-pod-completes.yaml"
# What the smoke pod's `nvidia-smi` printed, as the kubelet keeps a container's log (the CRI
# log format: time, stream, tag, text): kwok's kubelet API serves it to `kubectl logs` and
# the API server's log proxy (kwok ClusterLogs, kwok.x-k8s.io/v1alpha1).
NVIDIA_SMI_OUTPUT = (
    "| NVIDIA-SMI 580.95.05    Driver Version: 580.95.05    CUDA Version: 13.0 |",
    "|   0  NVIDIA A10G                    On  |   00000000:00:1E.0 Off |     0 |",
)


@dataclass
class ControlPlane:
    """A running control plane: its admin kubeconfig, API server URL and certificates."""

    bin_dir: Path
    work_dir: Path
    server: str = ""
    kubeconfig: Path = field(default=Path())
    pki: Pki | None = None
    _processes: list[tuple[str, subprocess.Popen[bytes]]] = field(default_factory=list)

    def start(self) -> ControlPlane:
        self.pki = make_pki(self.work_dir / "pki")
        etcd_port, peer_port, api_port = free_port(), free_port(), free_port()
        kubelet_port = free_port()
        self.server = f"https://127.0.0.1:{api_port}"
        self.kubeconfig = self._write_kubeconfig()
        self._start(
            "etcd",
            [
                "--name=e2e",
                f"--data-dir={self.work_dir / 'etcd'}",
                f"--listen-client-urls=http://127.0.0.1:{etcd_port}",
                f"--advertise-client-urls=http://127.0.0.1:{etcd_port}",
                f"--listen-peer-urls=http://127.0.0.1:{peer_port}",
                f"--initial-advertise-peer-urls=http://127.0.0.1:{peer_port}",
                f"--initial-cluster=e2e=http://127.0.0.1:{peer_port}",
                # A throwaway store: no fsync, as Kubernetes' own integration tests run etcd.
                "--unsafe-no-fsync",
                "--log-level=warn",
            ],
        )
        pki = self.pki
        self._start(
            "kube-apiserver",
            [
                f"--etcd-servers=http://127.0.0.1:{etcd_port}",
                "--bind-address=127.0.0.1",
                "--advertise-address=127.0.0.1",
                f"--secure-port={api_port}",
                f"--cert-dir={self.work_dir / 'apiserver'}",
                f"--tls-cert-file={pki.serving_cert}",
                f"--tls-private-key-file={pki.serving_key}",
                f"--client-ca-file={pki.ca_cert}",
                "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
                f"--service-account-key-file={pki.service_account_public_key}",
                f"--service-account-signing-key-file={pki.service_account_key}",
                "--authorization-mode=Node,RBAC",
                "--service-cluster-ip-range=10.100.0.0/16",
                # Device plugins and GPU Operator operands run privileged, as on EKS.
                "--allow-privileged=true",
                # The `kubernetes` Service's endpoint would be 127.0.0.1, which Endpoints refuse.
                "--endpoint-reconciler-type=none",
                # Pod logs come from kwok's kubelet API at each node's InternalIP (127.0.0.1).
                "--kubelet-preferred-address-types=InternalIP",
                "--profiling=false",
            ],
        )
        self._wait_ready()
        self._start(
            "kube-controller-manager",
            [
                f"--kubeconfig={self.kubeconfig}",
                "--leader-elect=false",
                "--secure-port=0",
                f"--service-account-private-key-file={pki.service_account_key}",
                f"--root-ca-file={pki.ca_cert}",
                "--use-service-account-credentials=false",
                # No certificate signing here: the kubelet's CSRs are kwok's business.
                "--controllers=*,-csrsigning",
            ],
        )
        self._start(
            "kube-scheduler",
            [
                f"--kubeconfig={self.kubeconfig}",
                "--leader-elect=false",
                "--secure-port=0",
            ],
        )
        kwok = module_dir("sigs.k8s.io/kwok", pinned_versions()["sigs.k8s.io/kwok"])
        self._start(
            "kwok",
            [
                f"--kubeconfig={self.kubeconfig}",
                "--manage-all-nodes=false",
                "--manage-nodes-with-annotation-selector="
                + ",".join(f"{k}={v}" for k, v in KWOK_NODE_ANNOTATION.items()),
                *(f"--config={kwok / stage}" for stage in KWOK_STAGES),
                f"--config={SMOKE_POD_STAGE}",
                f"--config={self._smoke_logs()}",
                # kwok's kubelet API (logs), on loopback, as each node's kubelet endpoint.
                f"--server-address=127.0.0.1:{kubelet_port}",
                "--node-ip=127.0.0.1",
                f"--node-port={kubelet_port}",
                f"--tls-cert-file={pki.serving_cert}",
                f"--tls-private-key-file={pki.serving_key}",
            ],
        )
        return self

    def _smoke_logs(self) -> Path:
        """kwok's ClusterLogs for the smoke pod's container, and the log file it serves."""
        log = self.work_dir / "nvidia-smi.log"
        log.write_text(
            "".join(
                f"2026-01-01T00:00:00.000000000Z stdout F {line}\n" for line in NVIDIA_SMI_OUTPUT
            )
        )
        config = self.work_dir / "smoke-logs.yaml"
        config.write_text(
            json.dumps(
                {
                    "apiVersion": "kwok.x-k8s.io/v1alpha1",
                    "kind": "ClusterLogs",
                    "metadata": {"name": "gpu-pool-smoke-test"},
                    "spec": {"logs": [{"containers": ["nvidia-smi"], "logsFile": str(log)}]},
                }
            )
        )
        return config

    def _write_kubeconfig(self) -> Path:
        assert self.pki is not None
        path = self.work_dir / "admin.kubeconfig"
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {
                    "name": "e2e",
                    "cluster": {
                        "server": self.server,
                        "certificate-authority": str(self.pki.ca_cert),
                    },
                }
            ],
            "users": [
                {
                    "name": "admin",
                    "user": {
                        "client-certificate": str(self.pki.admin_cert),
                        "client-key": str(self.pki.admin_key),
                    },
                }
            ],
            "contexts": [{"name": "e2e", "context": {"cluster": "e2e", "user": "admin"}}],
            "current-context": "e2e",
        }
        path.write_text(json.dumps(config))
        return path

    def _start(self, name: str, arguments: list[str]) -> None:
        log = (self.work_dir / f"{name}.log").open("wb")
        process = subprocess.Popen(
            [str(self.bin_dir / name), *arguments],
            stdout=log,
            stderr=subprocess.STDOUT,
            preexec_fn=die_with_parent,
            cwd=self.work_dir,
        )
        self._processes.append((name, process))

    def _wait_ready(self) -> None:
        assert self.pki is not None
        context = ssl.create_default_context(cafile=str(self.pki.ca_cert))
        context.load_cert_chain(str(self.pki.admin_cert), str(self.pki.admin_key))
        deadline = time.monotonic() + START_TIMEOUT_SECONDS
        while True:
            self.check_running()
            try:
                with urllib.request.urlopen(f"{self.server}/readyz", context=context, timeout=2):
                    return
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError(self.failure("kube-apiserver not ready")) from None
                time.sleep(0.2)

    def check_running(self) -> None:
        """Raises, with the end of its log, if a component has exited."""
        for name, process in self._processes:
            if process.poll() is not None:
                raise RuntimeError(self.failure(f"{name} exited ({process.returncode})"))

    def failure(self, what: str) -> str:
        logs = []
        for name, _ in self._processes:
            tail = (self.work_dir / f"{name}.log").read_text(errors="replace")[-3000:]
            logs.append(f"--- {name}.log (end) ---\n{tail}")
        return "\n".join([f"e2e control plane: {what}", *logs])

    def stop(self) -> None:
        """SIGTERM to every component, SIGKILL to any still running 2 s later: the store is
        thrown away, so nothing needs the API server's graceful drain (which waits on its open
        watches for up to a minute)."""
        for _, process in reversed(self._processes):
            process.terminate()
        deadline = time.monotonic() + 2
        for _, process in reversed(self._processes):
            try:
                process.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        self._processes.clear()
