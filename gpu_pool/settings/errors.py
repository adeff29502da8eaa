"""Settings errors: ConfigError, and validation problems turned into one line per setting.

Every message names the setting by its dotted path, says what is wrong and what would be valid;
no pydantic wording or regular expression reaches a user.
"""

from __future__ import annotations

import difflib
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from gpu_pool.settings.fields import is_mapping, literal_values, nested_model


class ConfigError(ValueError):
    """A mistake in the user's settings; its message is meant to be shown as it is."""


# What each settings pattern means, for messages: "'t3.mediun' is not an EC2 instance type ...".
_PATTERN_HINTS: dict[str, str] = {}


def matching(regex: str, valid: str, **field: Any) -> Any:
    """A pydantic Field with `pattern=regex`, whose mismatch message says `valid`. A mismatch
    names only its pattern, so one pattern has one message: a second field that gives the same
    pattern another message is refused here, at import, instead of taking the first's."""
    # Runs only at import, while the models are defined: mutmut's trampolines never see it
    # (every pattern message test covers it), so its mutants would only be noise.
    known = _PATTERN_HINTS.setdefault(regex, valid)  # pragma: no mutate
    if known != valid:  # pragma: no mutate
        raise ValueError(f"pattern {regex!r} already says {known!r}, not {valid!r}")
    return Field(pattern=regex, **field)  # pragma: no mutate


def describe_validation_error(err: ValidationError, model: type[BaseModel]) -> str:
    """One line per problem: the setting's dotted path, what is wrong, what would be valid.

    A value that fits no member of a union (an instance-types entry: a type or a list of them)
    is one problem, not one per member: its line names every kind that would do."""
    lines: list[str] = []
    # A union's failed members, by path: (the kinds they expect, the value given).
    unions: dict[str, tuple[list[str], Any]] = {}
    for problem in err.errors():
        path, union_member = _setting_path(problem["loc"])
        if misplaced := _entry_setting_as_name(problem, model):
            # One line for the entry, not one per key under it: they are all misplaced.
            if f"{path}: {misplaced}" not in lines:
                lines.append(f"{path}: {misplaced}")
        elif problem["type"] == "extra_forbidden":
            lines.append(f"{path}: unknown setting{_did_you_mean(problem['loc'][-1], model)}")
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
        elif problem["type"] in ("model_type", "model_attributes_type"):
            given = problem.get("input")
            form = _expected_form(_model_at(model, problem["loc"]), given)
            lines.append(f"{path}: must be a mapping of settings{form} (got {given!r})")
        elif union_member and problem["type"] in _KINDS:
            if path not in unions:
                unions[path] = ([], problem.get("input"))
                lines.append(path)  # completed below, once every member's kind is known
            unions[path][0].append(_KINDS[problem["type"]])
        else:
            hint = _quote_hint(problem)
            lines.append(f"{path}: {_plain(problem)} (got {problem.get('input')!r}){hint}")
    described = []
    for line in lines:
        if line not in unions:
            described.append(line)
        elif not any(other.startswith((f"{line}[", f"{line}.")) for other in lines):
            # (A member that matched the value's kind but not its contents has its own, deeper
            # line: the value's kind was right, so the others' complaints are noise.)
            kinds, given = unions[line]
            described.append(f"{line}: must be {' or '.join(kinds)} (got {given!r})")
    return "\n".join(described)


# What each type error expects, in the words of the settings reference (docs/settings.md).
_KINDS = {
    "string_type": "text",
    "int_type": "a whole number",
    "bool_type": "true or false",
    "list_type": "a list",
    "dict_type": "a mapping (key: value)",
    "model_type": "a mapping of settings",
    "model_attributes_type": "a mapping of settings",
}


def _quote_hint(problem: Any) -> str:
    """A decimal number where text is expected is YAML reading a version (`1.30` is the number
    1.3): say to quote it. Empty for every other problem."""
    if problem["type"] != "string_type" or not isinstance(problem.get("input"), float):
        return ""
    return '; put it in quotes, e.g. "1.30": YAML reads an unquoted 1.30 as the number 1.3'


def _plain(problem: Any) -> str:
    """What pydantic's error means, in the reference's words (no pydantic wording)."""
    kind, ctx = problem["type"], problem.get("ctx", {})
    if kind in _KINDS:
        return f"must be {_KINDS[kind]}"
    if kind == "literal_error":
        return f"must be one of {ctx['expected']}"
    if kind in ("greater_than_equal", "less_than_equal"):
        bound = "at least" if kind == "greater_than_equal" else "at most"
        return f"must be {bound} {ctx['ge' if kind == 'greater_than_equal' else 'le']}"
    if kind in ("too_short", "string_too_short") and ctx["min_length"] == 1:
        return "must not be empty"
    if kind == "too_short":
        return f"needs at least {ctx['min_length']} entries"
    if kind in ("string_too_short", "string_too_long"):
        bound = "at least" if kind == "string_too_short" else "at most"
        limit = ctx["min_length" if kind == "string_too_short" else "max_length"]
        return f"must be {bound} {limit} characters long"
    return str(problem["msg"])


def _setting_path(loc: tuple[Any, ...]) -> tuple[str, bool]:
    """The dotted path users write (`pool.instance_types[0]`), and whether the last part of
    `loc` was a union member's tag (pydantic's `str`, `list[str]`) rather than a setting."""
    path = ""
    union_member = False
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
        elif part == "[key]":
            continue  # a mapping key's own problem: name the key
        elif _is_type_tag(part):
            union_member = True
        else:
            path += f".{part}" if path else str(part)
    return path, union_member


def _is_type_tag(part: str) -> bool:
    """pydantic locates a union member's error under the member's type: `str`, `list[str]`."""
    return part in ("str", "int", "bool") or "[" in part


def _did_you_mean(key: object, model: type[BaseModel]) -> str:
    """Suggest the closest of `model`'s own keys or, with none close, the level below where the
    key is a setting (a mis-indented `mode:` under a pool belongs under `sharing`). The unknown
    key is always `model`'s own: a nested settings model describes its own problems (the
    `_Settings.__init__` of settings/base.py), and its lines reach its parent already
    complete."""
    known = list(model.model_fields)
    close = difflib.get_close_matches(str(key), known, n=1)
    if close:
        hint = f"; did you mean '{close[0]}'?"
    else:
        below = [
            f"{name}.{'<name>.' if is_mapping(field.annotation) else ''}{key}"
            for name, field in model.model_fields.items()
            if (nested := nested_model(field.annotation)) and key in nested.model_fields
        ]
        hint = f"; it is a setting one level down: indent it as {' or '.join(below)}"
        hint = hint if below else ""
    return f"{hint} (valid: {', '.join(known)})"


def _entry_setting_as_name(problem: Any, model: type[BaseModel]) -> str | None:
    """A setting of every entry of a mapping (`pools: {<name>: settings}`) indented one level too
    little reads as an entry's name: `pools.sharing.mode` is a pool named `sharing`. Say where
    it belongs instead of listing its keys as unknown pool settings; but only when what stands
    under that name fits the setting (not a mapping of settings, or only keys of the setting's
    own), since a pool may well be named `karpenter` and hold a mistake of its own."""
    loc = problem["loc"]
    if len(loc) < 2 or not isinstance(loc[0], str) or loc[0] not in model.model_fields:
        return None
    annotation = model.model_fields[loc[0]].annotation
    entry = nested_model(annotation)
    if not is_mapping(annotation) or entry is None or loc[1] not in entry.model_fields:
        return None
    keys: list[str] = []
    if problem["type"] == "value_error" and isinstance(problem["ctx"]["error"], ConfigError):
        lines = str(problem["ctx"]["error"]).splitlines()
        if not all(": unknown setting" in line for line in lines):
            return None
        keys = [line.split(":", 1)[0] for line in lines]
    elif problem["type"] == "extra_forbidden" and len(loc) == 3:
        keys = [str(loc[2])]
    elif problem["type"] not in ("model_type", "model_attributes_type") or len(loc) != 2:
        return None
    own = nested_model(entry.model_fields[loc[1]].annotation)
    if own is not None and not all(key in own.model_fields for key in keys):
        return None
    return (
        f"'{loc[1]}' is read as the name of an entry of {loc[0]}, but it is a setting of each "
        f"entry: indent it under one, as {loc[0]}.<name>.{loc[1]}"
    )


def _model_at(model: type[BaseModel], loc: tuple[Any, ...]) -> type[BaseModel] | None:
    """The settings model a location names (`pool.taints[0]`: Taint), following fields, list
    items and mapping values."""
    current: type[BaseModel] | None = model
    entry_name_next = False
    for part in loc:
        if current is None:
            return None
        if isinstance(part, int) or part == "[key]" or _is_type_tag(str(part)):
            continue
        if entry_name_next:  # a mapping entry's name: its value's model is already current
            entry_name_next = False
            continue
        field = current.model_fields.get(str(part))
        if field is None:
            return None
        current = nested_model(field.annotation)
        entry_name_next = is_mapping(field.annotation)
    return current


def _expected_form(model: type[BaseModel] | None, given: Any) -> str:
    """What a mapping of `model`'s settings looks like, for a type error: a text that is one of
    a setting's values becomes that setting (`metrics: cloudwatch` -> `{gpu: cloudwatch}`);
    otherwise its required keys, or its first ones."""
    if model is None:
        return ""
    for name, field in model.model_fields.items():
        if isinstance(given, str) and given in literal_values(field.annotation):
            return f", such as {{{name}: {given}}}"
    required = [n for n, f in model.model_fields.items() if f.is_required()]
    keys = required or list(model.model_fields)[:3]
    more = ", ..." if len(keys) < len(model.model_fields) else ""
    return f", such as {{{', '.join(f'{k}: ...' for k in keys)}{more}}}"
