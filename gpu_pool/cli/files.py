"""Files the command reads as given on its command line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from gpu_pool.cli.errors import CliError


def json_object(path: str, prefix: str, what: str) -> dict[str, Any]:
    """The JSON object in the file; a file that cannot be read or is not one is a one-line
    CliError naming it and the problem, not a traceback."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as err:
        raise CliError(f"{prefix}: cannot read '{path}': {err.strerror}") from None
    except UnicodeDecodeError:
        raise CliError(f"{prefix}: '{path}' is not UTF-8 text; save it as UTF-8 JSON") from None
    except json.JSONDecodeError as err:
        raise CliError(
            f"{prefix}: '{path}' is not valid JSON: {err.msg} (line {err.lineno}, column "
            f"{err.colno})"
        ) from None
    if not isinstance(data, dict):
        raise CliError(f"{prefix}: '{path}' is not {what}")
    return data
