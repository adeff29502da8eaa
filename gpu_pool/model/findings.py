"""A finding: one problem with the settings, naming the setting, what is wrong and what to do.

Errors stop the synth (deploying would not work); warnings become CDK warning annotations (it
works, but costs money or time). checks.report() turns findings into either.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Finding:
    setting: str
    message: str
    error: bool

    def __str__(self) -> str:
        return f"{self.setting}: {self.message}"


def error(setting: str, message: str) -> Finding:
    return Finding(setting, message, True)


def warning(setting: str, message: str) -> Finding:
    return Finding(setting, message, False)
