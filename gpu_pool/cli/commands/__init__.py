"""The verbs of the `gpu-pool` command, one module each (its options and its run, as a
gpu_pool/cli/command.py Command), in the order `gpu-pool --help` lists them. A new verb is a
module here and its line below."""

from gpu_pool.cli.command import Command
from gpu_pool.cli.commands import doctor, plan, replacements, smoke_test_manifest, verify

COMMANDS: tuple[Command, ...] = (
    replacements.COMMAND,
    plan.COMMAND,
    verify.COMMAND,
    doctor.COMMAND,
    smoke_test_manifest.COMMAND,
)
