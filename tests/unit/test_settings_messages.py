"""Settings messages at their edges: unknown keys with and without a close match, several
problems at once, the words for each pydantic error kind, and config files read byte for
byte (duplicate keys after an unhashable one, NUL characters, UTF-16)."""

import pytest

from gpu_pool.settings import ConfigError, Taint, load_settings
from gpu_pool.settings.errors import _plain, _setting_path
from tests.support.messages import POOL_KEYS


def message(context, config_file=None):
    with pytest.raises(ConfigError) as err:
        load_settings(context, config_file)
    return str(err.value)


@pytest.mark.parametrize(
    ("context", "expected"),
    [
        (
            {"zzzz": 1},
            "zzzz: unknown setting (valid: stack_name, account, region, cluster, pool, pools, "
            "autoscaler, karpenter, metrics, acknowledge)",
        ),
        ({"pool": {"zzzz": 1}}, f"pool.zzzz: unknown setting (valid: {POOL_KEYS})"),
        (
            {"pools": {"a": {"max_sise": 1}}},
            f"pools.a.max_sise: unknown setting; did you mean 'max_size'? (valid: {POOL_KEYS})",
        ),
        # A pool may be named after a pool setting: its own mistakes are still its own.
        (
            {"pools": {"karpenter": {"provisioner": "karpenter", "max_sise": 1}}},
            "pools.karpenter.max_sise: unknown setting; did you mean 'max_size'? (valid: "
            f"{POOL_KEYS})",
        ),
    ],
    ids=["top-level-no-match", "nested-no-match", "in-a-named-pool", "pool-named-as-a-setting"],
)
def test_an_unknown_key_lists_its_own_levels_keys(context, expected):
    assert message(context) == expected


@pytest.mark.parametrize(
    ("context", "expected"),
    [
        # `sharing:` indented one level too little under `pools` reads as a pool named sharing.
        (
            {"pools": {"nb": {"instance_types": ["g6.xlarge"]}, "sharing": {"mode": "mig"}}},
            "pools.sharing: 'sharing' is read as the name of an entry of pools, but it is a "
            "setting of each entry: indent it under one, as pools.<name>.sharing",
        ),
        # `sharing:` with nothing under it, and its keys at the pool's level.
        (
            {"pool": {"sharing": None, "mode": "time-slicing"}},
            "pool.sharing: must be a mapping of settings, such as {mode: ..., replicas: ..., "
            "rename: ..., ...} (got None)\n"
            "pool.mode: unknown setting; it is a setting one level down: indent it as "
            f"sharing.mode (valid: {POOL_KEYS})",
        ),
        (
            {"pools": {"taints": [{"key": "dedicated"}]}},
            "pools.taints: 'taints' is read as the name of an entry of pools, but it is a "
            "setting of each entry: indent it under one, as pools.<name>.taints",
        ),
        # At the top level, beside the pools.
        (
            {"pool": {"instance_types": ["g6.xlarge"]}, "sharing": {"mode": "time-slicing"}},
            "sharing: unknown setting; it is a setting one level down: indent it as "
            "pool.sharing or pools.<name>.sharing (valid: stack_name, account, region, cluster, "
            "pool, pools, autoscaler, karpenter, metrics, acknowledge)",
        ),
    ],
    ids=["pools-entry", "pool-level", "pools-entry-not-a-mapping", "top-level"],
)
def test_a_mis_indented_setting_says_where_it_belongs(context, expected):
    assert message(context) == expected


@pytest.mark.parametrize(
    ("context", "expected"),
    [
        (
            {"metrics": "cloudwatch"},
            "metrics: must be a mapping of settings, such as {gpu: cloudwatch} (got 'cloudwatch')",
        ),
        (
            {"pool": {"sharing": "time-slicing"}},
            "pool.sharing: must be a mapping of settings, such as {mode: time-slicing} (got "
            "'time-slicing')",
        ),
        (
            {"pools": {"a": {"taints": ["nvidia.com/gpu"]}}},
            "pools.a.taints[0]: must be a mapping of settings, such as {key: ..., ...} (got "
            "'nvidia.com/gpu')",
        ),
        (
            {"pool": {"capacity_reservation": "cr-0123456789abcdef0"}},
            "pool.capacity_reservation: must be a mapping of settings, such as {type: ..., ...} "
            "(got 'cr-0123456789abcdef0')",
        ),
    ],
    ids=["value-of-a-setting", "nested", "list-item-required-key", "required-key"],
)
def test_a_value_where_settings_belong_shows_their_form(context, expected):
    assert message(context) == expected


@pytest.mark.parametrize(
    ("acknowledged", "expected"),
    [
        (
            {"GP-POOL-25": "x", "GP-POOL-99": "x"},
            "acknowledge.GP-POOL-25: an error, which cannot be acknowledged (the deploy would "
            "not work): change the setting it names instead\n"
            "acknowledge.GP-POOL-99: not a gpu-pool rule; acknowledge a warning by the id the "
            "synth prints after it ([ack: gpu-pool:GP-...]; docs/guardrails.md lists them)",
        ),
        (
            {"gpu-pool:GP-POOL-26": "x"},
            "acknowledge.gpu-pool:GP-POOL-26: 'gpu-pool:GP-POOL-26' is not a rule id such as "
            "GP-POOL-26",
        ),
        (
            {"GP-POOL-26": " "},
            "acknowledge.GP-POOL-26: ' ' is not a reason: why this app accepts the warning (for "
            "the next reader)",
        ),
        (["GP-POOL-26"], "acknowledge: must be a mapping (key: value) (got ['GP-POOL-26'])"),
        # Every problem at once, the missing reason with the rules' own (it hid them).
        (
            {"GP-POOL-01": "x", "GP-XX-99": "y", "GP-POOL-26": ""},
            "acknowledge.GP-POOL-01: an error, which cannot be acknowledged (the deploy would "
            "not work): change the setting it names instead\n"
            "acknowledge.GP-XX-99: not a gpu-pool rule; acknowledge a warning by the id the "
            "synth prints after it ([ack: gpu-pool:GP-...]; docs/guardrails.md lists them)\n"
            "acknowledge.GP-POOL-26: '' is not a reason: why this app accepts the warning (for "
            "the next reader)",
        ),
    ],
    ids=["error-and-unknown", "annotation-id", "no-reason", "list", "all-at-once"],
)
def test_only_a_known_warning_with_a_reason_is_acknowledged(acknowledged, expected):
    assert message({"acknowledge": acknowledged}) == expected


def test_every_warning_and_no_error_can_be_acknowledged():
    from tools.rule_index import rules

    warnings = {r.id: "why" for r in rules() if r.level == "warning"}
    assert load_settings({"acknowledge": warnings}, None).acknowledge == warnings
    for rule in (r.id for r in rules() if r.level == "error"):
        assert message({"acknowledge": {rule: "why"}}).startswith(f"acknowledge.{rule}: an error")


def test_every_problem_is_one_line_in_the_order_of_the_settings():
    assert message({"region": "Frankfurt", "pool": {"max_sise": 1}}).splitlines() == [
        "region: 'Frankfurt' is not an AWS region name such as us-east-1",
        f"pool.max_sise: unknown setting; did you mean 'max_size'? (valid: {POOL_KEYS})",
    ]


@pytest.mark.parametrize(
    ("context", "expected"),
    [
        ({"pool": {"labels": {1: "x"}}}, "pool.labels[1]: must be text (got 1)"),
        # YAML reads an unquoted `kubernetes_version: 1.30` as the number 1.3.
        (
            {"cluster": {"kubernetes_version": 1.3}},
            'cluster.kubernetes_version: must be text (got 1.3); put it in quotes, e.g. "1.30": '
            "YAML reads an unquoted 1.30 as the number 1.3",
        ),
        (
            {"pool": {"instance_types": [5]}},
            "pool.instance_types[0]: must be text or a list (got 5)",
        ),
        (
            {"pool": {"instance_types": [[5]]}},
            "pool.instance_types[0][0]: must be text (got 5)",
        ),
        (
            {"pool": {"taints": [{"key": "k" * 64}]}},
            "pool.taints[0].key: must be at most 63 characters long (got '" + "k" * 64 + "')",
        ),
        (
            {"cluster": {"public_access_cidrs": []}},
            "cluster.public_access_cidrs: must not be empty (got [])",
        ),
        (
            {"pool": {"karpenter": {"gpu_limit": 0}}},
            "pool.karpenter.gpu_limit: must be at least 1 (got 0)",
        ),
        (
            {"pools": {"a": None}},
            "pools.a: must be a mapping of settings, such as {name: ..., provisioner: ..., "
            "instance_types: ..., ...} (got None)",
        ),
    ],
    ids=["mapping-key", "unquoted-version", "union", "union-member-contents", "too-long", "empty", "bound", "model"],
)
def test_type_and_range_mistakes_read_in_the_references_words(context, expected):
    assert message(context) == expected


@pytest.mark.parametrize(
    ("problem", "words"),
    [
        ({"type": "too_short", "ctx": {"min_length": 2}}, "needs at least 2 entries"),
        (
            {"type": "string_too_short", "ctx": {"min_length": 3}},
            "must be at least 3 characters long",
        ),
        (
            {"type": "string_too_long", "ctx": {"max_length": 9}},
            "must be at most 9 characters long",
        ),
        ({"type": "less_than_equal", "ctx": {"le": 64}}, "must be at most 64"),
        ({"type": "no_such_kind", "msg": "pydantic's own words"}, "pydantic's own words"),
    ],
)
def test_the_words_for_each_kind_of_problem(problem, words):
    # Kinds no settings field produces today (every min_length is 1), and pydantic's message
    # for a kind without words of ours, so a new field's bounds read right too.
    assert _plain(problem) == words


def test_a_union_members_type_tag_is_not_part_of_the_path():
    assert _setting_path(("pool", "x", "int")) == ("pool.x", True)
    assert _setting_path(("pool", "x", "bool")) == ("pool.x", True)
    assert _setting_path(("pool", "labels", "[key]")) == ("pool.labels", False)


def test_no_context_is_the_defaults():
    assert load_settings(None, None) == load_settings({}, None)


def test_a_files_one_pool_form_replaces_the_contexts_pools(tmp_path):
    path = tmp_path / "one.yaml"
    path.write_text("pool:\n  max_size: 2\n", encoding="utf-8")
    settings = load_settings({"pools": {"a": {}}}, str(path))
    assert settings.pools is None
    assert (settings.pool.name, settings.pool.max_size) == ("gpu", 2)


def test_a_duplicate_key_after_an_unhashable_one_is_still_named(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("? [a]\n: 1\nregion: us-east-1\nregion: eu-west-1\n", encoding="utf-8")
    assert message({}, str(path)) == (
        f"config: '{path}' is not valid YAML: 'region' is set twice in one mapping; only the "
        "last would count: remove one (line 4, column 1)"
    )


def test_a_nul_character_is_not_settings_text(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_bytes(b"region: us-east-1\x00\n")
    assert message({}, str(path)) == (
        f"config: '{path}' is not UTF-8 text (nor UTF-16 with a byte-order mark); save it as "
        "UTF-8 YAML"
    )


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-be", "utf-8-sig"])
def test_utf16_with_its_byte_order_mark_and_utf8_with_one_are_read(tmp_path, encoding):
    path = tmp_path / "c.yaml"
    raw = "region: eu-west-1\n".encode(encoding)
    if encoding == "utf-16-be":
        raw = b"\xfe\xff" + raw
    path.write_bytes(raw)
    assert load_settings({}, str(path)).region == "eu-west-1"


def test_an_eks_taint_spells_its_effect_the_eks_api_way():
    assert Taint(key="k", value="v", effect="NoExecute").eks_taint() == {
        "key": "k",
        "value": "v",
        "effect": "NO_EXECUTE",
    }


def test_a_file_it_cannot_read_names_the_systems_reason(tmp_path, monkeypatch):
    path = tmp_path / "c.yaml"
    path.write_text("region: eu-west-1\n", encoding="utf-8")

    def refuse(self):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(type(path), "read_bytes", refuse)
    assert message({}, str(path)) == f"config: cannot read '{path}': Permission denied"


def test_one_pattern_has_one_message():
    """A mismatch names only its pattern: a second field giving the same pattern another
    message is refused at import, instead of silently taking the first field's message."""
    from gpu_pool.settings.errors import matching

    matching(r"^only-in-this-test$", "what the first field says")
    matching(r"^only-in-this-test$", "what the first field says")  # the same message: shared
    with pytest.raises(ValueError) as raised:
        matching(r"^only-in-this-test$", "another message")
    assert str(raised.value) == (
        "pattern '^only-in-this-test$' already says 'what the first field says', not "
        "'another message'"
    )
