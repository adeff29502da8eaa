"""The real Karpenter controller, built from the Go module proxy for the e2e tests.

tests/e2e/components/karpenter/go.mod pins it (the release gpu-pool installs, its toolchain and
the one `replace` its build needs; go.sum holds the hashes). It is built the way a dependency is
built: `go build github.com/aws/karpenter-provider-aws/cmd/controller`, which loads only the
controller's packages (never `go mod tidy`, which would follow the tests of its packages). The
version is stamped as upstream's Makefile does (`-X sigs.k8s.io/karpenter/pkg/operator.Version`),
so the controller reports it; about 5 minutes cold on 2 cores, then cached under the e2e cache
beside the other components, keyed by go.mod, go.sum, the toolchain and the flags.
"""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
from pathlib import Path

from tests.e2e.harness.build import built_once, cache_root, go_environment

MODULE = Path(__file__).resolve().parent.parent / "components" / "karpenter"
PACKAGE = "github.com/aws/karpenter-provider-aws/cmd/controller"


def karpenter_version() -> str:
    """The pinned release, as go.mod requires it (1.15.0)."""
    text = (MODULE / "go.mod").read_text()
    (version,) = re.findall(r"^require github.com/aws/karpenter-provider-aws v(\S+)$", text, re.M)
    return version


def _toolchain() -> str:
    (toolchain,) = re.findall(r"^toolchain (\S+)$", (MODULE / "go.mod").read_text(), re.M)
    return toolchain


def _environment() -> dict[str, str]:
    # The toolchain go.mod names (fetched from the module proxy where the machine's is older).
    return {**go_environment(), "GOTOOLCHAIN": _toolchain()}


def _ldflags() -> str:
    return f"-s -w -X sigs.k8s.io/karpenter/pkg/operator.Version={karpenter_version()}"


def build_karpenter() -> Path:
    """The controller's binary, built first where the cache has none."""
    recipe = json.dumps([_ldflags(), _toolchain(), PACKAGE])
    digest = hashlib.sha256(recipe.encode())
    for name in ("go.mod", "go.sum"):
        digest.update((MODULE / name).read_bytes())
    binary = cache_root() / f"karpenter-{digest.hexdigest()[:16]}" / "karpenter-controller"
    return built_once(
        binary,
        f"the Karpenter {karpenter_version()} controller ({PACKAGE}, Go {_toolchain()})",
        "about 5 minutes on 2 cores",
        ["go", "build", "-trimpath", "-ldflags", _ldflags()],
        PACKAGE,
        cwd=MODULE,
        env=_environment(),
    )


def reported_version(binary: Path) -> str:
    """The release the binary was built from, as its own build information says (`go version
    -m`: the main module's version)."""
    described = subprocess.run(
        ["go", "version", "-m", str(binary)],
        check=True,
        capture_output=True,
        text=True,
        env=_environment(),
    ).stdout
    (module,) = re.findall(
        r"^\s+mod\s+github.com/aws/karpenter-provider-aws\s+(\S+)", described, re.M
    )
    return f"karpenter-provider-aws {module}"
