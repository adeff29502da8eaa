"""Running the `gpu-pool` command against the fake API server, on a fake clock."""

from gpu_pool.cli.main import main
from tests.support.clock import FakeClock
from tests.support.fake_kube import FakeKubernetes
from tests.support.paths import ROOT

# On the fake clock one poll is one second and one scenario tick (the fake server advances a
# tick each time the pod is read), so a stage stalls five polls after it was reached: later
# than any scripted step of a scenario, which come one or two ticks apart.
FAKE_TIME = [
    "--poll-interval",
    "1",
    "--scale-up-timeout",
    "5",
    "--node-join-timeout",
    "5",
    "--node-ready-timeout",
    "5",
    "--gpu-timeout",
    "5",
    "--run-timeout",
    "5",
]


def run(tmp_path, scenario, *extra, aws=None, command="verify", clock=None):
    with FakeKubernetes(scenario) as fake:
        argv = [
            command,
            "--cdk-json",
            str(ROOT / "cdk.json"),
            "--kubeconfig",
            str(fake.kubeconfig(tmp_path)),
            *(FAKE_TIME if command == "verify" else []),
            *extra,
        ]
        code = main(argv, aws=aws, clock=clock or FakeClock())
    return code, fake
