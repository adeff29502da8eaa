"""The Auto Mode guard's handler: an update that turns Auto Mode off fails unless the settings
turn it off (cluster.auto_mode: false); everything else passes. Its route and properties in a
synthesized stack are in tests/synth/test_handler_routing.py and test_cluster_auto_mode.py."""

from __future__ import annotations

import pytest

from gpu_pool.cdk.auto_mode.guard import RESOURCE_TYPE
from gpu_pool.cdk.nodegroups.handler import index


def _event(request, auto_mode, old_auto_mode=None, confirmed="false"):
    event = {
        "RequestType": request,
        "ResourceType": RESOURCE_TYPE,
        "ResourceProperties": {
            "ClusterName": "ml",
            "AutoMode": auto_mode,
            "TurnOffConfirmed": confirmed,
        },
    }
    if old_auto_mode is not None:
        event["OldResourceProperties"] = {**event["ResourceProperties"], "AutoMode": old_auto_mode}
        event["PhysicalResourceId"] = "ml/auto-mode"
    return event


def test_turning_auto_mode_off_fails_the_update_before_the_cluster_changes():
    with pytest.raises(ValueError) as err:
        index.on_event(_event("Update", "false", old_auto_mode="true"))
    assert str(err.value) == (
        "gpu-pool: this deploy turns EKS Auto Mode off on cluster ml, which terminates its Auto "
        "Mode instances and deletes the load balancers it manages (EKS user guide, 'Disable EKS "
        "Auto Mode'). Set cluster.auto_mode: true to keep it, or cluster.auto_mode: false to "
        "turn it off."
    )


@pytest.mark.parametrize(
    "event",
    [
        _event("Update", "false", old_auto_mode="true", confirmed="true"),
        _event("Update", "true", old_auto_mode="false"),
        _event("Update", "true", old_auto_mode="true"),
        _event("Update", "false", old_auto_mode="false"),
        _event("Create", "false"),
        _event("Create", "true"),
        _event("Delete", "false"),
    ],
    ids=["off-confirmed", "on", "stays-on", "stays-off", "create-off", "create-on", "delete"],
)
def test_every_other_change_passes_with_one_physical_id(event):
    assert index.on_event(event) == {"PhysicalResourceId": "ml/auto-mode"}
