"""Rule ids: one per rule in the code, listed in docs/guardrails.md, and met by the rule tables."""

from __future__ import annotations

import importlib
import re
from collections import Counter
from datetime import date

from gpu_pool.checks import check_settings
from gpu_pool.model.findings import RULE_ID
from gpu_pool.model.rule_levels import read_rules
from gpu_pool.plan.pool import plan_pools
from gpu_pool.settings import ConfigError, load_settings
from tests.support.paths import ROOT
from tools.rule_index import PAGE, page_with_index, rules

TABLES = (
    "tests.unit.test_checks",
    "tests.unit.test_karpenter_checks",
    "tests.unit.test_auto_mode_checks",
    "tests.unit.test_sharing_checks",
    "tests.unit.test_training_checks",
    "tests.unit.test_metrics_checks",
    "tests.unit.test_dra_ultraserver_checks",
    "tests.unit.test_dra_checks",
    "tests.unit.test_efa_dra_checks",
    "tests.unit.test_instance_store",
    "tests.unit.test_repair",
)


def test_every_rule_id_is_well_formed_and_at_one_place_in_the_code():
    found = read_rules()  # not the cached rules(): ./dev mutate's mutants of the reading too
    assert found == rules()
    assert all(RULE_ID.match(r.id) for r in found), [r.id for r in found if not RULE_ID.match(r.id)]
    assert [rule for rule, n in Counter(r.id for r in found).items() if n > 1] == []


def test_the_guardrails_page_lists_every_rule_as_the_code_has_it():
    page = PAGE.read_text(encoding="utf-8")
    assert page == page_with_index(page, rules()), "run: python tools/rule_index.py"


def _table_rule_ids() -> set[str]:
    """The rule ids the guardrail tables' cases produce, run as a synth meets them."""
    seen: set[str] = set()
    for name in TABLES:
        for settings, _ in importlib.import_module(name).CASES.values():
            try:
                loaded = load_settings(settings, None)
            except ConfigError:
                continue  # a settings model's own message: no rule id
            found = check_settings(loaded, plan_pools(loaded), today=date(2026, 12, 2)).all()
            seen |= {f.rule for f in found}
    return seen


def test_the_rule_tables_meet_their_rules():
    """Each rule the tables' settings produce is a rule of the index, and the tables reach most
    of them; the rest are met by their own tests (construct-level, cluster-wide and
    command-side rules) and are named here, so a new rule without a table case shows up."""
    ids = {r.id for r in rules()}
    seen = _table_rule_ids()
    assert seen <= ids
    assert sorted(ids - seen) == sorted(NOT_IN_TABLES)


NOT_IN_TABLES = [
    # Config files and the CLI pin: tests/unit/test_config_files.py, test_checks.py's pin cases.
    "GP-APP-06",
    "GP-APP-17",
    "GP-CONFIG-01",
    # Zones against the cached lookup, and subnets_by_zone keys the settings model lets through
    # only as strings: tests/synth/test_day2.py, test_checks.py's existing-cluster cases.
    "GP-APP-11",
    "GP-APP-16",
    # A Local Zone the lookup lacks (no opt-in): tests/unit/test_local_zones.py.
    "GP-APP-29",
    # What an existing cluster's lookup found: tests/unit/test_existing_cluster.py.
    "GP-APP-31",
    "GP-APP-32",
    "GP-APP-33",
    "GP-APP-34",
    "GP-APP-35",
    "GP-APP-36",
    "GP-APP-37",
    # A looked-up reservation against the cluster's zones: tests/unit/test_cluster_zones.py.
    "GP-APP-20",
    # What an Auto Mode cluster role needs where the app cannot grant it: the pool construct
    # alone knows the cluster and the NodeClass's tags (tests/unit/test_auto_mode_checks.py,
    # tests/synth/test_auto_mode.py).
    "GP-AUTO-12",
    "GP-AUTO-13",
    # Constructs and the cluster-wide rules: tests/synth/test_library.py, test_karpenter.py,
    # test_autoscaler.py, test_cluster_rules.py, tests/unit/test_controller_rules.py.
    "GP-CTRL-02",
    "GP-CTRL-03",
    "GP-CTRL-06",
    "GP-CTRL-09",
    "GP-CTRL-10",
    "GP-CTRL-11",
    "GP-METRICS-01",
    # What a library app's cluster must offer: tests/synth/test_library_misuse.py.
    "GP-LIB-01",
    "GP-LIB-02",
    "GP-LIB-03",
    "GP-LIB-04",
    # Between pools: tests/synth/test_pools.py and tests/unit/test_between_pools.py; the device
    # plugin reach rule PAIR-03 guards plans the settings rules already refuse (PAIR-04 meets a
    # table in the UltraServer cases: a DRA GPU pool beside a ComputeDomain-only one).
    "GP-PAIR-01",
    "GP-PAIR-02",
    "GP-PAIR-03",
    "GP-PAIR-05",
    "GP-PAIR-06",
    # One EFA advertiser per node: the driver's reach (EFA-04) and the driver beside an EFA
    # device plugin (EFA-05) guard plans the settings rules already refuse
    # (tests/unit/test_efa_dra_checks.py).
    "GP-EFA-04",
    "GP-EFA-05",
    # What the stack's Region offers (the cached lookups) and reserved capacity of another
    # Region or account: tests/unit/test_region_rules.py.
    "GP-REGION-01",
    "GP-REGION-02",
    "GP-REGION-03",
    "GP-REGION-04",
    "GP-REGION-05",
    "GP-REGION-06",
    "GP-REGION-07",
    "GP-REGION-10",
    # A fact of the Region left unchecked (a lookup not cached, failed or not askable):
    # tests/synth/test_region_lookup.py, test_capacity_block_lookup.py (the CLI offline).
    "GP-REGION-08",
    # A pool's vCPUs at max against the looked-up vCPU quota: tests/unit/test_vcpu_quotas.py.
    "GP-REGION-09",
    # A volume key of another account than the stack's: the pool constructs alone know the
    # stack's account (tests/unit/test_volume_key_checks.py).
    "GP-KEY-02",
    # A Capacity Block's looked-up facts: tests/unit/test_reservation_facts.py.
    "GP-TRAIN-15",
    "GP-TRAIN-16",
    "GP-TRAIN-17",
    # A Capacity Block not looked up yet: tests/synth/test_capacity_block_lookup.py.
    "GP-TRAIN-20",
    # An UltraServer pool against its looked-up block: tests/unit/test_dra_ultraserver_checks.py.
    "GP-ULTRA-07",
]


def _summary_rows() -> list[list[str]]:
    """The cells of each row of docs/guardrails.md's table of guardrails (above the index)."""
    table = PAGE.read_text(encoding="utf-8").split("## Rule index")[0]
    rows = [line.strip().strip("|").split(" | ") for line in table.splitlines()]
    header, *body = [[c.strip() for c in row] for row in rows if len(row) > 1]
    assert header == ["Rule", "Level", "Why", "Rule ids"]
    return [row for row in body if not set(row[0]) <= {"-"}]


def test_each_guardrail_row_names_rules_of_the_index_at_its_level():
    """#48 item 9: the table said an UltraServer pool's gpu_software other than dra-driver is an
    error long after the rule that said so was retired. Each row names its rules, so a retired
    rule or one at another level fails here; `-`: the settings model's own messages, errors
    without a rule id."""
    levels = {r.id: r.level for r in rules()}
    for condition, level, _, named in _summary_rows():
        if named == "-":
            assert level == "error", condition
            continue
        ids = named.split(", ")
        assert [i for i in ids if i not in levels] == [], condition
        assert {levels[i] for i in ids} == set(level.split("/")), condition


def test_every_rule_id_the_docs_name_is_in_the_index_at_the_level_they_give():
    """Outside the generated index: an id a page names is a rule of the code, and where the
    page gives its level (`GP-REGION-08 (warning)`; the UltraServer table: "each of these is a
    synth error"; the Region table: errors unless marked) it is that rule's."""
    levels = {r.id: r.level for r in rules()}
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    for page in pages:
        text = page.read_text(encoding="utf-8").split("<!-- rule index: generated")[0]
        named = set(re.findall(r"GP-[A-Z]+-\d\d", text))
        assert sorted(named - set(levels)) == [], page.name
        for rule, level in re.findall(r"(GP-[A-Z]+-\d\d) \((error|warning)\)", text):
            assert levels[rule] == level, (page.name, rule)
    for page, area in (("region.md", "REGION"), ("dra-and-ultraservers.md", "ULTRA")):
        rows = re.findall(
            rf"^\| (GP-{area}-\d\d)( \(warning\))? \|", (ROOT / "docs" / page).read_text(), re.M
        )
        assert rows, page
        assert [(r, levels[r]) for r, w in rows if levels[r] != ("warning" if w else "error")] == []
