"""The command's tests see no AWS account of the machine they run on."""

import os

import pytest


@pytest.fixture(autouse=True)
def no_ambient_aws(monkeypatch):
    """A test that passes no `aws` factory gets the command's own boto3 session: with the
    runner's credentials (environment, ~/.aws, instance metadata) it would call real AWS and
    not see the "no AWS credentials" paths the tests expect. A test that wants AWS passes a
    stubbed factory or the local API (the `aws_api` fixture, which sets its own variables)."""
    for name in [n for n in os.environ if n.startswith("AWS_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", os.devnull)
    monkeypatch.setenv("AWS_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")


@pytest.fixture(autouse=True)
def pinned_health_clock(monkeypatch):
    """The command ages node conditions against tests/support/node_health.NOW, the time the
    fake nodes' conditions are dated from, not against the wall clock: a condition built at
    collection would otherwise read a minute older when its test runs late."""
    from gpu_pool.cli.inspect import health
    from tests.support.node_health import NOW

    monkeypatch.setattr(health, "utc_now", lambda: NOW)
