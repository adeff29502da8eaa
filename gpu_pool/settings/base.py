"""The base of every settings model: unknown keys refused, values frozen and strictly typed, and
one ConfigError naming each wrong setting."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from gpu_pool.settings.errors import ConfigError, describe_validation_error


class _Settings(BaseModel):
    # A string right after a field is its description (use_attribute_docstrings): the docs
    # settings reference is generated from them.
    model_config = ConfigDict(
        extra="forbid", frozen=True, strict=True, use_attribute_docstrings=True
    )

    def __init__(self, **data: Any) -> None:
        """Construct from keyword settings; a wrong one raises ConfigError, naming it."""
        try:
            super().__init__(**data)
        except ValidationError as err:
            raise ConfigError(describe_validation_error(err, type(self))) from None
