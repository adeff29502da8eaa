"""`gpu-pool doctor --cdk-out DIR` on an app of two clusters in two accounts and Regions: each
checked by the one-cluster doctor through the context named by its ARN (what `aws eks
update-kubeconfig` writes), one summary row per cluster; a cluster it cannot reach is a
verdict, not a crash. Kubernetes: the local fake API server; AWS: botocore's Stubber."""

from __future__ import annotations

import json
import socket

import pytest

from gpu_pool.cdk.stack import GpuPoolStack
from gpu_pool.cli.main import main
from gpu_pool.settings import AppSettings
from tests.support.aws_stubs import asg_group, stubbed
from tests.support.cfn import unvalidated_app
from tests.support.fake_kube import FakeKubernetes, Scenario, autoscaler

pytestmark = pytest.mark.synth

PROD = ("GpuPoolProd", "111111111111", "us-east-1", "prod", "inference")
RESEARCH = ("GpuPoolResearch", "222222222222", "eu-west-1", "research", "training")
PROD_ARN = "arn:aws:eks:us-east-1:111111111111:cluster/prod"
RESEARCH_ARN = "arn:aws:eks:eu-west-1:222222222222:cluster/research"


@pytest.fixture(scope="module")
def fleet_assembly(tmp_path_factory):
    """Two bundled-app stacks, each bound to its account and Region, in one cloud assembly."""
    out = tmp_path_factory.mktemp("fleet")
    app = unvalidated_app(outdir=str(out))
    for stack, account, region, cluster, pool in (PROD, RESEARCH):
        settings = {
            "account": account,
            "region": region,
            "cluster": {"name": cluster},
            "pool": {"name": pool},
        }
        GpuPoolStack(app, stack, settings=AppSettings.model_validate(settings))
    app.synth()
    return out


def _dead_server() -> str:
    """An address nothing listens on: connections are refused."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{probe.getsockname()[1]}"


def _kubeconfig(path, servers):
    """A kubeconfig with one context per (context name, server), the first current."""
    names = list(servers)
    path.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": names[0],
                "clusters": [{"name": n, "cluster": {"server": s}} for n, s in servers.items()],
                "users": [{"name": "user", "user": {}}],
                "contexts": [
                    {"name": n, "context": {"cluster": n, "user": "user"}} for n in names
                ],
            }
        )
    )
    return path


def _aws(accounts=("111111111111",)):
    """AWS as the tests' credentials see it: the caller identity's account (one answer per
    cluster checked, in order) and no GPU ASG of cluster prod yet."""
    sts = stubbed(
        "sts",
        [
            (
                "get_caller_identity",
                {"Account": account, "Arn": f"arn:aws:iam::{account}:user/ops", "UserId": "AID"},
                {},
            )
            for account in accounts
        ],
    )
    autoscaling = stubbed(
        "autoscaling",
        [
            (
                "describe_auto_scaling_groups",
                {"AutoScalingGroups": [asg_group("eks-prod-other", {})]},
                {"Filters": [{"Name": "tag:eks:cluster-name", "Values": ["prod"]}]},
            )
        ],
    )
    return {"sts": sts, "autoscaling": autoscaling, "eks": stubbed("eks", [])}.__getitem__


BOTH_ACCOUNTS = ("111111111111", "222222222222")
PROD_CLUSTER = Scenario(autoscaler=autoscaler(cluster="prod"))
HEADER = "cluster   region     account       pools      verdict      first fix"
PROD_ROW = "prod      us-east-1  111111111111  inference  ok           -"


def _doctor(fleet_assembly, kubeconfig, *extra, aws=None):
    return main(
        ["doctor", "--cdk-out", str(fleet_assembly), "--kubeconfig", str(kubeconfig), *extra],
        aws=aws,
    )


def test_one_row_per_cluster_and_an_unreachable_one_fails_the_command(
    fleet_assembly, tmp_path, capsys
):
    with FakeKubernetes(PROD_CLUSTER) as prod:
        kubeconfig = _kubeconfig(
            tmp_path / "kubeconfig", {PROD_ARN: prod.url, RESEARCH_ARN: _dead_server()}
        )
        code = _doctor(fleet_assembly, kubeconfig, aws=_aws(BOTH_ACCOUNTS))
    out = capsys.readouterr().out.splitlines()
    assert out[-3:] == [
        HEADER,
        PROD_ROW,
        "research  eu-west-1  222222222222  training   unreachable  check the context's "
        "credentials and endpoint, or: aws eks update-kubeconfig --name research --region "
        f"eu-west-1 --kubeconfig {kubeconfig}",
    ]
    # Each cluster's own doctor output comes first, under its name.
    assert "== prod (us-east-1, account 111111111111; stacks GpuPoolProd)" in out
    assert "[  ok] pool inference: no nodes: the pool is at zero" in out
    assert "== research (eu-west-1, account 222222222222; stacks GpuPoolResearch)" in out
    assert code == 1


def test_a_cluster_without_its_context_gets_the_command_that_writes_it(
    fleet_assembly, tmp_path, capsys
):
    with FakeKubernetes(PROD_CLUSTER) as prod:
        kubeconfig = _kubeconfig(tmp_path / "kubeconfig", {PROD_ARN: prod.url})
        code = _doctor(
            fleet_assembly,
            kubeconfig,
            "--account-profile",
            "222222222222=research-admin",
            aws=_aws(),
        )
    out = capsys.readouterr().out.splitlines()
    assert out[-1] == (
        "research  eu-west-1  222222222222  training   unreachable  aws eks update-kubeconfig "
        f"--name research --region eu-west-1 --profile research-admin --kubeconfig {kubeconfig}"
    )
    assert f"[fail] cluster: no kubeconfig context {RESEARCH_ARN}" in out
    assert code == 1


def test_stack_chooses_the_clusters_and_all_ok_exits_0(fleet_assembly, tmp_path, capsys):
    with FakeKubernetes(PROD_CLUSTER) as prod:
        kubeconfig = _kubeconfig(tmp_path / "kubeconfig", {PROD_ARN: prod.url})
        code = _doctor(fleet_assembly, kubeconfig, "--stack", "GpuPoolProd", aws=_aws())
    assert capsys.readouterr().out.splitlines()[-2:] == [
        "cluster  region     account       pools      verdict  first fix",
        "prod     us-east-1  111111111111  inference  ok       -",
    ]
    assert code == 0


def test_credentials_of_another_account_are_a_verdict(fleet_assembly, tmp_path, capsys):
    """The profile's credentials answer for another account (STS GetCallerIdentity): its ASGs
    are not the cluster's, so nothing is judged with them."""
    with FakeKubernetes(PROD_CLUSTER) as prod:
        kubeconfig = _kubeconfig(tmp_path / "kubeconfig", {PROD_ARN: prod.url})
        code = _doctor(
            fleet_assembly,
            kubeconfig,
            "--stack",
            "GpuPoolProd",
            aws=_aws(accounts=("333333333333",)),
        )
    out = capsys.readouterr().out.splitlines()
    assert out[-1] == (
        "prod     us-east-1  111111111111  inference  unreachable  --account-profile "
        "111111111111=PROFILE (a profile of that account)"
    )
    assert (
        "[fail] cluster: the AWS credentials are for account 333333333333, the cluster's "
        "stacks for 111111111111"
    ) in out
    assert code == 1


def test_json_form(fleet_assembly, tmp_path, capsys):
    with FakeKubernetes(PROD_CLUSTER) as prod:
        kubeconfig = _kubeconfig(
            tmp_path / "kubeconfig", {PROD_ARN: prod.url, RESEARCH_ARN: _dead_server()}
        )
        code = _doctor(fleet_assembly, kubeconfig, "--output", "json", aws=_aws(BOTH_ACCOUNTS))
    report = json.loads(capsys.readouterr().out)
    prod_report, research = report["clusters"]
    assert {k: v for k, v in prod_report.items() if k != "checks"} == {
        "cluster": "prod",
        "region": "us-east-1",
        "account": "111111111111",
        "stacks": ["GpuPoolProd"],
        "pools": ["inference"],
        "context": PROD_ARN,
        "verdict": "ok",
        "first_fix": None,
    }
    assert {
        "status": "ok",
        "subject": "pool inference",
        "detail": "no nodes: the pool is at zero",
        "fix": "",
    } in prod_report["checks"]
    assert (research["verdict"], research["context"], research["first_fix"]) == (
        "unreachable",
        None,
        "check the context's credentials and endpoint, or: aws eks update-kubeconfig --name "
        f"research --region eu-west-1 --kubeconfig {kubeconfig}",
    )
    ((check),) = research["checks"]
    assert check["status"] == "fail" and check["detail"].startswith(
        "cannot reach the Kubernetes API at http://127.0.0.1:"
    )
    assert report["failed"] is True
    assert code == 1


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["--account-profile", "1111=prod"],
            "--account-profile: '1111=prod': give ACCOUNT=PROFILE, ACCOUNT a 12-digit AWS "
            "account id and PROFILE a profile of the AWS config",
        ),
        (
            ["--stack", "Nope"],
            "--stack: no stack 'Nope' in the assembly (stacks: GpuPoolProd, GpuPoolResearch)",
        ),
    ],
)
def test_bad_options_are_one_line(fleet_assembly, tmp_path, capsys, argv, message):
    code = _doctor(fleet_assembly, tmp_path / "none", *argv)
    assert capsys.readouterr().err == f"gpu-pool: {message}\n"
    assert code == 2


def test_fleet_options_need_cdk_out(capsys):
    assert main(["doctor", "--profile", "prod"]) == 2
    assert capsys.readouterr().err == (
        "gpu-pool: doctor: --profile: with --cdk-out DIR (every cluster of an assembly); one "
        "cluster's doctor uses the environment's AWS credentials (AWS_PROFILE)\n"
    )


def test_the_docs_show_the_fleet_doctor_as_it_is(fleet_assembly, tmp_path, monkeypatch, capsys):
    from tests.support.paths import ROOT

    page = (ROOT / "docs" / "verify-and-doctor.md").read_text(encoding="utf-8")
    section = page.split("## Every cluster of an app", 1)[1]
    shown = section.split("```\n", 2)[1]
    (tmp_path / "cdk.out").symlink_to(fleet_assembly)
    monkeypatch.chdir(tmp_path)
    command = "gpu-pool doctor --cdk-out cdk.out --account-profile 222222222222=research"
    with FakeKubernetes(PROD_CLUSTER) as prod:
        kubeconfig = _kubeconfig(tmp_path / "kubeconfig", {PROD_ARN: prod.url})
        monkeypatch.setenv("KUBECONFIG", str(kubeconfig))
        code = main(command.split()[1:], aws=_aws(BOTH_ACCOUNTS))
    out = capsys.readouterr().out
    assert shown == f"$ {command}\n{out}$ echo $?\n{code}\n"


def test_an_environment_agnostic_stack_finds_its_clusters_context_by_name(
    two_stack_assembly, tmp_path, capsys
):
    """The two-stack app names no account or Region: the context update-kubeconfig wrote for
    a cluster of its name is used, not the current context (another cluster's)."""
    from tests.support.two_stacks import CLUSTER_NAME

    written = f"arn:aws:eks:eu-west-1:999999999999:cluster/{CLUSTER_NAME}"
    scenario = Scenario(autoscaler=autoscaler(cluster=CLUSTER_NAME))
    with FakeKubernetes(scenario) as cluster:
        kubeconfig = _kubeconfig(
            tmp_path / "kubeconfig", {"elsewhere": _dead_server(), written: cluster.url}
        )
        code = _doctor(two_stack_assembly, kubeconfig)
    out = capsys.readouterr().out.splitlines()
    assert out[-1] == (
        "ml-platform  -       -        inference,training  warnings  ASG tags: not checked: no "
        "AWS credentials or region"
    )
    assert code == 0


def test_a_stack_without_an_account_never_takes_another_regions_cluster():
    """#38 item 9: a stack with a Region and no account finds its cluster's context by name in
    its own Region only (the context is the cluster's ARN, arn:aws:eks:REGION:ACCOUNT:cluster/
    NAME, as aws eks update-kubeconfig writes it): a cluster of its name in another Region is
    another cluster, never checked in its place; with neither, any Region's."""
    from gpu_pool.cli.commands.doctor.fleet import FleetCluster, _contexts_of

    east = "arn:aws:eks:us-east-1:111111111111:cluster/prod"
    west = "arn:aws:eks:us-west-2:111111111111:cluster/prod"
    other = "arn:aws:eks:us-east-1:111111111111:cluster/prod-2"
    contexts = {east, west, other, "minikube"}
    in_east = FleetCluster("prod", "us-east-1", None, ("GpuPool",), ())
    assert _contexts_of(in_east, contexts) == [east]
    assert _contexts_of(FleetCluster("prod", "eu-west-1", None, ("GpuPool",), ()), contexts) == []
    anywhere = FleetCluster("prod", None, None, ("GpuPool",), ())
    assert _contexts_of(anywhere, contexts) == [east, west]
