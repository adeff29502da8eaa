"""What `gpu-pool` says, in one line and with exit code 2, when it cannot start: a cdk.json it
cannot use, the [cli] extra not installed, no kubeconfig, a failing credential command."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from gpu_pool.cli.main import main
from tests.support.paths import ROOT

CDK_JSON = str(ROOT / "cdk.json")


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        pytest.param(
            b'{"context": {',
            "is not valid JSON: Expecting property name enclosed in double quotes "
            "(line 1, column 14)",
            id="malformed",
        ),
        pytest.param(
            b'\xff\xfe{"context": {}}', "is not UTF-8 text; save it as UTF-8 JSON", id="utf-16"
        ),
        pytest.param(b"[]", "is not a cdk.json (a JSON object)", id="not-an-object"),
        pytest.param(b'{"context": []}', 'its "context" is not a JSON object', id="context"),
        pytest.param(
            b'{"context": {"gpu-pool": "gpu"}}',
            'its context "gpu-pool" is not a JSON object',
            id="settings",
        ),
    ],
)
def test_a_cdk_json_it_cannot_use_is_named_with_the_problem(tmp_path, capsys, content, problem):
    path = tmp_path / "cdk.json"
    path.write_bytes(content)
    assert main(["smoke-test-manifest", "--cdk-json", str(path)]) == 2
    separator = " " if problem.startswith("is ") else ": "
    assert capsys.readouterr() == ("", f"gpu-pool: --cdk-json: '{path}'{separator}{problem}\n")


def test_a_command_without_the_cli_extra_says_what_to_install(capsys, monkeypatch):
    """The entry point is installed without [cli]; a module of it missing is one line."""
    monkeypatch.setitem(sys.modules, "kubernetes", None)  # import fails: ModuleNotFoundError
    assert main(["doctor", "--cdk-json", CDK_JSON]) == 2
    assert capsys.readouterr().err == (
        "gpu-pool: doctor needs the [cli] extra: pip install 'gpu-pool[cli]'\n"
    )


def test_a_missing_kubeconfig_is_named_with_the_command_that_writes_it(tmp_path, capsys):
    missing = tmp_path / "kubeconfig"
    assert main(["doctor", "--cdk-json", CDK_JSON, "--kubeconfig", str(missing)]) == 2
    assert capsys.readouterr().err == (
        f"gpu-pool: kubeconfig: no file at '{missing}'; create it with: aws eks "
        f"update-kubeconfig --name gpu-pool --region REGION --kubeconfig {missing} (REGION: the "
        "stack's; neither the pools nor the AWS config name one)\n"
    )


def test_the_kubeconfig_advice_names_the_configured_region_of_an_agnostic_stack(
    tmp_path, capsys, monkeypatch
):
    """cdk.json names no region: the stack went to the AWS CLI's, which the advice names
    (#29 item 4: it used to leave --region out)."""
    monkeypatch.setenv("AWS_DEFAULT_REGION", "ap-southeast-2")
    missing = tmp_path / "kubeconfig"
    assert main(["doctor", "--cdk-json", CDK_JSON, "--kubeconfig", str(missing)]) == 2
    assert capsys.readouterr().err == (
        f"gpu-pool: kubeconfig: no file at '{missing}'; create it with: aws eks "
        f"update-kubeconfig --name gpu-pool --region ap-southeast-2 --kubeconfig {missing}\n"
    )


def test_an_unknown_aws_profile_leaves_the_region_to_the_user(tmp_path, capsys, monkeypatch):
    """AWS_PROFILE names no profile: boto3 refuses the session (ProfileNotFound); the advice
    is the same one line as without a configured region (#29 review item 1: a traceback)."""
    monkeypatch.setenv("AWS_PROFILE", "nope")
    missing = tmp_path / "kubeconfig"
    assert main(["doctor", "--cdk-json", CDK_JSON, "--kubeconfig", str(missing)]) == 2
    assert capsys.readouterr().err == (
        f"gpu-pool: kubeconfig: no file at '{missing}'; create it with: aws eks "
        f"update-kubeconfig --name gpu-pool --region REGION --kubeconfig {missing} (REGION: the "
        "stack's; neither the pools nor the AWS config name one)\n"
    )


def test_without_kubeconfig_options_the_default_file_is_named(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    config = tmp_path / "eu.yaml"
    config.write_text("region: eu-west-1\n")
    assert main(["verify", "--cdk-json", CDK_JSON, "--config", str(config)]) == 2
    assert capsys.readouterr().err == (
        f"gpu-pool: kubeconfig: no file at '{tmp_path}/.kube/config'; create it with: aws eks "
        "update-kubeconfig --name gpu-pool --region eu-west-1\n"
    )


def _kubeconfig(tmp_path, command, *args):
    """A kubeconfig whose user gets its token from `command` (as `aws eks get-token` does)."""
    path = tmp_path / "kubeconfig"
    exec_config = {
        "apiVersion": "client.authentication.k8s.io/v1beta1",
        "command": command,
        "args": list(args),
    }
    path.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": "x",
                "clusters": [{"name": "c", "cluster": {"server": "http://127.0.0.1:9"}}],
                "users": [{"name": "u", "user": {"exec": exec_config}}],
                "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
            }
        )
    )
    return path


EXPIRED = (
    "An error occurred (ExpiredTokenException) when calling the GetCallerIdentity operation: "
    "The security token included in the request is expired"
)


@pytest.mark.parametrize(
    ("command", "detail"),
    [
        pytest.param(
            ["sh", "-c", f"echo '{EXPIRED}' >&2; exit 255"],
            f"process returned 255. {EXPIRED}",
            id="fails",
        ),
        pytest.param(
            ["sh", "-c", "echo 'first line' >&2; echo 'last line' >&2; exit 1"],
            "process returned 1. first line ... last line",
            id="several-lines",
        ),
        pytest.param(
            ["gpu-pool-no-such-command"],
            "[Errno 2] No such file or directory: 'gpu-pool-no-such-command'",
            id="not-installed",
        ),
    ],
)
def test_a_failing_credential_command_is_named_not_the_network(tmp_path, command, detail):
    """In a process of its own: there the client's log line would reach stderr."""
    kubeconfig = _kubeconfig(tmp_path, *command)
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "gpu_pool",
            "doctor",
            "--cdk-json",
            CDK_JSON,
            "--kubeconfig",
            str(kubeconfig),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
    )
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr == (
        "gpu-pool: kubeconfig: the credential command (the user's exec, such as aws eks "
        f"get-token) failed: {detail}\n"
    )


def test_another_apps_cdk_json_asks_for_its_pools_instead_of_printing_the_default_pool(capsys):
    """examples/cdk.json (a library app's: no "gpu-pool" settings) used to give the default
    pool `gpu`, which that app does not have (#29 item 4)."""
    path = ROOT / "examples" / "cdk.json"
    assert main(["smoke-test-manifest", "--cdk-json", str(path)]) == 2
    assert capsys.readouterr() == (
        "",
        f"gpu-pool: --cdk-json: '{path}' has no \"gpu-pool\" settings, so it is not the bundled "
        "app's: read your app's pools from its cloud assembly (--cdk-out DIR, after cdk synth) "
        "or a deployed stack (--stack NAME), or give the settings with --config FILE\n",
    )


def test_without_a_cdk_json_the_command_names_where_else_it_finds_pools(tmp_path, capsys):
    missing = tmp_path / "cdk.json"
    assert main(["plan", "--cdk-json", str(missing)]) == 2
    assert capsys.readouterr().err == (
        f"gpu-pool: --cdk-json: '{missing}' does not exist: run from the bundled app's "
        "directory, or read your app's pools from its cloud assembly (--cdk-out DIR, after cdk "
        "synth) or a deployed stack (--stack NAME)\n"
    )


@pytest.mark.parametrize(
    ("environment", "env_region", "missing", "region_option"),
    [
        ("aws://123456789012/us-east-1", None, "credentials", " --region us-east-1"),
        ("aws://unknown-account/unknown-region", None, "region", ""),
        # AWS_REGION, which the AWS and CDK CLIs read and botocore does not: with it set, what
        # is missing is the credentials (#39 item 3).
        ("aws://unknown-account/unknown-region", "eu-west-1", "credentials", ""),
    ],
)
def test_replacements_without_aws_points_at_its_offline_form(
    tmp_path, capsys, monkeypatch, environment, env_region, missing, region_option
):
    """#29 item 1: it used to say only "Unable to locate credentials". The stack's region,
    when the assembly names it, is in the get-template command (#29 review item 11)."""
    if env_region:
        monkeypatch.setenv("AWS_REGION", env_region)
    out = tmp_path / "cdk.out"
    out.mkdir()
    (out / "GpuPool.template.json").write_text('{"Resources": {}}')
    artifact = {
        "type": "aws:cloudformation:stack",
        "environment": environment,
        "properties": {"templateFile": "GpuPool.template.json"},
    }
    (out / "manifest.json").write_text(json.dumps({"artifacts": {"GpuPool": artifact}}))
    assert main(["replacements", "--cdk-out", str(out)]) == 2
    assert capsys.readouterr().err == (
        f"gpu-pool: replacements: no AWS {missing} to read the deployed GpuPool with "
        "(CloudFormation GetTemplate). Offline, compare two templates: where credentials exist, "
        f"save the deployed one (aws cloudformation get-template --stack-name GpuPool{region_option} "
        "--query TemplateBody --output json > deployed.json), then run: gpu-pool replacements "
        f"--deployed deployed.json --new {out}/GpuPool.template.json\n"
    )


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (
            ["--profile", "nosuch"],
            "--profile: no AWS profile named 'nosuch' in the AWS config (its profiles: dev, "
            "prod); aws configure list-profiles lists them",
        ),
        (
            ["--profile", "dev", "--account-profile", "123456789012=prdo"],
            "--account-profile: no AWS profile named 'prdo' in the AWS config (its profiles: "
            "dev, prod); aws configure list-profiles lists them",
        ),
    ],
)
def test_doctor_names_a_profile_the_aws_config_lacks(tmp_path, capsys, monkeypatch, options, message):
    """#39 item 3: `doctor --profile nosuch` reported each cluster unreachable and never named
    the bad profile. The AWS CLI's config file format: `[profile NAME]` sections (AWS CLI user
    guide, "Configuration and credential file settings")."""
    config = tmp_path / "config"
    config.write_text("[profile dev]\nregion = us-east-1\n[profile prod]\nregion = us-west-2\n")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(config))
    out = tmp_path / "cdk.out"
    out.mkdir()
    (out / "GpuPool.template.json").write_text('{"Resources": {}}')
    artifact = {
        "type": "aws:cloudformation:stack",
        "environment": "aws://unknown-account/unknown-region",
        "properties": {"templateFile": "GpuPool.template.json"},
    }
    (out / "manifest.json").write_text(json.dumps({"artifacts": {"GpuPool": artifact}}))
    assert main(["doctor", "--cdk-out", str(out), *options]) == 2
    assert capsys.readouterr().err == f"gpu-pool: {message}\n"


def test_a_mistyped_option_is_named_with_the_closest_one_of_its_verb(capsys):
    """argparse names only the unknown option; the verb's closest is what the user meant
    (#48 item 8)."""
    with pytest.raises(SystemExit) as exit_status:
        main(["plan", "--ouput", "json"])
    assert exit_status.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        "gpu-pool plan: error: unrecognized arguments: --ouput json; --ouput: did you mean "
        "--output?"
    )


def test_an_option_close_to_none_is_named_alone(capsys):
    with pytest.raises(SystemExit):
        main(["doctor", "--zzz=1"])
    assert capsys.readouterr().err.splitlines()[-1] == (
        "gpu-pool doctor: error: unrecognized arguments: --zzz=1"
    )
