"""What a verb of the `gpu-pool` command is: its name and help, the options it adds to its
parser, and its run. gpu_pool/cli/commands/ holds one package per verb, each with its COMMAND;
main.py builds the parser from them and runs the one asked for (as pip's commands/ package)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol


class Clock(Protocol):
    """Verify's time: it reads it for each stage and sleeps between polls. Tests pass one whose
    sleep advances its time at once, so stalls are reached without waiting."""

    def now(self) -> float: ...

    def sleep(self, seconds: float) -> None: ...


@dataclass(frozen=True)
class Services:
    """What a run reaches outside the process through: `aws`, a boto3 client factory, and
    `clock`, verify's time; None: the real ones (tests pass stubs)."""

    aws: Callable[[str], Any] | None = None
    clock: Clock | None = None


@dataclass(frozen=True)
class Command:
    name: str
    help: str
    add_options: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace, Services], int]
    # The parser's description, where it says more than its help line (None: none).
    description: str | None = None
