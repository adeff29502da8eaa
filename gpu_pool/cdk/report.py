"""Findings turned into what a synth shows: ConfigError for errors, CDK warnings otherwise."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from typing import Any, TypeVar, cast

from aws_cdk import Annotations
from constructs import Construct

from gpu_pool.cdk.arguments import bound_arguments, check_arguments
from gpu_pool.model.findings import Finding
from gpu_pool.settings import ConfigError

Init = TypeVar("Init", bound=Callable[..., None])


def report(scope: Construct, findings: Iterable[Finding]) -> None:
    """Raise ConfigError listing every error; attach each warning to `scope`."""
    findings = list(findings)
    errors = [f for f in findings if f.error]
    if errors:
        raise ConfigError("\n".join(str(f) for f in errors))
    warn(scope, findings)


def warn(scope: Construct, findings: Iterable[Finding]) -> None:
    """Attach each of `findings` to `scope` as a CDK warning with the id `gpu-pool:<rule id>`,
    which the CDK prints after it (`[ack: gpu-pool:GP-POOL-25]`) and an app can acknowledge it
    by (`Annotations.of(scope).acknowledge_warning(id)`)."""
    for finding in findings:
        Annotations.of(scope).add_warning_v2(f"gpu-pool:{finding.rule}", str(finding))


def located(scope: Construct) -> str:
    """How messages name a construct: `GpuNodePool 'Stack/Inference'`."""
    return f"{type(scope).__name__} '{scope.node.path}'"


def names_itself(init: Init) -> Init:
    """For a public construct's __init__: its arguments are checked against its signature
    first (arguments.py), and each line of a ConfigError it raises starts with the construct
    (`GpuNodePool 'Stack/Inference': pool.min_size: ...`), so with several pools the message
    says which one. `id=` is taken for `construct_id=`: aws-cdk-lib's own constructs spell it
    so in Python (`Bucket(scope=self, id="Logs")`)."""

    @functools.wraps(init)
    def wrapper(self: Construct, *args: Any, **kwargs: Any) -> None:
        if "id" in kwargs and "construct_id" not in kwargs and len(args) < 2:
            kwargs["construct_id"] = kwargs.pop("id")
        scope = args[0] if args else kwargs.get("scope")
        construct_id = args[1] if len(args) > 1 else kwargs.get("construct_id")
        try:
            check_arguments(init, bound_arguments(init, args, kwargs))
            init(self, *args, **kwargs)
        except ConfigError as err:
            where = f"{type(self).__name__} '{_path(scope, construct_id)}'"
            lines = [f"{where}: {line}" for line in str(err).splitlines()]
            raise ConfigError("\n".join(lines)) from None

    return cast(Init, wrapper)


def _path(scope: object, construct_id: object) -> str:
    """The path the construct gets (as much of it as the arguments give)."""
    above = scope.node.path if isinstance(scope, Construct) else ""
    return "/".join(str(p) for p in (above, construct_id) if p)
