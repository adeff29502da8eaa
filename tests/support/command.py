"""Running the `gpu-pool` command against the fake API server, with short timeouts."""

from gpu_pool.cli.main import main
from tests.support.fake_kube import FakeKubernetes
from tests.support.paths import ROOT

FAST = [
    "--poll-interval",
    "0.01",
    "--scale-up-timeout",
    "0.4",
    "--node-join-timeout",
    "0.4",
    "--node-ready-timeout",
    "0.4",
    "--gpu-timeout",
    "0.4",
    "--run-timeout",
    "0.4",
]


def run(tmp_path, scenario, *extra, aws=None, command="verify"):
    with FakeKubernetes(scenario) as fake:
        argv = [
            command,
            "--cdk-json",
            str(ROOT / "cdk.json"),
            "--kubeconfig",
            str(fake.kubeconfig(tmp_path)),
            *(FAST if command == "verify" else []),
            *extra,
        ]
        code = main(argv, aws=aws)
    return code, fake
