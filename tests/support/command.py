"""Running the `gpu-pool` command against the fake API server, on a fake clock."""

from gpu_pool.cli.main import main
from tests.support.clock import FakeClock
from tests.support.fake_kube import FakeKubernetes, Rights, rights_of
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


# The Kubernetes `edit` role's rules verify uses (Kubernetes docs, "User-facing roles": edit
# writes pods and reads their logs and events); EKS's AmazonEKSEditPolicy holds edit's
# permissions (EKS user guide, "Review access policy permissions").
EDIT_RULES = (
    {
        "apiGroups": [""],
        "resources": ["pods"],
        "verbs": ["create", "delete", "get", "list", "watch", "patch", "update"],
    },
    {"apiGroups": [""], "resources": ["pods/log", "events"], "verbs": ["get", "list", "watch"]},
)


def verify_rights(namespace: str) -> Rights:
    """What a pipeline's verify role may do on its cluster (gpu_pool/cdk/cluster/verifier.py): its
    stack's ClusterRole of reads and Role of DRA smoke objects, and AmazonEKSEditPolicy in the
    smoke namespace alone."""
    from gpu_pool.cdk.cluster.verifier import verify_reads_manifest, verify_writes_manifest

    rights = rights_of(verify_reads_manifest("Test") + verify_writes_manifest("Test", namespace))
    return Rights(
        rights.cluster_rules,
        rights.namespace_rules + tuple((namespace, rule) for rule in EDIT_RULES),
    )


def run(tmp_path, scenario, *extra, aws=None, command="verify", clock=None, rights=None):
    """`gpu-pool <command>` against `scenario`; verify runs with the verify role's rights (or
    `rights`), so that every test of it also proves the role allows each request it makes."""
    if command == "verify" and rights is None:
        namespace = extra[extra.index("--namespace") + 1] if "--namespace" in extra else "default"
        rights = verify_rights(namespace)
    with FakeKubernetes(scenario, rights) as fake:
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
