"""examples/pipeline's cloud assembly, synthesized (with cdk-nag) once per session: the pipeline
tests and the IAM simulation read the same one."""

from __future__ import annotations

import atexit
import json
import runpy
import shutil
import tempfile
from functools import cache
from pathlib import Path
from typing import Any

import aws_cdk as cdk

from tests.support.paths import ROOT

EXAMPLE = ROOT / "examples" / "pipeline" / "app.py"


@cache
def example_pipeline_out() -> Path:
    """The example pipeline app's cloud assembly directory."""
    out = Path(tempfile.mkdtemp(prefix="gpu-pool-pipeline-"))
    atexit.register(shutil.rmtree, out, ignore_errors=True)
    app = cdk.App(outdir=str(out))
    runpy.run_path(str(EXAMPLE))["build"](app)
    app.synth()
    return out


def example_pipeline_template() -> dict[str, Any]:
    """The pipeline stack's template."""
    path = example_pipeline_out() / "GpuPoolPipeline.template.json"
    template: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return template


def example_cluster_template(stack_name: str) -> dict[str, Any]:
    """The template of the cluster stack `stack_name` one of the pipeline's stages deploys."""
    out = example_pipeline_out()
    for stage in sorted(out.glob("assembly-GpuPoolPipeline-*")):
        manifest = json.loads((stage / "manifest.json").read_text(encoding="utf-8"))
        for artifact in manifest["artifacts"].values():
            properties = artifact.get("properties", {})
            if artifact["type"] == "aws:cloudformation:stack" and (
                properties["stackName"] == stack_name
            ):
                path = stage / properties["templateFile"]
                template: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
                return template
    raise LookupError(f"no cluster stack {stack_name} in examples/pipeline")
