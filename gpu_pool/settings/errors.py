"""Settings errors: ConfigError, and validation problems turned into one line per setting.

Every message names the setting by its dotted path, says what is wrong and what would be valid;
no pydantic wording or regular expression reaches a user.
"""

from __future__ import annotations

import difflib
from typing import Any

from pydantic import BaseModel, Field, ValidationError


class ConfigError(ValueError):
    """A mistake in the user's settings; its message is meant to be shown as it is."""


# What each settings pattern means, for messages: "'t3.mediun' is not an EC2 instance type ...".
_PATTERN_HINTS: dict[str, str] = {}


def matching(regex: str, valid: str, **field: Any) -> Any:
    """A pydantic Field with `pattern=regex`, whose mismatch message says `valid`."""
    _PATTERN_HINTS[regex] = valid
    return Field(pattern=regex, **field)


def describe_validation_error(err: ValidationError, model: type[BaseModel]) -> str:
    """One line per problem: the setting's dotted path, what is wrong, what would be valid."""
    lines = []
    for problem in err.errors():
        # A mapping key's own problem is located at `<key>.[key]`: name the key.
        path = ".".join(str(p) for p in problem["loc"]).removesuffix(".[key]")
        if problem["type"] == "extra_forbidden":
            lines.append(f"{path}: unknown setting{_did_you_mean(problem['loc'], model)}")
        elif problem["type"] == "missing":
            lines.append(f"{path}: required setting is missing")
        elif problem["type"] == "string_pattern_mismatch":
            hint = _PATTERN_HINTS[problem["ctx"]["pattern"]]
            lines.append(f"{path}: {problem.get('input')!r} is not {hint}")
        elif problem["type"] == "value_error" and isinstance(problem["ctx"]["error"], ConfigError):
            # A nested settings model's own lines (its __init__ ran): each names its setting.
            message = str(problem["ctx"]["error"])
            lines += [f"{path}.{line}" if path else line for line in message.splitlines()]
        elif problem["type"] == "value_error":
            # Our own validators' messages, complete as they are.
            message = str(problem["ctx"]["error"])
            lines.append(f"{path}: {message}" if path else message)
        else:
            given = problem.get("input")
            lines.append(f"{path}: {problem['msg']} (got {given!r})")
    return "\n".join(lines)


def _did_you_mean(loc: tuple[Any, ...], model: type[BaseModel]) -> str:
    """Suggest the closest known key at the unknown key's level."""
    current: type[BaseModel] | None = model
    for part in loc[:-1]:
        field = current.model_fields.get(part) if current is not None else None
        annotation = getattr(field, "annotation", None)
        candidates = getattr(annotation, "__args__", (annotation,))
        current = next(
            (c for c in candidates if isinstance(c, type) and issubclass(c, BaseModel)), None
        )
    if current is None:
        return ""
    known = list(current.model_fields)
    close = difflib.get_close_matches(str(loc[-1]), known, n=1)
    hint = f"; did you mean '{close[0]}'?" if close else ""
    return f"{hint} (valid: {', '.join(known)})"
