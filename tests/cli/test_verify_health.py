"""`gpu-pool verify` names a GPU node the EKS node monitoring agent reports unhealthy
(AcceleratedHardwareReady False, a reason from the agent's published list) as the failed stage
when the smoke pod lands there, instead of waiting for the pod or blaming nvidia-smi."""

from __future__ import annotations

import pytest

from tests.support.command import run
from tests.support.fake_kube import SCALE_UP, Scenario, node
from tests.support.node_health import GPU_READY, agent_condition, agent_reason

NODE = "ip-10-0-1-5.ec2.internal"
GPU = "AcceleratedHardwareReady"
READY = {"type": "Ready", "status": "True", "message": "kubelet is posting ready status"}
XID79_MESSAGE = "detected XID-79 on the instance, review kernel logs for additional information."
FAULTED = node(
    conditions=[
        READY,
        agent_condition(
            GPU, "False", agent_reason(GPU, "NvidiaXIDError", 79), XID79_MESSAGE, minutes=1
        ),
    ]
)
HEALTHY = node(conditions=[READY, agent_condition(GPU, "True", *GPU_READY)])
REPORT = [
    f"verify: FAILED while waiting for 'gpu healthy': the pod landed on {NODE}, whose GPU is "
    "unhealthy",
    f"  evidence: AcceleratedHardwareReady=False for 1 min: NvidiaXID79Error ({XID79_MESSAGE}); "
    "repair will replace it after 10 min",
    f"  fix: kubectl cordon {NODE} keeps new pods off it until then",
]

CASES = {
    # The agent reported the fault before the pod was bound there.
    "lands-on-a-faulted-gpu": Scenario(
        events=[(1, SCALE_UP)], nodes=[(2, FAULTED)], scheduled_at=3, succeeded_at=8
    ),
    # The fault comes while the pod runs; the pod then fails: the GPU is the cause, not the
    # driver or the image.
    "gpu-faults-under-the-pod": Scenario(
        events=[(1, SCALE_UP)],
        nodes=[(2, HEALTHY), (4, FAULTED)],
        scheduled_at=3,
        failed_at=4,
    ),
}


@pytest.mark.parametrize("scenario", CASES.values(), ids=CASES.keys())
def test_an_unhealthy_gpu_node_is_the_failed_stage(tmp_path, capsys, scenario):
    code, fake = run(tmp_path, scenario)
    out = capsys.readouterr().out.splitlines()
    assert code == 1
    report = out.index(REPORT[0])
    assert out[report : report + 3] == REPORT
    assert fake.deleted  # the pod is deleted however the run ends


def test_a_healthy_gpu_node_passes(tmp_path, capsys):
    scenario = Scenario(
        events=[(1, SCALE_UP)], nodes=[(2, HEALTHY)], scheduled_at=3, succeeded_at=5
    )
    code, _ = run(tmp_path, scenario)
    assert code == 0, capsys.readouterr().out


def test_a_fault_on_another_node_of_the_pool_is_not_the_smoke_pods(tmp_path, capsys):
    """#48 item 10: the pod runs on a healthy node while another node of the pool has a GPU
    fault (doctor's to report): verify passes; it judges the nodes its pods landed on."""
    other = node(
        name="ip-10-0-1-9.ec2.internal",
        conditions=[
            READY,
            agent_condition(
                GPU, "False", agent_reason(GPU, "NvidiaXIDError", 79), XID79_MESSAGE, minutes=1
            ),
        ],
    )
    scenario = Scenario(
        events=[(1, SCALE_UP)],
        standing_nodes=[other],
        nodes=[(2, HEALTHY)],
        scheduled_at=3,
        succeeded_at=8,
    )
    code, _ = run(tmp_path, scenario)
    out = capsys.readouterr().out
    assert code == 0, out
    assert "gpu healthy" not in out
