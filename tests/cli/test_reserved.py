"""Training pools on a running cluster (#22 item 5): a reservation that has not started or has
ended is a named verdict in doctor and verify; an EFA pool's nodes must advertise their EFA
interfaces; the smoke test requests one."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
import yaml

from gpu_pool.cli.inspect.cluster import Verdict
from gpu_pool.cli.inspect.reserved import efa_verdict, reservation_verdict
from gpu_pool.cli.smoke_test import smoke_test_pod
from gpu_pool.plan.pool import plan_pool
from gpu_pool.plan.record import PoolRecord, pool_record
from gpu_pool.settings import PoolSettings
from tests.support.aws_stubs import stubbed
from tests.support.command import run
from tests.support.fake_kube import SCALE_UP, Scenario, daemon_set, node

BLOCK = "cr-0123456789abcdef0"


def record(settings: PoolSettings) -> PoolRecord:
    """The pool as the command sees it (from the settings, a cloud assembly or a stack)."""
    return pool_record(plan_pool(settings), "gpu-pool", None)


START = datetime(2026, 12, 5, 11, 30, tzinfo=UTC)
END = datetime(2026, 12, 12, 11, 30, tzinfo=UTC)
TRAIN = {
    "instance_types": ["p5.48xlarge"],
    "zones": ["us-east-1a"],
    "efa": True,
    "capacity_reservation": {"type": "capacity-block", "id": BLOCK},
}


def _ec2(state, available=0, without=()):
    """EC2 describing the block in `state`; `without`: the dates it leaves out."""
    reservation = {
        "CapacityReservationId": BLOCK,
        "State": state,
        "StartDate": START,
        "EndDate": END,
        "TotalInstanceCount": 4,
        "AvailableInstanceCount": available,
    }
    return stubbed(
        "ec2",
        [
            (
                "describe_capacity_reservations",
                {
                    "CapacityReservations": [
                        {k: v for k, v in reservation.items() if k not in without}
                    ]
                },
                {"CapacityReservationIds": [BLOCK]},
            )
        ],
    )


SUBJECT = f"pool train reservation {BLOCK}"
WAIT = (
    "wait for the start (the autoscaler retries, or falls back to a lower-priority pool), or run "
    "the job on an on-demand pool"
)
REPLACE = (
    "set pool.capacity_reservation.id to a current reservation, or remove capacity_reservation"
)
NOT_STARTED = "until then every launch fails and the pool gets no node"
ENDED = "the pool can launch no node into it"


@pytest.mark.parametrize(
    ("state", "without", "expected"),
    [
        (
            "scheduled",
            (),
            Verdict(
                "warn", SUBJECT, f"scheduled: starts 2026-12-05 11:30 UTC; {NOT_STARTED}", WAIT
            ),
        ),
        (
            "payment-pending",
            ("StartDate",),
            Verdict("warn", SUBJECT, f"payment-pending: not started; {NOT_STARTED}", WAIT),
        ),
        (
            "active",
            (),
            Verdict("ok", SUBJECT, "active, 3 of 4 instances free, ends 2026-12-12 11:30 UTC"),
        ),
        # An ODCR without an end date runs until it is cancelled.
        ("active", ("EndDate",), Verdict("ok", SUBJECT, "active, 3 of 4 instances free")),
        (
            "expired",
            (),
            Verdict("fail", SUBJECT, f"expired on 2026-12-12 11:30 UTC: {ENDED}", REPLACE),
        ),
        ("cancelled", ("EndDate",), Verdict("fail", SUBJECT, f"cancelled: {ENDED}", REPLACE)),
        (
            "unknown-state",
            (),
            Verdict(
                "warn", SUBJECT, "state unknown-state", "aws ec2 describe-capacity-reservations"
            ),
        ),
    ],
    ids=[
        "scheduled",
        "no-start-date",
        "active",
        "active-no-end-date",
        "expired",
        "ended-no-end-date",
        "unknown-state",
    ],
)
def test_reservation_state_is_its_own_verdict(state, without, expected):
    plan = record(PoolSettings(name="train", **TRAIN))
    assert reservation_verdict(_ec2(state, available=3, without=without), plan) == expected


def test_pools_without_a_reservation_id_are_not_looked_up():
    preference = PoolSettings(capacity_reservation={"type": "odcr", "preference": "open"})
    assert reservation_verdict(None, record(preference)) is None
    assert reservation_verdict(None, record(PoolSettings())) is None


@pytest.mark.parametrize(
    ("allocatable", "expected"),
    [
        (
            {"vpc.amazonaws.com/efa": "32"},
            Verdict("ok", "node gpu-node-1", "vpc.amazonaws.com/efa: 32"),
        ),
        (
            {},
            Verdict(
                "fail",
                "node gpu-node-1",
                "vpc.amazonaws.com/efa: 0, expected 32 (one per network card)",
                "the EFA device plugin: kubectl -n kube-system get pods -o wide | grep "
                "aws-efa-k8s-device-plugin-train; and the launch template's network interfaces",
            ),
        ),
    ],
    ids=["advertised", "missing"],
)
def test_efa_node_must_advertise_one_interface_per_card(allocatable, expected):
    plan = record(PoolSettings(name="train", **TRAIN))
    gpu_node = node(pool="train", gpus=8, name="gpu-node-1")
    gpu_node["status"]["allocatable"].update(allocatable)
    assert efa_verdict(gpu_node, plan) == expected
    assert efa_verdict(gpu_node, record(PoolSettings())) is None


def test_smoke_test_requests_efa_on_efa_pools_only():
    efa = smoke_test_pod(record(PoolSettings(name="train", **TRAIN)))
    plain = smoke_test_pod(record(PoolSettings()))
    assert efa["spec"]["containers"][0]["resources"]["limits"] == {
        "nvidia.com/gpu": "1",
        "vpc.amazonaws.com/efa": "1",
    }
    assert plain["spec"]["containers"][0]["resources"]["limits"] == {"nvidia.com/gpu": "1"}


def _config(tmp_path):
    path = tmp_path / "training.yaml"
    path.write_text(
        yaml.safe_dump(
            {"region": "us-east-1", "account": "123456789012", "pools": {"train": TRAIN}}
        )
    )
    return str(path)


def test_doctor_names_a_block_that_has_not_started(tmp_path, capsys):
    clients = {"ec2": _ec2("scheduled")}
    scenario = Scenario(nodes=[], daemon_sets=[daemon_set(pool="train")])
    run(
        tmp_path,
        scenario,
        "--config",
        _config(tmp_path),
        command="doctor",
        aws=lambda service: clients.get(service) or _no_asgs(service),
    )
    out = capsys.readouterr().out
    assert (
        f"[warn] pool train reservation {BLOCK}: scheduled: starts 2026-12-05 11:30 UTC; until "
        "then every launch fails and the pool gets no node"
    ) in out.splitlines()


def test_verify_names_an_ended_block_instead_of_a_generic_stall(tmp_path, capsys):
    ec2 = _ec2("expired")
    code, fake = run(
        tmp_path,
        Scenario(events=[(2, SCALE_UP)], daemon_sets=[daemon_set(pool="train")]),
        "--config",
        _config(tmp_path),
        aws=lambda service: ec2 if service == "ec2" else _no_activities(),
    )
    out = capsys.readouterr().out
    assert code == 1
    assert (
        ": the pool's reservation cannot take launches: expired on 2026-12-12 11:30 UTC: the "
        "pool can launch no node into it\n"
    ) in out
    (created,) = fake.created
    assert json.dumps(created["spec"]["containers"][0]["resources"]["limits"]) == json.dumps(
        {"nvidia.com/gpu": "1", "vpc.amazonaws.com/efa": "1"}
    )


def _no_activities():
    return stubbed("autoscaling", [])


def _no_asgs(service):
    if service == "autoscaling":
        return stubbed(
            "autoscaling",
            [
                (
                    "describe_auto_scaling_groups",
                    {"AutoScalingGroups": []},
                    {"Filters": [{"Name": "tag:eks:cluster-name", "Values": ["gpu-pool"]}]},
                )
            ],
        )
    return stubbed(service, [])


STALLED = "FAILED while waiting for 'node joined': scale-up was decided but no node joined\n"


def _stalled_verify(tmp_path, capsys, aws):
    """verify on the training pool, the autoscaler deciding a scale-up that never lands."""
    code, _ = run(
        tmp_path,
        Scenario(events=[(2, SCALE_UP)], daemon_sets=[daemon_set(pool="train")]),
        "--config",
        _config(tmp_path),
        aws=aws,
    )
    return code, capsys.readouterr().out


def test_verify_on_an_ended_block_says_how_to_go_on(tmp_path, capsys):
    ec2 = _ec2("expired")
    code, out = _stalled_verify(
        tmp_path, capsys, lambda service: ec2 if service == "ec2" else _no_activities()
    )
    assert code == 1
    assert (
        "  evidence: pool train reservation cr-0123456789abcdef0: expired on 2026-12-12 11:30 "
        "UTC: the pool can launch no node into it\n"
        "  fix: set pool.capacity_reservation.id to a current reservation, or remove "
        "capacity_reservation\n"
    ) in out


def test_verify_on_an_active_block_looks_past_it(tmp_path, capsys):
    """An active block is not the reason: the stall is reported as any pool's would be."""
    ec2 = _ec2("active", available=2)
    quiet = stubbed(
        "autoscaling", [("describe_scaling_activities", {"Activities": []}, {"MaxRecords": 20})]
    )
    code, out = _stalled_verify(
        tmp_path, capsys, lambda service: ec2 if service == "ec2" else quiet
    )
    assert code == 1
    assert STALLED in out
    assert "reservation" not in out


def test_verify_without_aws_access_reports_the_stall_without_the_block(tmp_path, capsys):
    code, out = _stalled_verify(tmp_path, capsys, None)
    assert code == 1
    assert STALLED in out
    assert "reservation" not in out


def test_doctor_judges_an_efa_nodes_interfaces_and_says_when_it_cannot_read_the_block(
    tmp_path, capsys
):
    efa_node = node(pool="train", gpus=8)
    efa_node["status"]["allocatable"]["vpc.amazonaws.com/efa"] = "31"
    scenario = Scenario(nodes=[(0, efa_node)], daemon_sets=[daemon_set(pool="train")])
    code, _ = run(tmp_path, scenario, "--config", _config(tmp_path), command="doctor")
    out = capsys.readouterr().out.splitlines()
    node_lines = out.index("[  ok] node ip-10-0-1-5.ec2.internal: Ready, nvidia.com/gpu: 8")
    assert out[node_lines + 1 : node_lines + 3] == [
        "[fail] node ip-10-0-1-5.ec2.internal: vpc.amazonaws.com/efa: 31, expected 32 (one per "
        "network card)",
        "       fix: the EFA device plugin: kubectl -n kube-system get pods -o wide | grep "
        "aws-efa-k8s-device-plugin-train; and the launch template's network interfaces",
    ]
    assert "[warn] reservations: not checked: no AWS credentials or region" in out
    assert code == 1
