"""Several clusters from one config (gpu_pool/settings/fleet.py, docs/fleet.md): a directory of
cluster files and a fleet file, their stack names, and every file's mistakes in one error."""

from __future__ import annotations

import json
import random

import pytest

from gpu_pool.settings import (
    AppSettings,
    ConfigError,
    Fleet,
    load_fleet,
    load_settings,
    load_settings_with_warnings,
)
from tests.support import rules
from tests.support.docs_examples import APP_CONTEXT
from tests.support.messages import POOL_KEYS

ACCOUNT_A, ACCOUNT_B = "111111111111", "222222222222"


def _write(folder, files: dict[str, str]):
    folder.mkdir(exist_ok=True)
    for name, text in files.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


def _error(context, config) -> list[str]:
    with pytest.raises(ConfigError) as raised:
        load_fleet(context, str(config))
    return str(raised.value).splitlines()


def _names(fleet: Fleet) -> list[tuple[str, str]]:
    return [(c.source, c.stack_name) for c in fleet.clusters]


# --- a directory: one cluster per file --------------------------------------------------------


def test_two_broken_files_are_both_named_and_the_good_one_hides_neither(tmp_path):
    folder = _write(
        tmp_path / "clusters",
        {
            "a-good.yaml": f"account: '{ACCOUNT_A}'\nregion: us-east-1\ncluster: {{name: a}}\n",
            "b-typo.yaml": "region: eu-west-1\npool:\n  max_sise: 3\n",
            "c-broken.yml": "region: us-west-2\npool: [\n",
            "d-region.json": json.dumps({"region": "Europe", "cluster": {"name": "d"}}),
        },
    )
    assert _error(APP_CONTEXT, folder) == [
        f"{folder / 'b-typo.yaml'}: pool.max_sise: unknown setting; did you mean 'max_size'? "
        f"(valid: {POOL_KEYS})",
        f"config: '{folder / 'c-broken.yml'}' is not valid YAML: expected the node content, but "
        "found '<stream end>' (line 3, column 1)",
        f"{folder / 'd-region.json'}: region: 'Europe' is not an AWS region name such as "
        "us-east-1",
    ]


def test_each_file_is_a_cluster_over_cdk_json_named_by_its_cluster_and_region(tmp_path):
    folder = _write(
        tmp_path / "fleet",
        {
            "us.yaml": f"account: '{ACCOUNT_A}'\nregion: us-east-1\n"
            "pools:\n  serve: {instance_types: [g6.xlarge]}\n",
            "eu.yml": f"account: '{ACCOUNT_B}'\nregion: eu-west-1\ncluster: {{name: ml_eu}}\n",
            "lab.json": json.dumps({"cluster": {"name": "lab"}}),
            "README.md": "not a cluster",
            ".hidden.yaml": "pool: [",  # an editor's or a tool's file, not a cluster
        },
    )
    (folder / "nested.yaml").mkdir()  # not recursive
    fleet = load_fleet(APP_CONTEXT, str(folder))
    assert _names(fleet) == [
        (str(folder / "eu.yml"), "GpuPool-ml-eu-eu-west-1"),
        (str(folder / "lab.json"), "GpuPool-lab"),  # environment-agnostic: no Region to name
        (str(folder / "us.yaml"), "GpuPool-gpu-pool-us-east-1"),
    ]
    eu, lab, us = (c.settings for c in fleet.clusters)
    # Merged over cdk.json as a single file is: its pool, version and autoscaler apply.
    # The settings carry the stack name the cluster deploys as.
    alone = load_settings(APP_CONTEXT, str(folder / "eu.yml"))
    assert eu == alone.model_copy(update={"stack_name": "GpuPool-ml-eu-eu-west-1"})
    assert eu.cluster.kubernetes_version == APP_CONTEXT["cluster"]["kubernetes_version"]
    assert (us.pool, list(us.pools or {})) == (None, ["serve"])  # `pools` replaces `pool`
    assert (lab.account, lab.region) == (None, None)


def test_adding_or_renaming_files_keeps_every_other_clusters_stack_name(tmp_path):
    us = f"account: '{ACCOUNT_A}'\nregion: us-east-1\n"
    eu = f"account: '{ACCOUNT_A}'\nregion: eu-west-1\n"
    before = load_fleet(APP_CONTEXT, str(_write(tmp_path / "one", {"b.yaml": us, "c.yaml": eu})))
    after = load_fleet(
        APP_CONTEXT,
        str(
            _write(
                tmp_path / "two",
                {"a.yaml": eu.replace("eu-west-1", "ap-south-1"), "z.yaml": us, "b.yaml": eu},
            )
        ),
    )
    names_before = {c.settings.region: c.stack_name for c in before.clusters}
    names_after = {c.settings.region: c.stack_name for c in after.clusters}
    assert names_before == {
        "us-east-1": "GpuPool-gpu-pool-us-east-1",
        "eu-west-1": "GpuPool-gpu-pool-eu-west-1",
    }
    assert names_after == {**names_before, "ap-south-1": "GpuPool-gpu-pool-ap-south-1"}


def test_a_stack_name_the_clusters_own_file_sets_is_kept_as_it_is(tmp_path):
    # A stack deployed from a single file joins the fleet without being renamed (replaced).
    folder = _write(
        tmp_path / "fleet",
        {
            "old.yaml": f"stack_name: GpuPoolProd\naccount: '{ACCOUNT_A}'\nregion: us-east-1\n",
            "new.yaml": f"account: '{ACCOUNT_A}'\nregion: us-west-2\n",
        },
    )
    assert [c.stack_name for c in load_fleet(APP_CONTEXT, str(folder)).clusters] == [
        "GpuPool-gpu-pool-us-west-2",
        "GpuPoolProd",
    ]


def test_one_cluster_twice_names_both_files(tmp_path):
    same = f"account: '{ACCOUNT_A}'\nregion: us-east-1\ncluster: {{name: prod}}\n"
    folder = _write(
        tmp_path / "fleet",
        {"prod.yaml": same, "prod-copy.yaml": same + "stack_name: Other\n"},
    )
    assert _error(APP_CONTEXT, folder) == [
        f"cluster 'prod' in account {ACCOUNT_A}, Region us-east-1 twice: "
        f"{folder / 'prod-copy.yaml'} and {folder / 'prod.yaml'}; each cluster once (another "
        "cluster.name, account or region)"
    ]


def test_two_clusters_with_one_stack_name_name_both_files(tmp_path):
    # `_` becomes `-` in a stack name: two clusters that differ only there collide.
    folder = _write(
        tmp_path / "fleet",
        {
            "a.yaml": "region: us-east-1\ncluster: {name: ml_prod}\n",
            "b.yaml": "region: us-east-1\ncluster: {name: ml-prod}\n",
        },
    )
    assert _error(APP_CONTEXT, folder) == [
        f"stack name 'GpuPool-ml-prod-us-east-1' twice: {folder / 'a.yaml'} and "
        f"{folder / 'b.yaml'}; each cluster's stack needs a name of its own: another "
        "cluster.name (the same name in one Region of two accounts collides), or set "
        "`stack_name` in one of them"
    ]


def test_a_stack_name_past_cloudformations_limit_names_the_file(tmp_path):
    name = "c" * 100  # the longest cluster name EKS takes
    folder = _write(tmp_path / "fleet", {"long.yaml": f"region: us-east-1\ncluster: {{name: {name}}}\n"})
    context = {**APP_CONTEXT, "stack_name": "GpuPoolsOfTheResearchPlatform"}
    assert _error(context, folder) == [
        f"{folder / 'long.yaml'}: stack name 'GpuPoolsOfTheResearchPlatform-{name}-us-east-1' is "
        "140 characters, more than CloudFormation's 128: shorten stack_name or cluster.name, or "
        "set the cluster's own stack_name"
    ]


def test_an_empty_file_in_a_directory_is_a_warning_naming_it(tmp_path):
    folder = _write(tmp_path / "fleet", {"a.yaml": "region: us-east-1\n", "b.yaml": "# todo\n"})
    fleet = load_fleet(APP_CONTEXT, str(folder))
    assert [str(w) for w in rules.documented(fleet.warnings)] == [
        f"config: '{folder / 'b.yaml'}' holds no settings (empty, or every line commented out): "
        "the cdk.json context and the defaults apply; is it the right file?"
    ]


@pytest.mark.parametrize(
    ("files", "message"),
    [
        ({}, "config: directory '{folder}' holds no *.yaml, *.yml or *.json file; put each "
         "cluster's settings in one"),
        ({"notes.txt": "region: us-east-1"}, "config: directory '{folder}' holds no *.yaml, "
         "*.yml or *.json file; put each cluster's settings in one"),
        (
            {"fleet.yaml": "clusters: [{region: us-east-1}]\n"},
            "config: '{folder}/fleet.yaml' is a fleet file (a top-level `clusters:`); each file "
            "of a directory is one cluster's settings: give the fleet file as -c config=FILE",
        ),
    ],
    ids=["empty", "no-config-files", "a-fleet-file-inside"],
)
def test_a_directory_without_cluster_files_says_so(tmp_path, files, message):
    folder = _write(tmp_path / "fleet", files)
    assert _error(APP_CONTEXT, folder) == [message.format(folder=folder)]


def test_an_unreadable_file_is_named_and_the_others_still_checked(tmp_path):
    folder = _write(tmp_path / "fleet", {"ok.yaml": "region: [us-east-1]\n"})
    (folder / "gone.yaml").symlink_to(folder / "missing.yaml")
    assert _error(APP_CONTEXT, folder) == [
        f"config: file '{folder / 'gone.yaml'}' does not exist",
        f"{folder / 'ok.yaml'}: region: must be text (got ['us-east-1'])",
    ]


# --- a fleet file: clusters over defaults --------------------------------------------------------


FLEET = f"""\
defaults:
  account: '{ACCOUNT_A}'
  cluster: {{kubernetes_version: '1.34', endpoint_access: private}}
  pool: {{instance_types: [g6.xlarge], max_size: 4}}
clusters:
  - region: us-east-1
  - region: eu-west-1
    cluster: {{name: inference}}
    pool: {{max_size: 16}}
  - region: us-west-2
    account: '{ACCOUNT_B}'
    pools:
      train: {{instance_types: [p5.48xlarge]}}
  - file: teams/research.yaml
    region: ap-northeast-1
"""
RESEARCH = "cluster: {name: research, kubernetes_version: '1.35'}\npool: {max_size: 2}\n"


def test_defaults_merge_under_each_entry_and_the_entry_wins(tmp_path):
    (tmp_path / "teams").mkdir()
    (tmp_path / "teams" / "research.yaml").write_text(RESEARCH)
    (tmp_path / "fleet.yaml").write_text(FLEET)
    config = str(tmp_path / "fleet.yaml")
    fleet = load_fleet(APP_CONTEXT, config)
    assert _names(fleet) == [
        (f"{config} clusters[0]", "GpuPool-gpu-pool-us-east-1"),
        (f"{config} clusters[1]", "GpuPool-inference-eu-west-1"),
        (f"{config} clusters[2]", "GpuPool-gpu-pool-us-west-2"),
        (f"{config} clusters[3] ({tmp_path / 'teams' / 'research.yaml'})",
         "GpuPool-research-ap-northeast-1"),
    ]
    us, eu, west, research = (c.settings for c in fleet.clusters)
    assert [(s.account, s.region) for s in (us, eu, west, research)] == [
        (ACCOUNT_A, "us-east-1"),
        (ACCOUNT_A, "eu-west-1"),
        (ACCOUNT_B, "us-west-2"),
        (ACCOUNT_A, "ap-northeast-1"),
    ]
    # Mappings merge key by key: an entry's cluster name keeps the defaults' version and access.
    assert [(s.cluster.name, s.cluster.kubernetes_version, s.cluster.endpoint_access)
            for s in (us, eu, research)] == [
        ("gpu-pool", "1.34", "private"),
        ("inference", "1.34", "private"),
        ("research", "1.35", "private"),  # the file over the defaults
    ]
    assert [(s.pool.instance_types, s.pool.max_size) for s in (us, eu, research)] == [
        (["g6.xlarge"], 4),
        (["g6.xlarge"], 16),
        (["g6.xlarge"], 2),
    ]
    # An entry's `pools` replaces the defaults' one-pool form, as a file's does cdk.json's.
    assert (west.pool, list(west.pools or {})) == (None, ["train"])
    # What is set nowhere comes from cdk.json (its autoscaler) and the defaults.
    assert us.autoscaler.enabled is True
    assert us.stack_name == f"{APP_CONTEXT['stack_name']}-{us.cluster.name}-{us.region}"


def test_a_fleet_entrys_settings_are_merged_over_its_file(tmp_path):
    (tmp_path / "base.yaml").write_text(f"account: '{ACCOUNT_A}'\nregion: us-east-1\n")
    (tmp_path / "fleet.yaml").write_text(
        "clusters:\n  - file: base.yaml\n  - {file: base.yaml, region: us-west-2}\n"
    )
    fleet = load_fleet(APP_CONTEXT, str(tmp_path / "fleet.yaml"))
    assert [(c.settings.account, c.settings.region) for c in fleet.clusters] == [
        (ACCOUNT_A, "us-east-1"),
        (ACCOUNT_A, "us-west-2"),
    ]


def test_every_entrys_mistakes_are_reported_each_led_by_its_entry(tmp_path):
    (tmp_path / "bad.yaml").write_bytes(b"\xff\xfe\x00")
    (tmp_path / "fleet.yaml").write_text(
        "defaults: {region: us-east-1}\n"
        "clusters:\n"
        "  - cluster: {name: a}\n"
        "    region: Europe\n"
        "  - cluster: {name: b}\n"
        "  - file: bad.yaml\n"
        "  - file: missing.yaml\n"
        "  - file: 7\n"
        "  - cluster: {name: b}\n"
    )
    config = tmp_path / "fleet.yaml"
    assert _error(APP_CONTEXT, config) == [
        f"{config} clusters[0]: region: 'Europe' is not an AWS region name such as us-east-1",
        f"{config} clusters[2]: config: '{tmp_path / 'bad.yaml'}' is not UTF-8 text (nor UTF-16 "
        "with a byte-order mark); save it as UTF-8 YAML",
        f"{config} clusters[3]: config: file '{tmp_path / 'missing.yaml'}' does not exist",
        f"{config} clusters[4].file: must be the path of a cluster's settings file, relative to "
        "the fleet file (got 7)",
        "cluster 'b' in account (of the deploy environment), Region us-east-1 twice: "
        f"{config} clusters[1] and {config} clusters[5]; each cluster once (another "
        "cluster.name, account or region)",
    ]


def test_two_clusters_of_the_default_name_are_named_as_that_default(tmp_path):
    """Review nit: a cluster.name no file, entry or context sets read as if one had chosen it
    (fails before: no mention of the default)."""
    config = tmp_path / "fleet.yaml"
    config.write_text("clusters:\n  - {region: us-east-1}\n  - {region: us-east-1}\n")
    assert _error({}, config) == [
        "cluster 'gpu-pool' (the default cluster.name: none is set) in account (of the deploy "
        f"environment), Region us-east-1 twice: {config} clusters[0] and {config} clusters[1]; "
        "each cluster once (another cluster.name, account or region)",
    ]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "clusters: []\n",
            "clusters: is empty: list at least one cluster (its settings, or {file: path})",
        ),
        (
            "clusters: {name: prod}\n",
            "clusters: must be a list of clusters, each its settings or {file: path} (got a "
            "mapping; one cluster's own settings are under `cluster:`)",
        ),
        ("clusters: [7]\n", "clusters[0]: must be a mapping (key: value) or text (got 7)"),
        (
            "clusters: [{}]\nregion: us-east-1\n",
            "region: a cluster setting at the fleet file's top level: put it under `defaults:` "
            "(every cluster) or in a cluster's entry",
        ),
        (
            "clusters: [{}]\ndefault: {}\n",
            "default: unknown setting; did you mean 'defaults'? (valid: clusters, defaults, "
            "pipeline)",
        ),
        ("clusters: [{}]\ndefaults: [a]\n", "defaults: must be a mapping (key: value) (got ['a'])"),
    ],
    ids=["empty", "a-mapping", "a-number", "a-setting-on-top", "a-typo", "defaults-a-list"],
)
def test_a_malformed_fleet_file_says_what_to_write(tmp_path, text, message):
    config = tmp_path / "fleet.yaml"
    config.write_text(text)
    assert _error(APP_CONTEXT, config) == [f"{config}: {message}"]


def test_fleets_do_not_nest(tmp_path):
    (tmp_path / "inner.yaml").write_text("clusters: [{region: us-east-1}]\n")
    (tmp_path / "fleet.yaml").write_text("clusters: [{file: inner.yaml}]\n")
    config = tmp_path / "fleet.yaml"
    assert _error(APP_CONTEXT, config) == [
        f"{config} clusters[0]: '{tmp_path / 'inner.yaml'}' is a fleet file (a top-level "
        "`clusters:`); fleets do not nest: name a cluster's settings file"
    ]


# --- one file, as before ----------------------------------------------------------------------


def test_a_single_file_is_one_cluster_with_its_stack_name_and_unprefixed_messages(tmp_path):
    config = tmp_path / "prod.yaml"
    config.write_text("stack_name: Prod\nregion: us-east-1\n")
    (cluster,) = load_fleet(APP_CONTEXT, str(config)).clusters
    assert (cluster.stack_name, cluster.source) == ("Prod", "")
    assert cluster.settings == load_settings(APP_CONTEXT, str(config))
    (default,) = load_fleet(APP_CONTEXT, None).clusters
    assert default.stack_name == APP_CONTEXT["stack_name"]
    config.write_text("region: Europe\n")
    assert _error(APP_CONTEXT, config) == [
        "region: 'Europe' is not an AWS region name such as us-east-1"
    ]


def test_load_settings_points_a_directory_or_a_fleet_file_to_load_fleet(tmp_path):
    (tmp_path / "fleet.yaml").write_text("clusters: [{region: us-east-1}]\n")
    for config, message in (
        (tmp_path, f"config: '{tmp_path}' is a directory of cluster files (a fleet): read it "
         "with load_fleet"),
        (tmp_path / "fleet.yaml", f"config: '{tmp_path / 'fleet.yaml'}' is a fleet file (a "
         "top-level `clusters:`): read it with load_fleet"),
    ):
        with pytest.raises(ConfigError) as raised:
            load_settings_with_warnings(APP_CONTEXT, str(config))
        assert str(raised.value) == message


def test_any_bytes_in_a_fleets_files_end_in_settings_or_a_config_error(tmp_path):
    rng = random.Random(31)
    valid = f"clusters:\n  - {{region: us-east-1}}\n  - file: b.yaml\ndefaults: {{account: '{ACCOUNT_A}'}}\n"
    for seed in range(300):
        data = bytearray(valid.encode())
        for _ in range(rng.randrange(1, 5)):
            position = rng.randrange(len(data))
            data[position : position + rng.randrange(2)] = bytes([rng.randrange(256)])
        (tmp_path / "fleet.yaml").write_bytes(bytes(data))
        (tmp_path / "b.yaml").write_bytes(bytes(rng.randrange(256) for _ in range(seed % 40)))
        try:
            fleet = load_fleet(APP_CONTEXT, str(tmp_path / "fleet.yaml"))
        except ConfigError as err:
            assert str(err).strip() and "Traceback" not in str(err)
            continue
        assert all(isinstance(c.settings, AppSettings) for c in fleet.clusters)


def test_a_stack_name_in_defaults_is_the_prefix_and_an_entrys_own_is_kept(tmp_path):
    (tmp_path / "fleet.yaml").write_text(
        "defaults: {stack_name: Ml}\n"
        "clusters:\n  - {region: us-east-1}\n  - {region: eu-west-1, stack_name: GpuPoolEu}\n"
    )
    fleet = load_fleet(APP_CONTEXT, str(tmp_path / "fleet.yaml"))
    assert [c.stack_name for c in fleet.clusters] == ["Ml-gpu-pool-us-east-1", "GpuPoolEu"]


def test_a_fleet_file_may_list_its_clusters_files_by_path(tmp_path):
    """`clusters: [a.yaml, ...]` is `{file: a.yaml}` each: the paths are relative to the fleet
    file, and a missing one is named."""
    (tmp_path / "a.yaml").write_text("region: us-east-1\ncluster: {name: a}\n")
    (tmp_path / "fleet.yaml").write_text("clusters: [a.yaml]\n")
    (cluster,) = load_fleet(APP_CONTEXT, str(tmp_path / "fleet.yaml")).clusters
    assert (cluster.settings.cluster.name, cluster.stack_name) == ("a", "GpuPool-a-us-east-1")
    assert cluster.source == f"{tmp_path / 'fleet.yaml'} clusters[0] ({tmp_path / 'a.yaml'})"
    (tmp_path / "fleet.yaml").write_text("clusters: [a.yaml, gone.yaml]\n")
    assert _error(APP_CONTEXT, tmp_path / "fleet.yaml") == [
        f"{tmp_path / 'fleet.yaml'} clusters[1]: config: file '{tmp_path / 'gone.yaml'}' does "
        "not exist"
    ]


PIPELINE = (
    "clusters: [{region: us-east-1, account: '111111111111'}]\n"
    "pipeline:\n"
    "  account: '111111111111'\n"
    "  region: us-east-1\n"
    "  source: {connection_arn: 'arn:aws:codeconnections:us-east-1:111111111111:connection/"
    "0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d', repository: acme/gpu-fleet, branch: main}\n"
)


def test_a_fleet_files_pipeline_synthesizes_that_fleet_file(tmp_path, monkeypatch):
    """Without synth_commands the pipeline's synth step names the fleet file as the app was
    given it (relative to the app's directory, where the step runs): plain `cdk synth` would
    synthesize cdk.json's one cluster. Given ones are kept."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "fleets").mkdir()
    (tmp_path / "fleets" / "prod.yaml").write_text(PIPELINE)
    pipeline = load_fleet(APP_CONTEXT, "fleets/prod.yaml").pipeline
    assert pipeline is not None
    assert pipeline.synth_commands == ["npx cdk synth -c config=fleets/prod.yaml"]
    (tmp_path / "fleets" / "prod.yaml").write_text(PIPELINE + "  synth_commands: [make synth]\n")
    pipeline = load_fleet(APP_CONTEXT, "fleets/prod.yaml").pipeline
    assert pipeline is not None and pipeline.synth_commands == ["make synth"]


def test_a_pipeline_of_a_fleet_file_given_by_absolute_path_needs_its_synth_commands(tmp_path):
    config = tmp_path / "fleet.yaml"
    config.write_text(PIPELINE)
    assert _error(APP_CONTEXT, config) == [
        f"{config}: pipeline.synth_commands: not given, so the pipeline's synth step would run "
        f"`cdk synth -c config={config}`, a path of this machine: give -c config= relative to "
        "the app's directory (as the repository has it), or set pipeline.synth_commands"
    ]


def test_two_accounts_may_each_have_a_cluster_of_one_name_in_one_region(tmp_path):
    """#38 item 9: a cluster is (name, account, Region): the same name in one Region of two
    accounts is two clusters (EKS names are unique per account and Region: EKS API reference,
    CreateCluster), given stack names of their own. An identity without the account (the
    injected bug) refused this fleet as one cluster twice."""
    folder = _write(
        tmp_path / "fleet",
        {
            "a.yaml": f"account: '{ACCOUNT_A}'\nregion: us-east-1\ncluster: {{name: prod}}\n",
            "b.yaml": f"account: '{ACCOUNT_B}'\nregion: us-east-1\ncluster: {{name: prod}}\n"
            "stack_name: GpuPoolB\n",
        },
    )
    clusters = load_fleet(APP_CONTEXT, str(folder)).clusters
    assert [(c.settings.account, c.settings.cluster.name, c.stack_name) for c in clusters] == [
        (ACCOUNT_A, "prod", "GpuPool-prod-us-east-1"),
        (ACCOUNT_B, "prod", "GpuPoolB"),
    ]
