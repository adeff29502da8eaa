"""The verbs of the `gpu-pool` command, one package each, named after it: its `__init__.py` holds
its options and its run (as a gpu_pool/cli/command.py Command), its other modules the logic
only it uses. What several verbs share (kube.py, pool_options.py, credentials.py, sources.py,
smoke_test.py, inspect/) is in gpu_pool/cli/, beside this package. Listed in the order
`gpu-pool --help` lists them: a new verb is a package here and its line below."""

from gpu_pool.cli.command import Command
from gpu_pool.cli.commands import doctor, plan, replacements, smoke_test_manifest, verify

COMMANDS: tuple[Command, ...] = (
    replacements.COMMAND,
    plan.COMMAND,
    verify.COMMAND,
    doctor.COMMAND,
    smoke_test_manifest.COMMAND,
)
