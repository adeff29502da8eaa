"""The smoke test's DRA objects judged by the real API server (the pinned 1.36 patch), as kubectl
sends them (strict field validation: tests/e2e/verdicts.py): ResourceClaimTemplates and Pods by
resource.k8s.io/v1 and core/v1 validation, ComputeDomains by the NVIDIA DRA driver's CRD at the
pinned chart version. Namespaced objects go in `default`. The objects are `gpu-pool
smoke-test-manifest`'s, built from the same pool records as tests/cli/test_dra_smoke_test.py and
tests/cli/test_efa_dra_smoke_test.py, which keep their exact content; the refusals are the
server's own messages, so the judging is seen failing.
"""

from __future__ import annotations

import copy

import pytest

from gpu_pool.cli.smoke_test import smoke_test_objects
from tests.cli.test_dra_smoke_test import dra_record, eks_shape_record, ultraserver_dra_record
from tests.cli.test_efa_dra_smoke_test import record as efa_record
from tests.e2e.harness.cluster import Cluster
from tests.e2e.verdicts import judge_strictly, with_crds

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def crds(cluster: Cluster) -> Cluster:
    return with_crds(cluster)


RECORDS = {
    "dra-pool": dra_record,
    "ultraserver-dra-pool": ultraserver_dra_record,
    "ultraserver-eks-shape": eks_shape_record,
    "efa-dra-on-a-dra-pool": lambda: efa_record(gpu_software="dra-driver"),
    "efa-dra-on-a-device-plugin-pool": efa_record,
}


@pytest.mark.parametrize("make_record", RECORDS.values(), ids=RECORDS.keys())
def test_each_smoke_test_object_is_accepted(crds, make_record):
    """Guards tests/cli/test_dra_smoke_test.py and test_efa_dra_smoke_test.py: a DRA pool's
    one-GPU claim template and pod; an UltraServer pool's ComputeDomain, four-GPU claim
    template and two pods (each claiming the domain's channel), of DRA and of EKS's shape; an
    EFA DRA pool's GPU and EFA aligned on resource.kubernetes.io/pcieRoot, and a device plugin
    pool's EFA claim beside its nvidia.com/gpu limit."""
    objects = smoke_test_objects(make_record(), "smoke")
    refused = {
        f"{o['kind']} {o['metadata']['name']}": problems
        for o in objects
        if (problems := judge_strictly(crds.api, o))
    }
    assert refused == {}


def _request(template):
    return template["spec"]["spec"]["devices"]["requests"][0]["exactly"]


def test_the_server_refuses_a_claim_template_resource_k8s_io_v1_forbids(crds):
    """The judging can fail: a misspelled field, a field the API lacks, a missing required one
    (each once on the DRA pool's accepted claim template), with the API server's own causes."""
    template, _ = smoke_test_objects(dra_record(), "smoke")
    assert judge_strictly(crds.api, template) == []

    misspelled = copy.deepcopy(template)
    _request(misspelled)["deviceClass"] = _request(misspelled).pop("deviceClassName")
    unknown = copy.deepcopy(template)
    _request(unknown)["selector"] = "x"
    missing = copy.deepcopy(template)
    del _request(missing)["deviceClassName"]
    assert [judge_strictly(crds.api, t) for t in (misspelled, unknown, missing)] == [
        [
            'ResourceClaimTemplate in version "v1" cannot be handled as a ResourceClaimTemplate: '
            "strict decoding error: unknown field "
            '"spec.spec.devices.requests[0].exactly.deviceClass"'
        ],
        [
            'ResourceClaimTemplate in version "v1" cannot be handled as a ResourceClaimTemplate: '
            'strict decoding error: unknown field "spec.spec.devices.requests[0].exactly.selector"'
        ],
        ["spec.spec.devices.requests[0].exactly.deviceClassName: Required value"],
    ]


def test_the_server_refuses_a_compute_domain_of_negative_nodes(crds):
    """The judging can fail: the driver's CRD (0.4.1) allows no negative numNodes."""
    domain = smoke_test_objects(ultraserver_dra_record(), "smoke")[0]
    assert domain["kind"] == "ComputeDomain"
    assert judge_strictly(crds.api, domain) == []
    domain["spec"]["numNodes"] = -1
    assert judge_strictly(crds.api, domain) == [
        "spec.numNodes: Invalid value: -1: spec.numNodes in body should be greater than or "
        "equal to 0"
    ]
