"""The real Cluster Autoscaler, built from its release source for the e2e tests.

The Go module proxy refuses `k8s.io/autoscaler/cluster-autoscaler` at every version, while it
serves every dependency, so the binary is built from the release tree itself as the main module
(its go.mod's replace lines then pin what they pin). The tree is, in this order:

1. `GPU_POOL_CA_SOURCE`: a `.tar.gz` of the `cluster-autoscaler/` directory (checked against
   SOURCES' sha256) or that directory itself (used as it is: a tree of your own);
2. `../shared/upstream/cluster-autoscaler-<version>.tar.gz` beside the checkout, or beside the
   checkout it was cloned from (its README names the tag and commit), checked against SOURCES;
3. a shallow clone of the release tag from the autoscaler repository, checked against the tag's
   commit in SOURCES (a machine that reaches it).

The version is the one gpu-pool deploys for its default Kubernetes minor (the image tag the
stack renders: gpu_pool/model/versions.py), so the e2e tests run the autoscaler users get.
`go build -tags aws` compiles only the AWS provider (about 5 minutes cold on 2 cores; Go's build
cache keeps the packages). The binary goes under the e2e cache beside the other components,
keyed by the source's hash, the Go version and the build's flags.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tarfile
from dataclasses import dataclass
from pathlib import Path

from gpu_pool.model.versions import DEFAULT_KUBERNETES_VERSION, autoscaler_image_tag
from tests.e2e.harness.build import built_once, cache_root, go_environment, log
from tests.support.paths import ROOT

ENVIRONMENT_SOURCE = "GPU_POOL_CA_SOURCE"
UPSTREAM = ROOT.parent / "shared" / "upstream"
REPOSITORY = "https://github.com/kubernetes/autoscaler"
# Only the AWS provider (cloudprovider/builder/builder_aws.go's build tag).
BUILD_TAGS = "aws"
LDFLAGS = "-s -w"


@dataclass(frozen=True)
class Source:
    """A release of the cluster-autoscaler/ tree: the sha256 of its archive as
    ../shared/upstream holds it, and the commit its repository tag names."""

    sha256: str
    commit: str


# cluster-autoscaler-1.36.1: ../shared/upstream/README.md (the tag's cluster-autoscaler/
# directory, unchanged, under the prefix cluster-autoscaler-1.36.1/; Apache-2.0).
SOURCES = {
    "1.36.1": Source(
        "053380817f579704874e7c706b794bb8be4e638664aaf448f4d702ea0387ae18",
        "35e8a280425c76a4040f57ae0fa232a952c02024",
    ),
}


def autoscaler_version() -> str:
    """The Cluster Autoscaler release gpu-pool deploys on its default minor (1.36.1)."""
    tag = autoscaler_image_tag(DEFAULT_KUBERNETES_VERSION)
    assert tag is not None, f"no Cluster Autoscaler pinned for {DEFAULT_KUBERNETES_VERSION}"
    return tag.removeprefix("v")


def _source(version: str) -> Source:
    if version not in SOURCES:
        raise SystemExit(
            f"e2e: no sha256 pinned for cluster-autoscaler {version} (the default minor's image "
            "tag moved): add its archive's sha256 and tag commit to SOURCES in "
            "tests/e2e/harness/autoscaler_build.py"
        )
    return SOURCES[version]


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as data:
        for block in iter(lambda: data.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _unpacked(archive: Path, expected: str, into: Path) -> Path:
    """The tree in `archive`, checked against `expected` and unpacked once into `into`."""
    found = _sha256(archive)
    if found != expected:
        raise SystemExit(
            f"e2e: {archive} has sha256 {found}, not the pinned {expected} (SOURCES in "
            "tests/e2e/harness/autoscaler_build.py): not the release it names"
        )
    tree = into / "tree"
    if not (tree / "go.mod").is_file():
        partial = into / ".partial"
        shutil.rmtree(partial, ignore_errors=True)
        with tarfile.open(archive) as packed:
            packed.extractall(partial, filter="data")
        (top,) = partial.iterdir()
        top.rename(tree)
        partial.rmdir()
    return tree


def _cloned(version: str, expected: str, into: Path) -> Path:
    clone = into / "clone"
    if not (clone / "cluster-autoscaler" / "go.mod").is_file():
        shutil.rmtree(clone, ignore_errors=True)
        log(f"cluster-autoscaler {version}: no archive here, cloning its release tag")
        cloned = subprocess.run(
            [
                "git",
                "clone",
                "--quiet",
                "--depth",
                "1",
                "-b",
                f"cluster-autoscaler-{version}",
                REPOSITORY,
                str(clone),
            ],
        )
        if cloned.returncode != 0:
            raise SystemExit(
                f"e2e: no cluster-autoscaler {version} source: no {ENVIRONMENT_SOURCE}, no "
                f"cluster-autoscaler-{version}.tar.gz in ../shared/upstream beside the checkout "
                "(or beside the one it was cloned from), and its tag could not be cloned: set "
                f"{ENVIRONMENT_SOURCE} to the release's archive or its cluster-autoscaler/ tree"
            )
    head = subprocess.run(
        ["git", "-C", str(clone), "rev-parse", "HEAD"], check=True, capture_output=True, text=True
    ).stdout.strip()
    if head != expected:
        raise SystemExit(f"e2e: tag cluster-autoscaler-{version} is {head}, not {expected}")
    return clone / "cluster-autoscaler"


def source_tree(version: str) -> tuple[Path, str]:
    """The release tree to build, and where it came from (for the log)."""
    pinned = _source(version)
    into = cache_root() / f"cluster-autoscaler-{version}-source"
    into.mkdir(parents=True, exist_ok=True)
    own = _own_tree()
    if own is not None:
        return own, f"{ENVIRONMENT_SOURCE}={own} (a tree of your own: not checked)"
    given = os.environ.get(ENVIRONMENT_SOURCE)
    if given:
        return _unpacked(Path(given), pinned.sha256, into), f"{ENVIRONMENT_SOURCE}={given}"
    name = f"cluster-autoscaler-{version}.tar.gz"
    for upstream in _upstream_folders():
        if (upstream / name).is_file():
            return _unpacked(upstream / name, pinned.sha256, into), str(upstream / name)
    return _cloned(version, pinned.commit, into), f"{REPOSITORY} tag cluster-autoscaler-{version}"


def _upstream_folders() -> list[Path]:
    """Where ../shared/upstream may be: beside this checkout (CI lays shared/ beside its clone),
    else beside the checkout this one was cloned from (a fresh clone in a temporary folder, as
    the development guide's pre-stop run makes)."""
    folders = [UPSTREAM]
    origin = subprocess.run(
        ["git", "-C", str(ROOT), "remote", "get-url", "origin"],
        capture_output=True,
        text=True,
    ).stdout.strip()
    if origin and Path(origin).is_dir():
        folders.append(Path(origin).resolve().parent / "shared" / "upstream")
    return folders


def _key(version: str, tree: Path) -> str:
    """The build's cache key: the release (its archive and tag are both checked against the same
    pin, so where the archive lies does not matter) or, for a tree of one's own, its path and
    go.mod, go.sum and main.go; with the Go version and the build's flags."""
    go_version = subprocess.run(
        ["go", "version"], check=True, capture_output=True, text=True, env=go_environment()
    ).stdout
    recipe = json.dumps([BUILD_TAGS, LDFLAGS, go_version, sorted(_environment_shaping())])
    if _own_tree() is None:
        identity = f"release {version} {_source(version).sha256}".encode()
    else:
        files = b"".join((tree / name).read_bytes() for name in ("go.mod", "go.sum", "main.go"))
        identity = str(tree).encode() + files
    return hashlib.sha256(recipe.encode() + identity).hexdigest()[:16]


def _own_tree() -> Path | None:
    """GPU_POOL_CA_SOURCE when it names a directory: a tree of one's own, not checked."""
    given = os.environ.get(ENVIRONMENT_SOURCE)
    return Path(given) if given and Path(given).is_dir() else None


def _environment_shaping() -> list[tuple[str, str]]:
    shaping = ("GOOS", "GOARCH", "GOAMD64", "GOFLAGS", "GOTOOLCHAIN", "CGO_ENABLED")
    return [(k, v) for k, v in go_environment().items() if k in shaping]


def build_autoscaler() -> Path:
    """The Cluster Autoscaler binary, built first where the cache has none."""
    version = autoscaler_version()
    tree, origin = source_tree(version)
    binary = cache_root() / f"cluster-autoscaler-{_key(version, tree)}" / "cluster-autoscaler"
    return built_once(
        binary,
        f"cluster-autoscaler {version} from {origin} (go build -tags {BUILD_TAGS}, the AWS "
        "provider only)",
        "about 7 minutes on 2 cores",
        ["go", "build", "-tags", BUILD_TAGS, "-trimpath", "-ldflags", LDFLAGS],
        ".",
        cwd=tree,
        env=go_environment(),
    )


def reported_version(binary: Path) -> str:
    """The version line the binary logs first when it starts (main.go: "Cluster Autoscaler
    <version>"); it then stops at once on a kubeconfig that does not exist."""
    started = subprocess.run(
        [str(binary), "--v=1", "--kubeconfig=/nonexistent", "--cloud-provider=aws"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    for line in started.stderr.splitlines():
        if "Cluster Autoscaler " in line:
            return line.split("] ", 1)[-1]
    raise RuntimeError(f"e2e: {binary} printed no version: {started.stderr[-500:]}")
