"""Synth cost of gpu-pool: the default app against a bare reference, and growth with node
groups and with pools.

Run with `./dev bench`. Prints three tables; targets: default app within 1.3x of the reference
doing the same work (the reference validated by cdk-nag's AwsSolutions pack, as the app is), the
apps timed in turn, A B C A B C, so drift on the machine hits all alike; the ratio to the bare
reference (no cdk-nag) is printed beside it, with no target. At most 6
CloudFormation resources per extra node group, 24 groups and 8 pools far below
CloudFormation's 500-resource and 1 MB template limits; then the training example of
docs/training.md (a Capacity Block p5 pool with EFA and its on-demand fallback). Exits 1 if a
target is missed.
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RUNS = 5
GROWTH = [1, 4, 12, 24]
POOLS = [1, 3, 8]
# One node group per entry; no zones, so the VPC is the same in every row.
TYPES = [
    f"{family}.{size}"
    for family in ("g5", "g6", "g6e")
    for size in (
        "xlarge",
        "2xlarge",
        "4xlarge",
        "8xlarge",
        "12xlarge",
        "16xlarge",
        "24xlarge",
        "48xlarge",
    )
]


# docs/training.md's example: a Capacity Block p5.48xlarge pool with EFA and its on-demand
# fallback for the same workload.
TRAINING_EXAMPLE = {
    "account": "123456789012",
    "region": "us-east-1",
    "pools": {
        "train": {
            "instance_types": ["p5.48xlarge"],
            "zones": ["us-east-1a"],
            "efa": True,
            "labels": {"workload": "training"},
            "max_size": 4,
            "capacity_reservation": {"type": "capacity-block", "id": "cr-0123456789abcdef0"},
        },
        "train-od": {
            "instance_types": ["p5.48xlarge"],
            "zones": ["us-east-1a"],
            "efa": True,
            "labels": {"workload": "training"},
            "max_size": 2,
        },
    },
}


def progress(message: str) -> None:
    print(f"... {message}", file=sys.stderr, flush=True)


def timed_app(
    script: str, context: dict | None = None, extra_env: dict[str, str] | None = None
) -> tuple[float, Path]:
    """Wall time of one `python <script>` synth as the CDK CLI runs it, and its output dir."""
    out = Path(tempfile.mkdtemp(prefix="bench-"))
    env = {**os.environ, **(extra_env or {}), "CDK_OUTDIR": str(out)}
    if context is not None:
        env["CDK_CONTEXT_JSON"] = json.dumps(context)
    start = time.perf_counter()
    subprocess.run([sys.executable, script], cwd=ROOT, env=env, check=True, capture_output=True)
    return time.perf_counter() - start, out


def interleaved_medians(
    apps: list[tuple[str, dict, dict[str, str]]],
) -> list[tuple[float, Path]]:
    """Median wall time of each app (script, context, environment) over RUNS rounds, one run of
    each app per round."""
    times: list[list[float]] = [[] for _ in apps]
    outs = [Path() for _ in apps]
    for run in range(RUNS):
        for index, (script, context, extra_env) in enumerate(apps):
            progress(f"round {run + 1}/{RUNS}: {script} {extra_env or ''}")
            seconds, outs[index] = timed_app(script, context, extra_env)
            times[index].append(seconds)
    return [(statistics.median(t), out) for t, out in zip(times, outs, strict=True)]


def template_stats(out: Path) -> tuple[int, int]:
    (template,) = out.glob("*.template.json")
    return len(json.loads(template.read_text())["Resources"]), template.stat().st_size


def app_context(settings: dict | None = None) -> dict:
    context = json.loads((ROOT / "cdk.json").read_text())["context"]
    if settings is not None:
        context["gpu-pool"] = settings
    return context


def main() -> int:
    failures = []
    print(
        f"gpu-pool synth benchmark, {date.today()}, {platform.machine()}, "
        f"{os.cpu_count()} cores, Python {platform.python_version()}, median of {RUNS} runs\n"
    )

    (same_s, same_out), (bare_s, bare_out), (default_s, default_out) = interleaved_medians(
        [
            ("tools/reference_app.py", app_context(), {"REFERENCE_NAG": "1"}),
            ("tools/reference_app.py", app_context(), {}),
            ("app.py", app_context(), {}),
        ]
    )
    print("| app | synth wall time | resources | template |")
    print("|---|---|---|---|")
    for name, seconds, out in (
        ("reference, with cdk-nag AwsSolutions (same work)", same_s, same_out),
        ("bare reference (aws-cdk-lib only)", bare_s, bare_out),
        ("gpu-pool default app (cdk-nag AwsSolutions and GpuPool)", default_s, default_out),
    ):
        count, size = template_stats(out)
        print(f"| {name} | {seconds:.2f} s | {count} | {size / 1024:.0f} KiB |")
    same_work = default_s / same_s
    print(f"\ndefault / reference with cdk-nag: {same_work:.2f}x (target <= 1.30x)")
    print(f"default / bare reference: {default_s / bare_s:.2f}x (no target)\n")
    if same_work > 1.3:
        failures.append(f"default app synth is {same_work:.2f}x the same-work reference")

    print("| node groups | resources | per extra group | template | synth wall time |")
    print("|---|---|---|---|---|")
    previous: tuple[int, int] | None = None
    for groups in GROWTH:
        pool = {"instance_types": TYPES[:groups]}
        progress(f"{groups} node groups")
        seconds, out = timed_app("app.py", app_context({"pool": pool}))
        count, size = template_stats(out)
        per_group = (
            "-" if previous is None else f"{(count - previous[1]) / (groups - previous[0]):.1f}"
        )
        print(f"| {groups} | {count} | {per_group} | {size / 1024:.0f} KiB | {seconds:.2f} s |")
        if previous is not None and (count - previous[1]) > 6 * (groups - previous[0]):
            failures.append(f"{per_group} resources per extra node group at {groups}")
        if groups == GROWTH[-1] and (count > 250 or size > 512 * 1024):
            failures.append(f"{groups} groups: {count} resources, {size} bytes")
        previous = (groups, count)

    failures += _pools_table()
    failures += training_row()
    for failure in failures:
        print(f"TARGET MISSED: {failure}")
    return 1 if failures else 0


def _pools_table() -> list[str]:
    """Growth with pools: each pool one node group, its role, tag writers and device plugin."""
    print("\n| pools | resources | per extra pool | template | synth wall time |")
    print("|---|---|---|---|---|")
    failures = []
    previous: tuple[int, int] | None = None
    for pools in POOLS:
        settings = {"pools": {f"pool{i}": {"instance_types": [TYPES[i]]} for i in range(pools)}}
        progress(f"{pools} pools")
        seconds, out = timed_app("app.py", app_context(settings))
        count, size = template_stats(out)
        per_pool = (
            "-" if previous is None else f"{(count - previous[1]) / (pools - previous[0]):.1f}"
        )
        print(f"| {pools} | {count} | {per_pool} | {size / 1024:.0f} KiB | {seconds:.2f} s |")
        if pools == POOLS[-1] and (count > 250 or size > 512 * 1024):
            failures.append(f"{pools} pools: {count} resources, {size} bytes")
        previous = (pools, count)
    return failures


def training_row() -> list[str]:
    """The training example: its resources, template size and synth time (one run)."""
    print("\n| training example | resources | template | synth wall time |")
    print("|---|---|---|---|")
    progress("training example")
    seconds, out = timed_app("app.py", app_context(TRAINING_EXAMPLE))
    count, size = template_stats(out)
    print(f"| 2 pools, Capacity Block + EFA | {count} | {size / 1024:.0f} KiB | {seconds:.2f} s |")
    if count > 250 or size > 512 * 1024:
        return [f"training example: {count} resources, {size} bytes"]
    return []


if __name__ == "__main__":
    sys.exit(main())
