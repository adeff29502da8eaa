"""What a settings field's type holds, read from its annotation: the one walk over the models'
types that error messages (settings/errors.py) and the generated reference
(settings/reference.py) share, so the two cannot read a field differently."""

from __future__ import annotations

import types
from typing import Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel


def strip_optional(annotation: Any) -> Any:
    """`X` for an optional `X | None`; any other type as it is."""
    args = [a for a in get_args(annotation) if a is not type(None)]
    if get_origin(annotation) in (Union, types.UnionType) and len(args) == 1:
        return args[0]
    return annotation


def container(annotation: Any) -> type | None:
    """`dict` or `list` for a field holding a mapping or a list (optional or not), else None."""
    origin = get_origin(strip_optional(annotation))
    return origin if origin in (dict, list) else None


def is_mapping(annotation: Any) -> bool:
    """Whether a field's type is a mapping (a `dict`, optional or not)."""
    return container(annotation) is dict


def nested_models(annotation: Any) -> list[type[BaseModel]]:
    """The settings models in a field's type: itself, or in an Optional, union, list or mapping,
    in the order the type names them."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [m for arg in get_args(annotation) for m in nested_models(arg)]


def nested_model(annotation: Any) -> type[BaseModel] | None:
    """The first settings model in a field's type (see nested_models), or None."""
    return next(iter(nested_models(annotation)), None)


def literal_values(annotation: Any) -> list[Any]:
    """Every value a `Literal` in a field's type allows (an optional one's included)."""
    if get_origin(annotation) is Literal:
        return list(get_args(annotation))
    return [v for arg in get_args(annotation) for v in literal_values(arg)]
