"""The `gpu-pool` command: plan, verify, doctor, smoke-test-manifest, replacements.

Also `python -m gpu_pool`. The pools come from the same place as the bundled stack's: the
`gpu-pool` key of cdk.json, with --config FILE merged over it; or, for any app built with the
pool constructs, from the records they write (--cdk-out DIR: a cloud assembly; --stack NAME: a
deployed stack's outputs). `replacements` reads templates, not settings. Each verb is a package
of gpu_pool/cli/commands/; this module parses the arguments, runs the verb and turns its
errors into one line and an exit status.
"""

from __future__ import annotations

import argparse
import difflib
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

from gpu_pool.cli.command import Clock, Services
from gpu_pool.cli.commands import COMMANDS
from gpu_pool.cli.errors import CliError
from gpu_pool.settings import ConfigError

# The top-level modules of the `cli` extra (pyproject.toml; the wheel test checks they match).
# The entry point is installed without them, so a command that needs one says what to install.
CLI_EXTRA_MODULES = frozenset({"kubernetes", "boto3", "botocore", "urllib3"})

__all__ = ["CliError", "main", "parser"]


class _Parser(argparse.ArgumentParser):
    """argparse's parser, which also names the closest option of the verb for one it does not
    know (`plan --ouput json`: did you mean --output?), where argparse names only the unknown."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.verbs: dict[str, argparse.ArgumentParser] = {}

    def parse_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: None = None
    ) -> argparse.Namespace:
        parsed, unknown = self.parse_known_args(args, namespace)
        if unknown:
            verb = self.verbs[parsed.command]
            verb.error(f"unrecognized arguments: {' '.join(unknown)}{_closest(verb, unknown)}")
        return parsed


def _closest(verb: argparse.ArgumentParser, unknown: list[str]) -> str:
    """'; did you mean --output?' for each unknown option close to one of the verb's."""
    options = [name for action in verb._actions for name in action.option_strings]
    hints = []
    for word in unknown:
        flag = word.partition("=")[0]
        if flag.startswith("--"):
            hints += [
                f"{flag}: did you mean {match}?"
                for match in difflib.get_close_matches(flag, options, n=1)
            ]
    return "".join(f"; {hint}" for hint in hints)


def parser() -> argparse.ArgumentParser:
    """The command's parser: a subcommand per verb, with the options its module adds."""
    top = _Parser(prog="gpu-pool", description=__doc__.splitlines()[0])
    sub = top.add_subparsers(dest="command", required=True)
    for command in COMMANDS:
        verb = sub.add_parser(command.name, help=command.help, description=command.description)
        command.add_options(verb)
        top.verbs[command.name] = verb
    return top


def main(
    argv: Sequence[str] | None = None,
    aws: Callable[[str], Any] | None = None,
    clock: Clock | None = None,
) -> int:
    """`aws` (a boto3 client factory) and `clock` (verify's time) default to the real ones;
    tests pass stubs."""
    args = parser().parse_args(argv)
    (command,) = [c for c in COMMANDS if c.name == args.command]
    try:
        return command.run(args, Services(aws, clock))
    except (ConfigError, CliError) as err:
        print(f"gpu-pool: {err}", file=sys.stderr)
        return 2
    except ModuleNotFoundError as err:
        if (err.name or "").partition(".")[0] not in CLI_EXTRA_MODULES:
            raise
        print(
            f"gpu-pool: {args.command} needs the [cli] extra: pip install 'gpu-pool[cli]'",
            file=sys.stderr,
        )
        return 2
    except KeyboardInterrupt:
        print("gpu-pool: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader left (`gpu-pool plan | head`): stop without a traceback, with a shell's
        # status for SIGPIPE. Python would report the pipe again when it flushes stdout at
        # exit, so stdout goes nowhere from here.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
