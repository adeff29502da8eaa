"""Where the app's settings come from: cdk.json context, and a config file merged over it.

The app reads the context key `gpu-pool`, then an optional file given with
`cdk synth -c config=FILE` (YAML or JSON, same keys, merged over the context). Files are read
strictly: UTF-8 (or UTF-16 with a byte-order mark), no duplicate keys, a mapping at the top.
Several clusters (a directory of such files, or a fleet file) are fleet.py's, built on these.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from gpu_pool.model.findings import Finding, warning
from gpu_pool.settings.errors import ConfigError, describe_validation_error
from gpu_pool.settings.models import AppSettings

CONTEXT_KEY = "gpu-pool"
# The context key of the settings file or folder: `-c config=FILE`.
CONFIG_KEY = "config"
# The top-level key that makes a config file a fleet file (AppSettings has no such key).
FLEET_KEY = "clusters"


def check_context_keys(keys: Iterable[str]) -> None:
    """Refuse a context key a letter or two off gpu-pool's own (`-c confg=FILE`): the CDK CLI
    passes any key through, so the app would synthesize its defaults as if no file had been
    given. Keys with a colon are namespaced (CDK's own, gpu-pool's lookups) and pass."""
    ours = (CONFIG_KEY, CONTEXT_KEY)
    for key in keys:
        if ":" in key or key in ours:
            continue
        close = difflib.get_close_matches(key, ours, n=1, cutoff=0.75)
        if close:
            raise ConfigError(
                f"-c {key}: unknown context key; did you mean '{close[0]}'? (gpu-pool reads "
                f"-c {CONFIG_KEY}=FILE or DIR, and the '{CONTEXT_KEY}' key of cdk.json)"
            )


def load_settings(context: object, config_file: str | None) -> AppSettings:
    """Build AppSettings from the context value, with a config file's keys merged over it."""
    return load_settings_with_warnings(context, config_file)[0]


def load_settings_with_warnings(
    context: object, config_file: str | None
) -> tuple[AppSettings, list[Finding]]:
    """`load_settings`, plus what the files say without saying it: a config file that holds no
    settings (empty, or every line commented out) is almost always the wrong file or a mistake,
    and would silently deploy the defaults. A directory or a fleet file (several clusters) is
    refused with a pointer to `load_fleet` (gpu_pool/settings/fleet.py)."""
    base = context_settings(context)
    if not config_file:
        return validated(base), []
    if Path(config_file).is_dir():
        raise ConfigError(
            f"config: '{config_file}' is a directory of cluster files (a fleet): read it with "
            "load_fleet"
        )
    override = read_config_file(config_file)
    if FLEET_KEY in override:
        raise ConfigError(
            f"config: '{config_file}' is a fleet file (a top-level `{FLEET_KEY}:`): read it "
            "with load_fleet"
        )
    return file_settings(base, config_file, override)


def file_settings(
    base: dict[str, Any], config_file: str, override: dict[str, Any]
) -> tuple[AppSettings, list[Finding]]:
    """The settings of one cluster's file (`override`, read from `config_file`) over `base`."""
    return validated(merge_settings(base, override)), empty_file_warning(config_file, override)


def context_settings(context: object) -> dict[str, Any]:
    """The cdk.json context's settings (none: an empty mapping)."""
    if context is None:
        return {}
    if not isinstance(context, dict):
        raise ConfigError(f"context '{CONTEXT_KEY}' must be a mapping of settings")
    return dict(context)


def empty_file_warning(config_file: str, override: dict[str, Any]) -> list[Finding]:
    """GP-CONFIG-01 for a file that holds no settings, else nothing."""
    if override:
        return []
    return [
        warning(
            "GP-CONFIG-01",
            "config",
            f"'{config_file}' holds no settings (empty, or every line commented out): "
            "the cdk.json context and the defaults apply; is it the right file?",
        )
    ]


def merge_settings(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    """`override`'s settings merged over `base`'s (deep_merge). A file that describes its pools
    in one form replaces the base's pools in the other (cdk.json carries the one-pool `pool`; a
    cluster's file may list `pools`)."""
    base = dict(base)
    for form, other_form in (("pool", "pools"), ("pools", "pool")):
        if form in override:
            base.pop(other_form, None)
    return deep_merge(base, override)


def validated(merged: dict[str, Any]) -> AppSettings:
    """AppSettings of the merged settings; a mistake is one ConfigError, a line per setting."""
    try:
        return AppSettings.model_validate(merged)
    except ValidationError as err:
        raise ConfigError(describe_validation_error(err, AppSettings)) from None


def read_config_file(path_text: str) -> dict[str, Any]:
    """The mapping a YAML or JSON settings file holds ({} when it holds nothing); anything
    else is a ConfigError naming the file."""
    path = Path(path_text)
    if not path.is_file():
        raise ConfigError(f"config: file '{path_text}' does not exist")
    kind = "JSON" if path.suffix == ".json" else "YAML"
    try:
        text = _decode(path.read_bytes())
    except OSError as err:
        raise ConfigError(f"config: cannot read '{path_text}': {err.strerror}") from None
    except UnicodeDecodeError:
        raise ConfigError(
            f"config: '{path_text}' is not UTF-8 text (nor UTF-16 with a byte-order mark); save "
            f"it as UTF-8 {kind}"
        ) from None
    try:
        data = (
            json.loads(text, object_pairs_hook=_unique_json_keys)
            if kind == "JSON"
            # A SafeLoader subclass: no arbitrary Python objects.
            else yaml.load(text, Loader=_UniqueKeyLoader)
        )
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
        raise ConfigError(
            f"config: '{path_text}' is not valid YAML: {err.problem or err.context}{where}"
        ) from None
    except (json.JSONDecodeError, yaml.YAMLError, ValueError, RecursionError) as err:
        raise ConfigError(f"config: '{path_text}' is not valid {kind}: {_one_line(err)}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"config: '{path_text}' must hold a mapping of settings at the top")
    return data


def _decode(raw: bytes) -> str:
    """UTF-8 (a byte-order mark allowed), or UTF-16 with its byte-order mark (what Windows
    PowerShell 5 writes); NUL characters are never valid settings text."""
    if raw.startswith((b"\xff\xfe", b"\xfe\xff")):
        text = raw.decode("utf-16")
    else:
        text = raw.decode("utf-8-sig")
    if "\x00" in text:
        raise UnicodeDecodeError("utf-8", raw, 0, 1, "NUL character")
    return text


class _UniqueKeyLoader(yaml.SafeLoader):
    """YAML's safe loader, refusing a key given twice in one mapping (YAML would keep the last)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if isinstance(key, list | dict):
                continue  # unhashable: the settings validation names it
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None,
                    None,
                    f"'{key}' is set twice in one mapping; only the last would count: remove one",
                    key_node.start_mark,
                )
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def _unique_json_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    keys = [key for key, _ in pairs]
    for key in keys:
        if keys.count(key) > 1:
            raise ValueError(f"'{key}' is set twice in one object; only the last would count")
    return dict(pairs)


def deep_merge(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    """Helm's and our config's merge: mappings merge key by key, anything else replaces."""
    result = dict(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(result.get(key), dict):
            result[key] = deep_merge(result[key], value)
        else:
            result[key] = value
    return result


def _one_line(err: Exception) -> str:
    return " ".join(str(err).split())
