"""A vendored fixture is the upstream file its README names (#48 item 4: the node group schema's
README named cfn-lint 1.51.0, which does not have the file; the pin and the file are 1.58.0's)."""

from __future__ import annotations

import os
import re
import subprocess
import zipfile
from pathlib import Path

import cfnlint
import pytest

from tests.support.paths import FIXTURES, ROOT

KARPENTER_MODULE = "github.com/aws/karpenter-provider-aws"


def test_the_node_group_schema_is_the_pinned_cfn_lint_s_file_its_readme_names():
    readme = (FIXTURES / "eks-nodegroup-schema" / "README.md").read_text()
    (pin,) = re.findall(
        r"^cfn-lint==(\S+)$", (ROOT / "requirements-dev.txt").read_text(), re.MULTILINE
    )
    assert set(re.findall(r"cfn-lint[= ]=?(\d+\.\d+\.\d+)", readme)) == {pin}
    (named,) = set(re.findall(r"`(cfnlint/data/schemas/resources/\w+\.json)`", readme))
    shipped = Path(cfnlint.__file__).parent.parent / named
    vendored = FIXTURES / "eks-nodegroup-schema" / "aws-eks-nodegroup.json"
    assert shipped.read_bytes() == vendored.read_bytes()


def _module_zip(version: str) -> Path | None:
    """The Go module cache's zip of Karpenter's module at `version`, where this machine has it."""
    try:
        cache = subprocess.run(
            ["go", "env", "GOMODCACHE"], capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        cache = os.path.expanduser("~/go/pkg/mod")
    path = Path(cache, "cache", "download", KARPENTER_MODULE, "@v", f"{version}.zip")
    return path if path.is_file() else None


def test_the_karpenter_values_differ_from_the_module_s_copy_only_where_the_readme_says():
    """The v1.15.0 tag precedes the release commit that sets the controller image: the image's
    tag and digest are the only lines the README says differ, and it names both copies'."""
    module = _module_zip("v1.15.0")
    if module is None:
        pytest.skip(f"the Go module cache has no {KARPENTER_MODULE}@v1.15.0")
    with zipfile.ZipFile(module) as archive:
        upstream = archive.read(f"{KARPENTER_MODULE}@v1.15.0/charts/karpenter/values.yaml")
    folder = FIXTURES / "karpenter-chart-1.15.0"
    vendored = (folder / "values.yaml").read_bytes()
    theirs, ours = upstream.decode().splitlines(), vendored.decode().splitlines()
    assert len(theirs) == len(ours)
    differing = [(a.strip(), b.strip()) for a, b in zip(theirs, ours, strict=True) if a != b]
    readme = " ".join((folder / "README.md").read_text().split())
    assert [a.split(":", 1)[0] for a, _ in differing] == ["tag", "digest"]
    for theirs_line, ours_line in differing:
        assert f"`{theirs_line}`" in readme
        assert f"`{ours_line}`" in readme
