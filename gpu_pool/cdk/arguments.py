"""What every public construct checks of its arguments before it builds anything: their types
(against its own signature, so no check can drift from what is documented) and what the cluster
must offer. Each problem is one ConfigError line naming the argument and what would be valid,
instead of a Python or jsii traceback from deep inside aws-cdk-lib.

A dict is refused where a settings model is expected, not converted: the signatures stay the
typed ones mypy checks, and `PoolSettings(**that_dict)` gives the same one-line messages.
"""

from __future__ import annotations

import difflib
import inspect
import types
import typing
from collections.abc import Callable, Mapping, Sequence

from aws_cdk import aws_eks_v2 as eks
from pydantic import BaseModel
from typing_extensions import is_protocol

from gpu_pool.settings import ConfigError

# What a caller writes for these types, beyond their names.
_HOW_TO_GET = {
    eks.ICluster: "aws_eks_v2.ICluster (an aws_eks_v2.Cluster, or one imported with "
    "aws_eks_v2.Cluster.from_cluster_attributes)",
}


def bound_arguments(
    init: Callable[..., None], args: Sequence[object], kwargs: Mapping[str, object]
) -> dict[str, object]:
    """The arguments of a call of `init` (a construct's __init__, `self` left out) by name, or
    ConfigError, one line per problem, where Python would raise a bare TypeError: more
    arguments by position than it takes, a keyword it does not have (with the closest one it
    has), a required one missing. Each line names what would be valid."""
    parameters = list(inspect.signature(init).parameters.values())[1:]
    by_position = [
        p.name
        for p in parameters
        if p.kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    ]
    by_keyword = [p.name for p in parameters if p.kind is inspect.Parameter.KEYWORD_ONLY]
    names = [p.name for p in parameters]
    listed = f"{' and '.join(by_position)} by position, then by keyword {', '.join(by_keyword)}"
    problems = []
    if len(args) > len(by_position):
        problems.append(f"{len(args)} arguments by position; it takes {listed}")
    for name in kwargs:
        if name not in names:
            close = difflib.get_close_matches(name, names, n=1)
            hint = f" (did you mean {close[0]}?)" if close else ""
            problems.append(f"{name}: not an argument of it{hint}; it takes {listed}")
    given = {*by_position[: len(args)], *kwargs}
    hints = typing.get_type_hints(init)
    problems += [
        f"{p.name}: missing; expected {_expected(hints[p.name])}"
        for p in parameters
        if p.default is inspect.Parameter.empty and p.name not in given
    ]
    if problems:
        raise ConfigError("\n".join(problems))
    return {**dict(zip(by_position, args, strict=False)), **kwargs}


def check_arguments(
    init: Callable[..., None], arguments: Mapping[str, object], owner: str = ""
) -> None:
    """Raise ConfigError, one line per argument (after `owner`, if given), for each of
    `arguments` whose value is not of the type `init`'s signature gives it."""
    hints = typing.get_type_hints(init)
    prefix = f"{owner}: " if owner else ""
    wrong = [
        f"{prefix}{name}: got {_described(value)}; expected {_expected(hints[name])}"
        for name, value in arguments.items()
        if name in hints and not _conforms(value, hints[name])
    ]
    if wrong:
        raise ConfigError("\n".join(wrong))


def require_kubectl(cluster: eks.ICluster, installs: str) -> None:
    """Raise ConfigError unless `cluster` has a kubectl provider, which aws-cdk-lib's charts
    and manifests run through (`installs`: what the construct applies with it)."""
    if cluster.kubectl_provider is not None:
        return
    if isinstance(cluster, eks.Cluster):
        how = (
            "create it with kubectl_provider_options=aws_eks_v2.KubectlProviderOptions("
            "kubectl_layer=...), the lambda_layer_kubectl layer of its Kubernetes minor "
            "(e.g. aws_cdk.lambda_layer_kubectl_v35.KubectlV35Layer)"
        )
    else:
        how = (
            "import it with kubectl_provider=aws_eks_v2.KubectlProvider."
            "from_kubectl_provider_attributes(...) (the service token of its kubectl handler "
            "function and the role that handler runs as)"
        )
    raise ConfigError(f"cluster: has no kubectl provider, which installs {installs}: {how}")


def auto_mode_compute(cluster: eks.ICluster) -> bool | None:
    """Whether the cluster has EKS Auto Mode compute (its AWS::EKS::Cluster's
    ComputeConfig.Enabled); None where the synth cannot see it: an imported cluster, or a
    ComputeConfig or Enabled given as a token (known at deploy time only)."""
    resource = cluster.node.default_child if isinstance(cluster, eks.Cluster) else None
    if not isinstance(resource, eks.CfnCluster):
        return None
    config = resource.compute_config
    if config is None:
        return False
    if not isinstance(config, eks.CfnCluster.ComputeConfigProperty):
        return None
    if not isinstance(config.enabled, (bool, type(None))):
        return None
    return config.enabled is True


def _conforms(value: object, hint: object) -> bool:
    if hint is None or hint is type(None):
        return value is None
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        return any(_conforms(value, option) for option in typing.get_args(hint))
    if origin is Sequence or origin is list:
        (item,) = typing.get_args(hint)
        return (
            isinstance(value, Sequence)
            and not isinstance(value, str)
            and all(_conforms(v, item) for v in value)
        )
    if origin is Mapping or origin is dict:
        key, item = typing.get_args(hint)
        return isinstance(value, Mapping) and all(
            _conforms(k, key) and _conforms(v, item) for k, v in value.items()
        )
    if not isinstance(hint, type):
        raise TypeError(f"no argument check for {hint!r}")  # a signature this module must learn
    if _is_jsii_interface(hint):
        return _implements(value, hint)
    return isinstance(value, hint)


def _is_jsii_interface(hint: type) -> bool:
    """jsii generates each interface as a typing.Protocol with a proxy class, which isinstance
    cannot check."""
    return is_protocol(hint) and hasattr(hint, "__jsii_proxy_class__")


def _implements(value: object, interface: type) -> bool:
    """Whether `value` implements the jsii `interface`: its class declares it
    (`jsii.implements`, as aws_eks_v2.Cluster does), or it is the interface's proxy. An object
    aws-cdk-lib made (an imported cluster, a subnet from `vpc.private_subnets`) reaches Python
    as a jsii InterfaceDynamicProxy over one proxy per interface it implements."""
    proxy = interface.__jsii_proxy_class__()  # type: ignore[attr-defined]
    delegates = _delegates(value) or ([value] if hasattr(value, "__dict__") else [])
    return any(isinstance(d, proxy) or _declares(type(d), interface) for d in delegates)


def _delegates(value: object) -> list[object]:
    """The per-interface proxies of an object aws-cdk-lib made (jsii's InterfaceDynamicProxy
    keeps them in `_delegates`); empty for any other value."""
    found = value.__dict__.get("_delegates") if hasattr(value, "__dict__") else None
    return list(found) if found else []


def _declares(cls: type, interface: type) -> bool:
    """Whether the jsii class `cls` (or a base) declares `interface` or one extending it."""
    declared = (i for c in cls.__mro__ for i in c.__dict__.get("__jsii_ifaces__", ()))
    return any(interface in i.__mro__ for i in declared)


def _described(value: object) -> str:
    """How a message shows a wrong value: short literals as written, objects by their type."""
    if isinstance(value, (type(None), bool, int, float, str, Mapping, list, tuple)):
        written = repr(value)
        if len(written) <= 60:
            return written
    delegates = _delegates(value)
    if delegates:
        # Made by aws-cdk-lib: name the interfaces (`aws_ec2.ISubnet`), not their bases.
        names = [_type_name(type(d)) for d in delegates]
        return "an object of " + " and ".join(
            [n for n in names if n.rsplit(".", 1)[-1][:2].isupper()] or names
        )
    return _with_article(_type_name(type(value)))


def _with_article(name: str) -> str:
    return f"{'an' if name[0].lower() in 'aeiou' else 'a'} {name}"


def _expected(hint: object) -> str:
    """What would be valid, in the words a caller writes it."""
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        options = [o for o in typing.get_args(hint) if o is not type(None)]
        # eks.Cluster is an eks.ICluster: name the interface once.
        options = [o for o in options if not any(o is not p and _subsumes(p, o) for p in options)]
        return " or ".join(_expected(o) for o in options)
    if origin in (Sequence, list):
        return f"a list of {_expected(typing.get_args(hint)[0])}"
    if origin in (Mapping, dict):
        key, item = (_expected(a) for a in typing.get_args(hint))
        return f"a dict of {key} to {item}"
    assert isinstance(hint, type)
    if hint in _HOW_TO_GET:
        return _HOW_TO_GET[hint]
    if issubclass(hint, BaseModel):
        return f"{hint.__name__} (for a dict of settings: {hint.__name__}(**that_dict))"
    return _type_name(hint)


def _type_name(cls: type) -> str:
    """`aws_eks.Cluster` for aws-cdk-lib's (the module users import it from), a class's own
    name otherwise (a gpu-pool construct, a Python builtin)."""
    jsii_type = cls.__dict__.get("__jsii_type__")
    if isinstance(jsii_type, str):
        return jsii_type.removeprefix("aws-cdk-lib.")
    return cls.__name__


def _subsumes(general: object, specific: object) -> bool:
    """Whether every `specific` is a `general` (a jsii class declaring the interface)."""
    if not (isinstance(general, type) and isinstance(specific, type)):
        return False
    if _is_jsii_interface(general):
        return _declares(specific, general)
    return issubclass(specific, general)
