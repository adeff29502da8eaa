"""Config files as users save them: encodings, duplicate keys, and arbitrary bytes; and the
example file the README starts with."""

from __future__ import annotations

import json
import random
import re

import pytest

from gpu_pool.settings import AppSettings, ConfigError, load_settings, load_settings_with_warnings
from tests.support import rules
from tests.support.paths import ROOT

CONFIG = "pool:\n  instance_types: [g6.xlarge]\n  max_size: 4\nautoscaler:\n  expander: priority\n"


def _load(tmp_path, data: bytes, name="cluster.yaml"):
    path = tmp_path / name
    path.write_bytes(data)
    return load_settings({}, str(path))


@pytest.mark.parametrize(
    "encoded",
    [
        "\ufeff".encode() + CONFIG.encode(),  # UTF-8 with a byte-order mark (Notepad)
        CONFIG.encode("utf-16"),  # UTF-16 LE with its mark (Windows PowerShell 5 `>`)
        "\ufeff".encode("utf-16-be") + CONFIG.encode("utf-16-be"),
    ],
    ids=["utf-8-bom", "utf-16-le-bom", "utf-16-be-bom"],
)
def test_files_with_a_byte_order_mark_read_as_their_utf8_twin(tmp_path, encoded):
    assert _load(tmp_path, encoded) == _load(tmp_path, CONFIG.encode(), "plain.yaml")


def test_a_binary_file_is_refused_by_name(tmp_path):
    with pytest.raises(ConfigError) as raised:
        _load(tmp_path, bytes([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0xFF, 0x00]))
    assert str(raised.value) == (
        f"config: '{tmp_path / 'cluster.yaml'}' is not UTF-8 text (nor UTF-16 with a byte-order "
        "mark); save it as UTF-8 YAML"
    )


def test_a_key_given_twice_is_refused_in_yaml_and_json(tmp_path):
    with pytest.raises(ConfigError) as raised:
        _load(tmp_path, b"pool:\n  max_size: 4\n  labels: {a: b}\n  max_size: 40\n")
    assert str(raised.value) == (
        f"config: '{tmp_path / 'cluster.yaml'}' is not valid YAML: 'max_size' is set twice in one "
        "mapping; only the last would count: remove one (line 4, column 3)"
    )
    with pytest.raises(ConfigError) as raised:
        _load(tmp_path, b'{"pool": {"max_size": 4, "max_size": 40}}', "cluster.json")
    assert str(raised.value) == (
        f"config: '{tmp_path / 'cluster.json'}' is not valid JSON: 'max_size' is set twice in "
        "one object; only the last would count"
    )


# pydantic's own phrases: a message that carries one was not translated into the settings' words.
PYDANTIC_WORDING = re.compile(
    r"Input should|should have|after validation|valid dictionary|instance of"
)


@pytest.mark.parametrize(
    ("context", "message"),
    [
        (
            {"pool": {"instance_types": [5]}},
            "pool.instance_types[0]: must be text or a list (got 5)",
        ),
        ({"pool": {"instance_types": [[5]]}}, "pool.instance_types[0][0]: must be text (got 5)"),
        ({"pool": {"taints": [{"key": ""}]}}, "pool.taints[0].key: must not be empty (got '')"),
        (
            {"cluster": {"public_access_cidrs": []}},
            "cluster.public_access_cidrs: must not be empty (got [])",
        ),
        (
            {"cluster": 5},
            "cluster: must be a mapping of settings, such as {name: ..., kubernetes_version: "
            "..., kubectl_layer_version: ..., ...} (got 5)",
        ),
        # An octet above 255 passes a digits-only pattern; EKS refuses the block at deploy.
        (
            {"cluster": {"public_access_cidrs": ["256.0.0.0/8"]}},
            "cluster.public_access_cidrs[0]: '256.0.0.0/8' is not an IPv4 CIDR block such as "
            "203.0.113.0/24",
        ),
        ({"pool": {"labels": ["a"]}}, "pool.labels: must be a mapping (key: value) (got ['a'])"),
        (
            {"autoscaler": {"enabled": "yes"}},
            "autoscaler.enabled: must be true or false (got 'yes')",
        ),
        ({"pool": {"imds_hop_limit": 65}}, "pool.imds_hop_limit: must be at most 64 (got 65)"),
        (
            {"pool": {"karpenter": {"gpu_limit": 0}}},
            "pool.karpenter.gpu_limit: must be at least 1 (got 0)",
        ),
        (
            {"pool": {"taints": [{"key": "k", "value": "v" * 64}]}},
            f"pool.taints[0].value: must be at most 63 characters long (got '{'v' * 64}')",
        ),
    ],
    ids=lambda value: None if isinstance(value, dict) else "",
)
def test_type_and_range_mistakes_read_in_the_settings_words(context, message):
    with pytest.raises(ConfigError) as raised:
        load_settings(context, None)
    assert str(raised.value) == message


@pytest.mark.parametrize("text", [b"", b"# pool:\n#   max_size: 4\n", b"---\n", b"{}\n"])
def test_a_config_file_with_no_settings_is_a_warning(tmp_path, text):
    path = tmp_path / "cluster.yaml"
    path.write_bytes(text)
    settings, warnings = load_settings_with_warnings({"pool": {"max_size": 2}}, str(path))
    assert settings.pool is not None and settings.pool.max_size == 2
    assert [str(w) for w in rules.documented(warnings)] == [
        f"config: '{path}' holds no settings (empty, or every line commented out): the cdk.json "
        "context and the defaults apply; is it the right file?"
    ]


@pytest.mark.parametrize("key", ["pool", "pools"])
def test_a_pool_key_with_nothing_under_it_is_a_warning(key):
    # `pool:` with every line under it commented out: YAML reads null.
    assert rules.findings({key: None}) == [
        (
            "W",
            f"{key}: is empty (nothing under it, or every line commented out), so the default "
            "pool applies: one pool 'gpu' of g5.xlarge nodes; give it settings or remove the key",
        )
    ]


def _mutations(seed: int) -> bytes:
    """Random bytes, or a valid file with random bytes flipped, inserted or cut."""
    rng = random.Random(seed)
    if seed % 3 == 0:
        return bytes(rng.randrange(256) for _ in range(rng.randrange(64)))
    data = bytearray(CONFIG.encode("utf-16" if seed % 5 == 0 else "utf-8"))
    for _ in range(rng.randrange(1, 6)):
        position = rng.randrange(len(data))
        action = rng.randrange(3)
        if action == 0:
            data[position] = rng.randrange(256)
        elif action == 1:
            data.insert(position, rng.choice(b"{}[]:,-'\"\n\t #&*!|>%@`"))
        else:
            del data[position]
    return bytes(data)


@pytest.mark.synth
def test_any_bytes_end_in_a_config_error_or_settings_that_synthesize(tmp_path):
    from tests.support.cfn import synth

    valid = []
    for seed in range(400):
        for name in ("cluster.yaml", "cluster.json"):
            try:
                settings = _load(tmp_path, _mutations(seed), name)
            except ConfigError as err:
                assert str(err).strip(), "a message, one line per problem"
                assert not PYDANTIC_WORDING.search(str(err)), str(err)
                continue
            assert isinstance(settings, AppSettings)
            valid.append(settings)
    assert valid, "some mutations leave a valid file"
    synthesized = 0
    for settings in {s.model_dump_json(exclude_unset=True): s for s in valid}.values():
        try:
            synth(settings.model_dump(mode="json", exclude_unset=True))
        except ConfigError as err:  # a rule across settings: clean as well
            assert str(err).strip()
            continue
        synthesized += 1
    assert synthesized


def _yaml_blocks(relative_path):
    text = (ROOT / relative_path).read_text(encoding="utf-8")
    return re.findall(r"```yaml\n(.*?)```", text, flags=re.DOTALL)


def test_the_readme_example_is_the_settings_pages_and_loads_over_cdk_json(tmp_path):
    (example,) = [b for b in _yaml_blocks("README.md") if b.startswith("# prod-us-east-1.yaml")]
    assert example in _yaml_blocks("docs/settings.md")
    path = tmp_path / "prod-us-east-1.yaml"
    path.write_text(example, encoding="utf-8")
    context = json.loads((ROOT / "cdk.json").read_text(encoding="utf-8"))["context"]["gpu-pool"]
    settings = load_settings(context, str(path))
    assert settings.pool is None  # the file's `pools` replaces cdk.json's one-pool form
    assert {name: pool.instance_types for name, pool in settings.pools.items()} == {
        "inference": ["g6e.xlarge", "g5.xlarge"],
        "training": ["p5.48xlarge"],
        "spot": ["g6.xlarge"],
    }
