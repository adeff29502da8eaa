"""Builds the e2e components from the Go module proxy into a cache keyed by their versions.

The versions live once, in tests/e2e/components/go.mod (go.sum holds their hashes): etcd, the
Kubernetes control plane (kube-apiserver, kube-controller-manager, kube-scheduler) and kwok.
A cold build compiles Kubernetes from source (about 10 minutes on 2 cores with nothing else
running, 20 under load, most of it kube-apiserver's packages; Go's own build cache keeps the
packages for the next build), and
prints what it builds and how long each part took. A warm run finds the binaries under
`$GPU_POOL_E2E_CACHE` (default `~/.cache/gpu-pool-e2e`) by a key over go.mod, go.sum, the
etcd main, the Go version, the build's flags and Go environment, and builds nothing.

`python -m tests.e2e.harness.build` builds if needed, then prints each component's version as
the component itself reports it.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

COMPONENTS = Path(__file__).resolve().parent.parent / "components"


@dataclass(frozen=True)
class Component:
    """One binary: its name, the Go package it is built from, and the module that pins it."""

    name: str
    package: str
    module: str


BINARIES = (
    Component("etcd", "./etcd", "go.etcd.io/etcd/server/v3"),
    Component("kube-apiserver", "k8s.io/kubernetes/cmd/kube-apiserver", "k8s.io/kubernetes"),
    Component(
        "kube-controller-manager",
        "k8s.io/kubernetes/cmd/kube-controller-manager",
        "k8s.io/kubernetes",
    ),
    Component("kube-scheduler", "k8s.io/kubernetes/cmd/kube-scheduler", "k8s.io/kubernetes"),
    Component("kwok", "sigs.k8s.io/kwok/cmd/kwok", "sigs.k8s.io/kwok"),
)


def pinned_versions() -> dict[str, str]:
    """Each required module's version, as go.mod pins it (`module path -> vX.Y.Z`)."""
    text = (COMPONENTS / "go.mod").read_text()
    return dict(re.findall(r"^\s*(?:require\s+)?(\S+)\s+(v\S+?)(?:\s+//.*)?$", text, re.M))


def _ldflags() -> str:
    """The version Kubernetes' own build stamps (hack/lib/version.sh sets the same variables):
    without it the components call themselves v0.0.0, which Helm's kubeVersion checks refuse."""
    version = pinned_versions()["k8s.io/kubernetes"]
    major, minor, _ = version.lstrip("v").split(".")
    stamp = "k8s.io/component-base/version"
    return " ".join(
        ["-s", "-w"]
        + [
            f"-X {stamp}.{name}={value}"
            for name, value in (
                ("gitVersion", version),
                ("gitMajor", major),
                ("gitMinor", minor),
                ("gitTreeState", "clean"),
            )
        ]
    )


def go_environment() -> dict[str, str]:
    # GOTOOLCHAIN=local: this machine's Go builds it (go.mod asks for no newer one); GOFLAGS
    # -mod=readonly: go.mod and go.sum are used as committed, never rewritten by a build;
    # -buildvcs=false: the binaries do not depend on the checkout's git state.
    return {
        **os.environ,
        "GOTOOLCHAIN": "local",
        "GOFLAGS": "-mod=readonly -buildvcs=false",
        "CGO_ENABLED": "0",
    }


# The Go variables that change what a build produces (the others, GOPATH, GOPROXY, GOCACHE,
# only say where things are).
_BINARY_SHAPING = (
    "GOOS",
    "GOARCH",
    "GOAMD64",
    "GOARM64",
    "GOEXPERIMENT",
    "GOFLAGS",
    "GOTOOLCHAIN",
    "CGO_ENABLED",
)


def _cache_key() -> str:
    go_version = subprocess.run(
        ["go", "version"], check=True, capture_output=True, text=True, env=go_environment()
    ).stdout
    # Everything a build depends on: the Go version, the flags and the environment it sets,
    # every component's package, then the pins and our own sources.
    build_env = {k: v for k, v in go_environment().items() if k in _BINARY_SHAPING}
    recipe = json.dumps([_ldflags(), build_env, [c.package for c in BINARIES]], sort_keys=True)
    digest = hashlib.sha256(go_version.encode() + recipe.encode())
    for path in sorted([COMPONENTS / "go.mod", COMPONENTS / "go.sum", *COMPONENTS.glob("*/*.go")]):
        digest.update(path.name.encode() + path.read_bytes())
    return digest.hexdigest()[:16]


def cache_root() -> Path:
    default = Path.home() / ".cache" / "gpu-pool-e2e"
    return Path(os.environ.get("GPU_POOL_E2E_CACHE", default))


def log(message: str) -> None:
    print(f"==> e2e: {message}", file=sys.stderr, flush=True)


def build() -> Path:
    """The directory holding every component's binary, built first where missing."""
    if shutil.which("go") is None:
        raise SystemExit(
            "e2e: the end-to-end tests build Kubernetes from source and need Go 1.26 or newer "
            "on PATH (go.mod: tests/e2e/components)"
        )
    bin_dir = cache_root() / _cache_key() / "bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    # One build at a time (pytest workers, two shells): the others wait for its binaries.
    with open(bin_dir.parent / "build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        missing = [c for c in BINARIES if not (bin_dir / c.name).exists()]
        if missing:
            _build(missing, bin_dir)
    return bin_dir


def _build(missing: list[Component], bin_dir: Path) -> None:
    versions = pinned_versions()
    log(
        f"building {len(missing)} components from the Go module proxy into {bin_dir} "
        "(cold: about 10 minutes on 2 cores, 20 under load; later runs reuse them)"
    )
    started = time.monotonic()
    for index, component in enumerate(missing, 1):
        began = time.monotonic()
        log(
            f"[{index}/{len(missing)}] {component.name} "
            f"({component.module} {versions[component.module]})"
        )
        partial = bin_dir / f".{component.name}.partial"
        subprocess.run(
            [
                "go",
                "build",
                "-trimpath",
                "-ldflags",
                _ldflags(),
                "-o",
                str(partial),
                component.package,
            ],
            cwd=COMPONENTS,
            check=True,
            env=go_environment(),
        )
        partial.rename(bin_dir / component.name)
        log(f"[{index}/{len(missing)}] {component.name}: {time.monotonic() - began:.0f} s")
    log(f"built in {time.monotonic() - started:.0f} s")


def built_once(
    binary: Path, what: str, cold: str, build: list[str], package: str, **where: Any
) -> Path:
    """`binary`, built by `build` (`go build` and its flags) from `package` (run `where`: cwd,
    env) unless it is there, one build at a time (pytest workers, two shells: the others wait for
    it), with what it builds, `cold` (how long a cold build takes) and how long it took printed.
    `-o` goes before the package: `go build` reads every word after it as another package."""
    binary.parent.mkdir(parents=True, exist_ok=True)
    with open(binary.parent / "build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not binary.exists():
            log(f"building {what} (cold: {cold})")
            began = time.monotonic()
            partial = binary.parent / f".{binary.name}.partial"
            subprocess.run([*build, "-o", str(partial), package], check=True, **where)
            partial.rename(binary)
            log(f"{what}: built in {time.monotonic() - began:.0f} s")
    return binary


def module_dir(module: str, version: str) -> Path:
    """Where the Go module cache holds `module` at `version`, downloaded first if needed and
    checked against go.sum or, for a module go.sum does not list, the checksum database.

    Only the files are wanted: a module whose go.mod asks for a newer Go than this machine's
    (Karpenter 1.15.0 asks for 1.26.9) is still downloaded and checked, and `go mod download`
    then reports only that, which is no reason to stop here."""
    listed = subprocess.run(
        ["go", "mod", "download", "-json", f"{module}@{version}"],
        cwd=COMPONENTS,
        capture_output=True,
        text=True,
        env=go_environment(),
    )
    answer = json.loads(listed.stdout or "{}")
    if "Dir" in answer:
        return Path(answer["Dir"])
    cache = subprocess.run(
        ["go", "env", "GOMODCACHE"], check=True, capture_output=True, text=True
    ).stdout.strip()
    # The module cache's path escaping: each upper-case letter is "!" and its lower case.
    escaped = re.sub(r"[A-Z]", lambda m: "!" + m.group().lower(), module)
    directory = Path(cache) / f"{escaped}@{version}"
    if "requires go" not in answer.get("Error", "") or not directory.is_dir():
        raise RuntimeError(f"e2e: go mod download {module}@{version}: {answer or listed.stderr}")
    return directory


VERSION_FLAGS = {"etcd": ["--version"], "kwok": ["--version"]}


def reported_versions(bin_dir: Path) -> dict[str, str]:
    """Each component's version as the binary itself prints it (first line)."""
    reported = {}
    for component in BINARIES:
        output = subprocess.run(
            [str(bin_dir / component.name), *VERSION_FLAGS.get(component.name, ["--version"])],
            check=True,
            capture_output=True,
            text=True,
        )
        reported[component.name] = (output.stdout or output.stderr).strip().splitlines()[0]
    return reported


def main() -> None:
    from tests.e2e.harness import autoscaler_build, karpenter_build

    bin_dir = build()
    autoscaler = autoscaler_build.build_autoscaler()
    karpenter = karpenter_build.build_karpenter()
    for name, version in reported_versions(bin_dir).items():
        print(f"{name}: {version}")
    print(f"cluster-autoscaler: {autoscaler_build.reported_version(autoscaler)}")
    print(f"karpenter: {karpenter_build.reported_version(karpenter)}")


if __name__ == "__main__":
    main()
