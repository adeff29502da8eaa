"""Settings: cdk.json context, `-c config=FILE` merged over it, and one clear line per mistake."""

import json

import pytest

from gpu_pool.settings import CONTEXT_KEY, ConfigError, load_settings
from tests.support.paths import ROOT


def test_cdk_json_defaults_are_valid_and_match_the_models():
    context = json.loads((ROOT / "cdk.json").read_text())["context"][CONTEXT_KEY]
    settings = load_settings(context, None)
    assert settings.cluster.kubernetes_version == "1.35"
    assert settings.pool.instance_types == ["g5.xlarge"]
    assert (settings.pool.min_size, settings.pool.desired_size, settings.pool.max_size) == (0, 0, 8)


@pytest.mark.parametrize("suffix", [".yaml", ".json"])
def test_config_file_merges_over_context(tmp_path, suffix):
    data = {"region": "us-west-2", "pool": {"max_size": 2, "labels": {"team": "ml"}}}
    path = tmp_path / f"prod{suffix}"
    path.write_text(json.dumps(data))  # JSON is valid YAML too
    settings = load_settings({"pool": {"max_size": 4, "disk_size_gib": 300}}, str(path))
    assert settings.region == "us-west-2"
    assert settings.pool.max_size == 2  # the file wins
    assert settings.pool.disk_size_gib == 300  # context kept where the file is silent
    assert settings.pool.labels == {"team": "ml"}


@pytest.mark.parametrize(
    ("pool", "sizes"),
    [
        # desired_size follows min_size unless set: a pool that keeps nodes starts with them
        # (a file with only `min_size: 1` was refused for the desired 0 it never wrote).
        ({"min_size": 1}, (1, 1, 8)),
        ({"min_size": 2, "max_size": 4}, (2, 2, 4)),
        ({"min_size": 1, "desired_size": 3}, (1, 3, 8)),
        ({"max_size": 3}, (0, 0, 3)),
    ],
)
def test_desired_size_follows_min_size_unless_set(tmp_path, pool, sizes):
    context = json.loads((ROOT / "cdk.json").read_text())["context"][CONTEXT_KEY]
    path = tmp_path / "pool.yaml"
    path.write_text(json.dumps({"pools": {"a": pool}}))
    (settings,) = load_settings(context, str(path)).pools.values()
    assert (settings.min_size, settings.desired_size, settings.max_size) == sizes
    path.write_text(json.dumps({"pool": pool}))
    settings = load_settings(context, str(path)).pool
    assert (settings.min_size, settings.desired_size, settings.max_size) == sizes


@pytest.mark.parametrize(
    ("context", "message"),
    [
        ({"pool": {"max_sise": 3}}, "pool.max_sise: unknown setting; did you mean 'max_size'?"),
        ({"clustr": {}}, "clustr: unknown setting; did you mean 'cluster'?"),
        ({"pool": {"max_size": "3"}}, "pool.max_size: must be a whole number (got '3')"),
        (
            {"pool": {"instance_types": "g5.xlarge"}},
            "pool.instance_types: must be a list (got 'g5.xlarge')",
        ),
        (
            {"pool": {"taints": [{"key": "k", "effect": "NO_SCHEDULE"}]}},
            "pool.taints[0].effect: must be one of 'NoSchedule', 'NoExecute' or 'PreferNoSchedule' "
            "(got 'NO_SCHEDULE')",
        ),
        (
            {
                "cluster": {
                    "existing": {"kubectl_provider_role_arn": "arn:aws:iam::123456789012:role/x"}
                }
            },
            "cluster.existing.kubectl_provider_role_arn is set without "
            "kubectl_provider_service_token: set both (a kubectl provider of your own) or "
            "neither (the stack creates its own)",
        ),
        (
            {"region": "Frankfurt"},
            "region: 'Frankfurt' is not an AWS region name such as us-east-1",
        ),
        (
            {"cluster": {"system_nodes": {"instance_type": "t3.mediun"}}},
            "cluster.system_nodes.instance_type: 't3.mediun' is not an EC2 instance type: "
            "family.size, e.g. t3.medium (sizes nano, micro, small, medium, large, xlarge, "
            "2xlarge ... , metal)",
        ),
        (
            {"autoscaler": {"scale_down_unneeded_time": "5 minutes"}},
            "autoscaler.scale_down_unneeded_time: '5 minutes' is not a duration Cluster "
            "Autoscaler takes, such as 10m, 90s or 1m30s",
        ),
        (
            {
                "cluster": {
                    "existing": {
                        "kubectl_provider_service_token": "arn:aws:lambda:eu-west-1:123456789012:function:k",
                        "kubectl_provider_role_arn": "arn:aws:iam::123456789012:role/k",
                        "subnets_by_zone": {"eu-west-1a": ["subnet-1"]},
                    }
                }
            },
            "cluster.existing.subnets_by_zone.eu-west-1a[0]: 'subnet-1' is not a subnet id (subnet- "
            "and 8 or 17 hex digits)",
        ),
        (
            {"pool": {"capacity_reservation": {"type": "odcr", "id": "cr-123"}}},
            "pool.capacity_reservation.id: 'cr-123' is not a capacity reservation id (cr- and 17 "
            "hex digits)",
        ),
        (
            {"pool": {"capacity_reservation": {"type": "capacity-block"}}},
            "pool.capacity_reservation.id: required with type capacity-block (cr- and 17 hex "
            "digits)",
        ),
        (
            {
                "pool": {
                    "capacity_reservation": {
                        "type": "capacity-block",
                        "id": "cr-0123456789abcdef0",
                        "preference": "open",
                    }
                }
            },
            "pool.capacity_reservation.preference: odcr only; a capacity-block is named by its id "
            "alone (fall back through a second, on-demand pool)",
        ),
        (
            {"pool": {"capacity_reservation": {"type": "odcr"}}},
            "pool.capacity_reservation.id: an odcr names exactly one of id, resource_group_arn or "
            "preference (got none)",
        ),
        (
            {
                "pool": {
                    "capacity_reservation": {
                        "type": "odcr",
                        "id": "cr-0123456789abcdef0",
                        "preference": "open",
                    }
                }
            },
            "pool.capacity_reservation.preference: an odcr names exactly one of id, "
            "resource_group_arn or preference (got id, preference)",
        ),
        ([], "context 'gpu-pool' must be a mapping of settings"),
    ],
)
def test_mistakes_name_the_setting(context, message):
    with pytest.raises(ConfigError) as err:
        load_settings(context, None)
    assert str(err.value).startswith(message)


def test_unknown_key_lists_the_valid_ones():
    with pytest.raises(ConfigError) as err:
        load_settings({"autoscaler": {"expandr": "random"}}, None)
    assert (
        "(valid: enabled, scale_down_unneeded_time, scale_down_delay_after_add, expander,"
        in str(err.value)
    )


def test_missing_config_file(tmp_path):
    with pytest.raises(ConfigError, match=r"^config: file '.*nope.yaml' does not exist$"):
        load_settings({}, str(tmp_path / "nope.yaml"))


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("bad.yaml", "pool: [unclosed", "config: '{path}' is not valid YAML: "),
        ("bad.json", "{'pool': 1}", "config: '{path}' is not valid JSON: "),
        ("list.yaml", "- a\n- b\n", "config: '{path}' must hold a mapping of settings at the top"),
    ],
)
def test_unreadable_config_files(tmp_path, name, text, message):
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(ConfigError) as err:
        load_settings({}, str(path))
    assert str(err.value).startswith(message.format(path=path))


def test_a_files_pools_replace_the_contexts_one_pool_form(tmp_path):
    path = tmp_path / "cluster.yaml"
    path.write_text("pools:\n  training:\n    instance_types: [p5.48xlarge]\n")
    settings = load_settings({"pool": {"max_size": 4}}, str(path))
    assert settings.pool is None
    assert [(p, s.name, s.instance_types) for p, s in settings.pool_settings()] == [
        ("pools.training", "training", ["p5.48xlarge"])
    ]


@pytest.mark.parametrize(
    ("context", "message"),
    [
        (
            {"pool": {}, "pools": {"a": {}}},
            "pool and pools are both set; use `pool` for one pool or `pools` (name -> settings) "
            "for several, not both",
        ),
        (
            {"pools": {"a": {"name": "b"}}},
            "pools.a.name: 'b' differs from its key 'a'; in `pools` the key is the name: drop `name`",
        ),
        (
            {"pools": {}},
            "pools: is empty: name at least one pool (name: its settings), or remove `pools` for the one default pool",
        ),
        (
            {"pools": {"Big": {}}},
            "pools.Big: 'Big' is not a pool name: a lowercase letter, then up to 20 lowercase "
            "letters, digits or '-', ending in a letter or digit (it names a Helm release and is "
            "a label value)",
        ),
        # Helm refuses a release name ending in '-' (helm pkg/chartutil/validate_name.go), and
        # Kubernetes a label value ending so.
        (
            {"pool": {"name": "gpu-"}},
            "pool.name: 'gpu-' is not a pool name: a lowercase letter, then up to 20 lowercase "
            "letters, digits or '-', ending in a letter or digit (it names a Helm release and is "
            "a label value)",
        ),
        (
            {"autoscaler": {"expander": "price"}},
            "autoscaler.expander: 'price' makes Cluster Autoscaler exit at start on AWS (its AWS "
            "provider has no pricing); use 'priority', which prefers fewer GPUs, then cheaper "
            "families",
        ),
    ],
    ids=[
        "both-forms",
        "name-differs-from-key",
        "no-pools",
        "bad-pool-name",
        "trailing-dash",
        "price-expander",
    ],
)
def test_pool_forms_and_expander_errors(context, message):
    with pytest.raises(ConfigError) as err:
        load_settings(context, None)
    assert str(err.value) == message


@pytest.mark.parametrize("duration", ["1m30s", "90s", "1.5h", "10m"])
def test_durations_cluster_autoscaler_takes_are_accepted(duration):
    settings = load_settings({"autoscaler": {"scale_down_delay_after_add": duration}}, None)
    assert settings.autoscaler.scale_down_delay_after_add == duration


@pytest.mark.parametrize(
    ("keys", "message"),
    [
        (["confg"], "-c confg: unknown context key; did you mean 'config'?"),
        (["Config"], "-c Config: unknown context key; did you mean 'config'?"),
        (["gpu_pool"], "-c gpu_pool: unknown context key; did you mean 'gpu-pool'?"),
        # gpu-pool's own keys, CDK's namespaced ones and a user's unrelated ones pass.
        (["config", "gpu-pool", "gpu-pool:region-lookups", "@aws-cdk/core:target", "team"], None),
    ],
)
def test_context_keys_a_letter_off_ours_are_refused(keys, message):
    from gpu_pool.settings import check_context_keys

    if message is None:
        check_context_keys(keys)
        return
    with pytest.raises(ConfigError) as err:
        check_context_keys(keys)
    assert str(err.value).startswith(message)
