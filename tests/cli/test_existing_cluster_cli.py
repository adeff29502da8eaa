"""#47 item 4: the `gpu-pool` command with settings that name an existing cluster and little
else: plan takes the cluster's lookup from the app's cdk.context.json, as a synth does, and says
when there is none; verify and doctor find the cluster's kubeconfig context (the ARN
`aws eks update-kubeconfig` names it by) and its Region."""

from __future__ import annotations

import argparse
import json

import pytest
import yaml

from gpu_pool.cli.errors import CliError
from gpu_pool.cli.kube import located
from gpu_pool.cli.main import main
from gpu_pool.plan.existing_cluster import cluster_context_key
from tests.support.looked_up import eks_cluster_key
from tests.support.paths import ROOT
from tests.support.settings import EXISTING_BY_NAME
from tests.unit.test_existing_cluster import ANSWER


def _plan(tmp_path, capsys, cached, *options):
    (tmp_path / "cdk.json").write_text((ROOT / "cdk.json").read_text())
    (tmp_path / "cdk.context.json").write_text(json.dumps(cached))
    config = tmp_path / "inference.yaml"
    config.write_text(yaml.safe_dump(EXISTING_BY_NAME))
    argv = ["plan", "--cdk-json", str(tmp_path / "cdk.json"), "--config", str(config), *options]
    assert main(argv) == 0
    return capsys.readouterr().out.splitlines()


def test_the_key_is_the_one_the_cdk_caches():
    assert cluster_context_key("123456789012", "us-east-1", "inference") == eks_cluster_key(
        "inference"
    )


def test_plan_shows_the_cluster_as_looked_up(tmp_path, capsys):
    key = cluster_context_key("123456789012", "us-east-1", "inference")
    out = _plan(tmp_path, capsys, {key: ANSWER})
    assert out[-1] == (
        "Cluster inference exists, looked up (cdk.context.json): Kubernetes 1.33, private "
        "subnets in us-east-1a, us-east-1b, authentication mode API_AND_CONFIG_MAP"
    )


def test_plan_shows_an_unchecked_cluster_as_such(tmp_path, capsys):
    out = _plan(tmp_path, capsys, {})
    key = cluster_context_key("123456789012", "us-east-1", "inference")
    assert out[-1] == (
        f"Cluster inference exists and is not looked up yet (no {key} in cdk.context.json): "
        "its Kubernetes version, private subnets and add-ons are unchecked until a synth with "
        "credentials of account 123456789012 caches them"
    )


def test_plan_as_json_says_the_same_of_the_cluster(tmp_path, capsys):
    """--output json carries the table's notes (it had none: a script saw no word of an
    unchecked cluster)."""
    key = cluster_context_key("123456789012", "us-east-1", "inference")
    plan = json.loads("\n".join(_plan(tmp_path, capsys, {}, "--output", "json")))
    assert plan["notes"] == [
        f"Cluster inference exists and is not looked up yet (no {key} in cdk.context.json): "
        "its Kubernetes version, private subnets and add-ons are unchecked until a synth with "
        "credentials of account 123456789012 caches them"
    ]
    looked_up = json.loads("\n".join(_plan(tmp_path, capsys, {key: ANSWER}, "--output", "json")))
    assert looked_up["notes"] == [
        "Cluster inference exists, looked up (cdk.context.json): Kubernetes 1.33, private "
        "subnets in us-east-1a, us-east-1b, authentication mode API_AND_CONFIG_MAP"
    ]


def test_plan_refuses_what_the_synth_refuses_of_the_looked_up_cluster(tmp_path, capsys):
    (tmp_path / "cdk.json").write_text((ROOT / "cdk.json").read_text())
    key = cluster_context_key("123456789012", "us-east-1", "inference")
    answer = {**ANSWER, "authenticationMode": "CONFIG_MAP"}
    (tmp_path / "cdk.context.json").write_text(json.dumps({key: answer}))
    config = tmp_path / "inference.yaml"
    config.write_text(yaml.safe_dump(EXISTING_BY_NAME))
    assert main(["plan", "--cdk-json", str(tmp_path / "cdk.json"), "--config", str(config)]) == 2
    assert "aws eks update-cluster-config --name inference" in capsys.readouterr().err


def _kubeconfig(tmp_path, contexts=None, current="kind-local"):
    """Contexts as `aws eks update-kubeconfig` writes them (default: two clusters' and a
    current one of another cluster)."""
    contexts = contexts or [
        "arn:aws:eks:eu-west-1:123456789012:cluster/inference",
        "arn:aws:eks:us-east-1:123456789012:cluster/training",
        "kind-local",
    ]
    path = tmp_path / "kubeconfig"
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": current,
                "clusters": [
                    {"name": c, "cluster": {"server": "https://127.0.0.1:1"}} for c in contexts
                ],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": c, "context": {"cluster": c, "user": "u"}} for c in contexts],
            }
        )
    )
    return str(path)


def _args(tmp_path, context=None):
    return argparse.Namespace(kubeconfig=_kubeconfig(tmp_path), context=context)


def test_only_a_cluster_name_finds_its_context_and_region(tmp_path):
    args = _args(tmp_path)
    assert located(args, ("inference", None)) == ("inference", "eu-west-1")
    assert args.context == "arn:aws:eks:eu-west-1:123456789012:cluster/inference"


def test_a_known_region_picks_only_that_regions_context(tmp_path):
    args = _args(tmp_path)
    assert located(args, ("inference", "us-east-1")) == ("inference", "us-east-1")
    # None there: the current context, as before.
    assert args.context is None


def test_a_context_given_is_kept(tmp_path):
    args = _args(tmp_path, context="kind-local")
    assert located(args, ("inference", None)) == ("inference", None)
    assert args.context == "kind-local"


def test_a_cluster_of_that_name_in_another_account_is_never_chosen(tmp_path):
    """Prod and staging clusters often share a name: the pools' account picks the context, and
    the only ARN context of that name being another account's is no match."""
    args = _args(tmp_path)
    assert located(args, ("inference", None), "999999999999") == ("inference", None)
    assert args.context is None


def test_a_context_of_another_accounts_cluster_of_that_name_is_refused(tmp_path):
    """Given (or current), such a context would run verify's GPU pod in the wrong account."""
    args = _args(tmp_path, context="arn:aws:eks:eu-west-1:123456789012:cluster/inference")
    with pytest.raises(CliError) as refused:
        located(args, ("inference", "eu-west-1"), "999999999999")
    assert str(refused.value) == (
        "the kubeconfig context arn:aws:eks:eu-west-1:123456789012:cluster/inference is cluster "
        "inference of account 123456789012, but the pools are account 999999999999's: give "
        "--context of account 999999999999's, or write it with `aws eks update-kubeconfig "
        "--name inference --region eu-west-1` using credentials of account 999999999999"
    )


@pytest.mark.parametrize("looked_up", [False, True], ids=["not-yet", "looked-up"])
def test_the_plan_after_a_synth_says_when_the_cluster_is_not_looked_up_yet(
    tmp_path, capsys, looked_up
):
    """#53 item 8: `./dev synth` prints `gpu-pool plan --cdk-out cdk.out`; an assembly built on
    an existing cluster's placeholders says so below the table, one built on its answer not."""
    from gpu_pool.cdk.stack import GpuPoolStack
    from gpu_pool.settings import load_settings
    from tests.support.cfn import unvalidated_app

    key = cluster_context_key("123456789012", "us-east-1", "inference")
    context = {key: ANSWER} if looked_up else {}
    app = unvalidated_app(context=context, outdir=str(tmp_path / "out"))
    GpuPoolStack(app, "GpuPool", settings=load_settings(EXISTING_BY_NAME, None))
    app.synth()
    capsys.readouterr()
    assert main(["plan", "--cdk-out", str(tmp_path / "out")]) == 0
    last = capsys.readouterr().out.splitlines()[-1]
    note = (
        "Stack GpuPool: its existing cluster is not looked up yet: the Kubernetes version, "
        "subnets and add-ons of its pools are placeholders until a synth with credentials of "
        "account 123456789012 caches them (the synth's GP-REGION-08 warning names the command "
        "that reads them); its deploy is refused until then"
    )
    assert (last == note) is not looked_up


def _two_region_kubeconfig(tmp_path, current="kind-local"):
    """Cluster `inference` in two Regions (one name for prod in each), and `training`."""
    contexts = [
        "arn:aws:eks:eu-west-1:123456789012:cluster/inference",
        "arn:aws:eks:us-east-1:123456789012:cluster/inference",
        "arn:aws:eks:us-east-1:123456789012:cluster/training",
        "kind-local",
    ]
    return _kubeconfig(tmp_path, contexts, current)


def test_one_name_in_two_regions_without_the_settings_region_is_refused(tmp_path):
    """#53 item 11: which of the two the pools are on is not known; the current context
    (another cluster) is neither: refused, naming both, rather than verifying the wrong one."""
    args = argparse.Namespace(kubeconfig=_two_region_kubeconfig(tmp_path), context=None)
    with pytest.raises(CliError) as refused:
        located(args, ("inference", None))
    assert str(refused.value) == (
        "the kubeconfig has a context for cluster inference in each of eu-west-1 (account "
        "123456789012), us-east-1 (account 123456789012): give --context of the one the pools "
        "are on (or the settings' region)"
    )
    # The settings' Region, or the current context being one of them, decides.
    args = argparse.Namespace(kubeconfig=_two_region_kubeconfig(tmp_path), context=None)
    assert located(args, ("inference", "us-east-1")) == ("inference", "us-east-1")
    assert args.context == "arn:aws:eks:us-east-1:123456789012:cluster/inference"
    current = "arn:aws:eks:eu-west-1:123456789012:cluster/inference"
    args = argparse.Namespace(kubeconfig=_two_region_kubeconfig(tmp_path, current), context=None)
    assert located(args, ("inference", None)) == ("inference", "eu-west-1")


def test_a_current_context_of_another_eks_cluster_is_refused(tmp_path):
    """The pools' cluster has no context, and the current one is another EKS cluster's: verify
    would run its GPU pod there."""
    current = "arn:aws:eks:us-east-1:123456789012:cluster/training"
    args = argparse.Namespace(kubeconfig=_two_region_kubeconfig(tmp_path, current), context=None)
    with pytest.raises(CliError) as refused:
        located(args, ("batch", "us-east-1"))
    assert str(refused.value) == (
        "the kubeconfig's current context arn:aws:eks:us-east-1:123456789012:cluster/training is "
        "cluster training, but the pools are on cluster batch: give --context of batch's, or "
        "write it with `aws eks update-kubeconfig --name batch --region us-east-1`"
    )


@pytest.mark.parametrize("verb", ["verify", "doctor"])
def test_verify_and_doctor_refuse_an_ambiguous_context_before_touching_a_cluster(
    tmp_path, capsys, verb
):
    """Through the verbs' own call sites: settings naming only the cluster (no region), two
    Regions' contexts of that name; each verb stops with the message, exit 2, no API call (the
    contexts' servers answer nothing)."""
    (tmp_path / "cdk.json").write_text((ROOT / "cdk.json").read_text())
    settings = {k: v for k, v in EXISTING_BY_NAME.items() if k not in ("account", "region")}
    settings["cluster"] = {
        **settings["cluster"],
        "existing": {
            "kubectl_provider_service_token": "arn:aws:lambda:us-east-1:123456789012:function:k",
            "kubectl_provider_role_arn": "arn:aws:iam::123456789012:role/k",
            "subnets_by_zone": {"us-east-1a": ["subnet-0aaaaaaaaaaaaaaaa"]},
        },
    }
    config = tmp_path / "inference.yaml"
    config.write_text(yaml.safe_dump(settings))
    argv = [
        verb,
        "--cdk-json",
        str(tmp_path / "cdk.json"),
        "--config",
        str(config),
        "--kubeconfig",
        _two_region_kubeconfig(tmp_path),
    ]
    assert main(argv) == 2
    assert "give --context of the one the pools are on" in capsys.readouterr().err
