"""PipelineSettings (docs/pipeline.md): each bad input is one line naming the setting and what
would be valid; waves_of places every cluster in exactly one wave, in order."""

import pytest

from gpu_pool.settings import AppSettings, ConfigError
from gpu_pool.settings.pipeline import PipelineSettings

CONNECTION = (
    "arn:aws:codeconnections:us-east-1:111111111111:connection/"
    "0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"
)
SOURCE = {"connection_arn": CONNECTION, "repository": "acme/gpu-fleet"}
VALID = {"account": "111111111111", "region": "us-east-1", "source": SOURCE}


def message(**settings):
    with pytest.raises(ConfigError) as err:
        PipelineSettings(**{**VALID, **settings})
    return str(err.value)


def cluster(stack_name, region, account="222222222222", **settings):
    return AppSettings(stack_name=stack_name, account=account, region=region, **settings)


FLEET = [
    cluster("Use1", "us-east-1"),
    cluster("Euw1", "eu-west-1"),
    cluster("Usw2a", "us-west-2"),
    cluster("Usw2b", "us-west-2"),
]


def test_defaults():
    settings = PipelineSettings(**VALID)
    assert (settings.stack_name, settings.directory, settings.source.branch) == (
        "GpuPoolPipeline",
        ".",
        "main",
    )
    assert settings.install_commands == ["python -m pip install -r requirements.txt .", "npm ci"]
    assert settings.synth_commands == ["npx cdk synth"]
    assert (settings.verify, settings.verify_namespace, settings.self_mutation) == (
        True,
        "default",
        True,
    )


def test_the_older_codestar_connections_arn_is_accepted():
    arn = CONNECTION.replace("codeconnections", "codestar-connections")
    assert PipelineSettings(**{**VALID, "source": {**SOURCE, "connection_arn": arn}})


@pytest.mark.parametrize(
    ("settings", "expected"),
    [
        (
            {"account": "1111"},
            "account: '1111' is not a 12-digit AWS account id",
        ),
        (
            {"region": "useast1"},
            "region: 'useast1' is not an AWS region name such as us-east-1",
        ),
        (
            {"source": {**SOURCE, "connection_arn": "arn:aws:codeconnections:us-east-1:1:x"}},
            "source.connection_arn: 'arn:aws:codeconnections:us-east-1:1:x' is not a connection "
            "ARN (arn:aws:codeconnections:<region>:<account>:connection/<uuid>, or the older "
            "codestar-connections form)",
        ),
        (
            {"source": {**SOURCE, "repository": "gpu-fleet"}},
            "source.repository: 'gpu-fleet' is not a repository as owner/name, e.g. "
            "acme/gpu-fleet",
        ),
        ({"source": {**SOURCE, "branch": ""}}, "source.branch: must not be empty (got '')"),
        (
            {"source": {"repository": "acme/gpu-fleet"}},
            "source.connection_arn: required setting is missing",
        ),
        (
            {"directory": "/abs"},
            "directory: '/abs' is not a directory of the repository, relative (e.g. . or "
            "infra/gpu)",
        ),
        ({"synth_commands": []}, "synth_commands: must not be empty (got [])"),
        (
            {"synth_commands": ["  "]},
            "synth_commands[0]: '  ' is not a shell command (not blank)",
        ),
        ({"waves": [[]]}, "waves[0]: must not be empty (got [])"),
        (
            {"waves": [["us-east-1"], ["eu-west-1", "us-east-1"]]},
            "waves: [1][1]: 'us-east-1' is already in an earlier wave; name each Region or "
            "stack once",
        ),
        (
            {"waves": [["us east 1"]]},
            "waves[0][0]: 'us east 1' is not a Region name such as us-east-1, or a cluster's "
            "stack_name",
        ),
        (
            {"verify_namespace": "Smoke_Test"},
            "verify_namespace: 'Smoke_Test' is not a Kubernetes namespace name (lowercase "
            "letters, digits and '-', at most 63)",
        ),
        ({"verify": "yes"}, "verify: must be true or false (got 'yes')"),
        (
            {"self_mutate": False},
            "self_mutate: unknown setting; did you mean 'self_mutation'? (valid: account, "
            "region, stack_name, source, directory, install_commands, synth_commands, waves, "
            "verify, verify_namespace, verify_install_commands, self_mutation)",
        ),
    ],
)
def test_each_bad_setting_is_one_line(settings, expected):
    assert message(**settings) == expected


def names(waves):
    return [[c.stack_name for c in wave] for wave in waves]


def test_waves_by_region_and_by_stack_in_the_order_given():
    settings = PipelineSettings(**VALID, waves=[["Usw2a"], ["us-east-1", "eu-west-1", "Usw2b"]])
    assert names(settings.waves_of(FLEET)) == [["Usw2a"], ["Use1", "Euw1", "Usw2b"]]


def test_no_waves_means_one_wave_per_region_in_the_clusters_order():
    assert names(PipelineSettings(**VALID).waves_of(FLEET)) == [
        ["Use1"],
        ["Euw1"],
        ["Usw2a", "Usw2b"],
    ]


def waves_message(clusters, **settings):
    with pytest.raises(ConfigError) as err:
        PipelineSettings(**{**VALID, **settings}).waves_of(clusters)
    return str(err.value)


def test_a_selector_that_names_no_cluster():
    assert waves_message(FLEET, waves=[["us-east-1", "eu-west-1", "us-west-2", "ap-south-1"]]) == (
        "pipeline.waves[0][3]: 'ap-south-1' is neither the Region nor the stack_name of a "
        "cluster (Regions: us-east-1, eu-west-1, us-west-2; stacks: Use1, Euw1, Usw2a, Usw2b)"
    )


def test_a_cluster_in_two_waves_and_a_cluster_in_none():
    assert waves_message(FLEET, waves=[["us-west-2"], ["Usw2b", "us-east-1"]]) == (
        "pipeline.waves[1][0]: cluster 'Usw2b' is already in wave 0; a cluster deploys in one "
        "wave\n"
        "pipeline.waves: cluster 'Euw1' (eu-west-1) is in no wave: add its Region or its "
        "stack_name to one"
    )


def test_clusters_the_pipeline_cannot_deploy_or_verify():
    clusters = [
        AppSettings(stack_name="Agnostic"),
        cluster("Twice", "us-east-1"),
        cluster("Twice", "eu-west-1"),
        cluster("Private", "us-east-1", cluster={"endpoint_access": "private"}),
    ]
    assert waves_message(clusters) == (
        "pipeline: two clusters have stack_name 'Twice'; each pipeline stage is named by it: "
        "give each its own\n"
        "pipeline: cluster 'Agnostic' needs account and region: the pipeline deploys each "
        "cluster into its own environment\n"
        "pipeline: cluster 'Private' has endpoint_access private, which the verify step "
        "(CodeBuild, outside the cluster's VPC) cannot reach: set verify: false, or "
        "public_and_private"
    )
    # Without the verify step a private endpoint is no obstacle.
    assert names(PipelineSettings(**VALID, verify=False).waves_of(clusters[3:])) == [["Private"]]


def test_no_clusters():
    assert waves_message([]) == "pipeline: no clusters to deploy; give the fleet at least one"
