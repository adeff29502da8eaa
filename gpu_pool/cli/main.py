"""The `gpu-pool` command: plan, verify, doctor, smoke-test-manifest, replacements.

Also `python -m gpu_pool`. The pools come from the same place as the bundled stack's: the
`gpu-pool` key of cdk.json, with --config FILE merged over it; or, for any app built with the
pool constructs, from the records they write (--cdk-out DIR: a cloud assembly; --stack NAME: a
deployed stack's outputs). `replacements` reads templates, not settings. Each verb is a module
of gpu_pool/cli/commands/; this module parses the arguments, runs the verb and turns its
errors into one line and an exit status.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from gpu_pool.cli.command import Services
from gpu_pool.cli.commands import COMMANDS
from gpu_pool.cli.errors import CliError
from gpu_pool.settings import ConfigError

if TYPE_CHECKING:
    from gpu_pool.cli.verify_run import Clock

# The top-level modules of the `cli` extra (pyproject.toml; the wheel test checks they match).
# The entry point is installed without them, so a command that needs one says what to install.
CLI_EXTRA_MODULES = frozenset({"kubernetes", "boto3", "botocore", "urllib3"})

__all__ = ["CliError", "main", "parser"]


def parser() -> argparse.ArgumentParser:
    """The command's parser: a subcommand per verb, with the options its module adds."""
    top = argparse.ArgumentParser(prog="gpu-pool", description=__doc__.splitlines()[0])
    sub = top.add_subparsers(dest="command", required=True)
    for command in COMMANDS:
        command.add_options(
            sub.add_parser(command.name, help=command.help, description=command.description)
        )
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
