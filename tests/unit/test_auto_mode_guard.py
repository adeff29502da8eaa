"""The Auto Mode guard's handler: an update that turns Auto Mode off fails unless the settings
turn it off (cluster.auto_mode: false) or CloudFormation is rolling a failed update back;
everything else passes. Its route and properties in a synthesized stack are in
tests/synth/test_handler_routing.py and test_cluster_auto_mode.py."""

from __future__ import annotations

import itertools
import json

import boto3
import pytest

from gpu_pool.cdk.auto_mode.guard import RESOURCE_TYPE
from gpu_pool.cdk.nodegroups.handler import index
from tests.support.strict_aws import StrictAws


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


# ---- against CloudFormation's update and rollback, on moto's server --------------------------


class StackUpdates:
    """CloudFormation's side of a stack update for the guard, as its user guide documents it,
    over a stack in moto's CloudFormation (whose own UpdateStack jumps to UPDATE_COMPLETE and
    never rolls back, so the fixture sets the stack's status as CloudFormation would):
    - an update sends the resource an Update with the new template's properties and the
      deployed ones as OldResourceProperties, StackId being the stack's ARN ("Update request for
      CloudFormation custom resources"), while the stack is UPDATE_IN_PROGRESS;
    - when the update fails (this resource or a later one), the stack is
      UPDATE_ROLLBACK_IN_PROGRESS and the resource gets another Update that restores the
      previous properties: the two sets swapped. No field of the request marks it a rollback;
    - a resource that fails its rollback leaves the stack UPDATE_ROLLBACK_FAILED (API
      reference, ContinueUpdateRollback); else it ends UPDATE_ROLLBACK_COMPLETE, or
      UPDATE_COMPLETE for an update that did not fail."""

    def __init__(self, stack_id: str) -> None:
        from moto.cloudformation.models import cloudformation_backends

        self.stack_id = stack_id
        (self._stack,) = (
            stack
            for backend in cloudformation_backends[ACCOUNT].values()
            for stack in backend.stacks.values()
            if stack.stack_id == stack_id
        )

    @property
    def status(self) -> str:
        return str(self._stack.status)

    @status.setter
    def status(self, status: str) -> None:
        self._stack.status = status

    def deploy(self, new: dict, old: dict, *, later_resource_fails: bool = False) -> str:
        """Update the guard from `old` to `new`; the stack's final status."""
        self.status = "UPDATE_IN_PROGRESS"
        try:
            self.update(new, old)
        except ValueError:
            failed = True
        else:
            failed = later_resource_fails
        if not failed:
            self.status = "UPDATE_COMPLETE"
            return self.status
        self.status = "UPDATE_ROLLBACK_IN_PROGRESS"
        try:
            self.update(old, new)
        except ValueError:
            self.status = "UPDATE_ROLLBACK_FAILED"
        else:
            self.status = "UPDATE_ROLLBACK_COMPLETE"
        return self.status

    def update(self, new: dict, old: dict) -> None:
        """The Update request CloudFormation sends the guard, in the stack's current status."""
        index.on_event(
            {
                "RequestType": "Update",
                "ResourceType": RESOURCE_TYPE,
                "StackId": self.stack_id,
                "LogicalResourceId": "AutoModeGuard",
                "PhysicalResourceId": "ml/auto-mode",
                "ResourceProperties": new,
                "OldResourceProperties": old,
            }
        )


ACCOUNT = "123456789012"  # moto's default account


@pytest.fixture
def stack(aws_api, monkeypatch):
    """A deployed stack; every AWS call the handler makes is checked against botocore's model."""
    strict = StrictAws.install(monkeypatch)
    created = boto3.client("cloudformation").create_stack(
        StackName=f"guard-{next(_stacks)}",
        TemplateBody=json.dumps({"Resources": {"Handle": {"Type": "AWS::SNS::Topic"}}}),
    )
    yield StackUpdates(created["StackId"])
    assert not strict.invalid_calls()


_stacks = itertools.count()


def _props(auto_mode: str, confirmed: str = "false") -> dict:
    return {
        "ServiceToken": "arn:aws:lambda:us-east-1:123456789012:function:framework",
        "ClusterName": "ml",
        "AutoMode": auto_mode,
        "TurnOffConfirmed": confirmed,
    }


def test_a_failed_deploy_that_turned_auto_mode_on_rolls_back_to_off(stack):
    """The rollback restores Auto Mode off: refusing it stranded the stack."""
    final = stack.deploy(_props("true"), _props("false"), later_resource_fails=True)
    assert final == "UPDATE_ROLLBACK_COMPLETE"


def test_turning_auto_mode_off_fails_the_update_before_the_cluster_changes(stack):
    stack.status = "UPDATE_IN_PROGRESS"
    with pytest.raises(ValueError) as err:
        stack.update(_props("false"), _props("true"))
    assert str(err.value) == (
        "gpu-pool: this deploy turns EKS Auto Mode off on cluster ml, which terminates its Auto "
        "Mode instances and deletes the load balancers it manages (EKS user guide, 'Disable EKS "
        "Auto Mode'). Set cluster.auto_mode: true to keep it, or cluster.auto_mode: false to "
        "turn it off."
    )


def test_a_deploy_that_turns_auto_mode_off_is_still_stopped_and_rolls_back(stack):
    assert stack.deploy(_props("false"), _props("true")) == "UPDATE_ROLLBACK_COMPLETE"


@pytest.mark.parametrize(
    ("new", "old", "status"),
    [
        (_props("false", confirmed="true"), _props("true"), "UPDATE_COMPLETE"),
        (_props("true"), _props("false"), "UPDATE_COMPLETE"),
        (_props("true"), _props("true"), "UPDATE_COMPLETE"),
    ],
    ids=["off-confirmed", "on", "stays-on"],
)
def test_deploys_the_guard_allows_complete(stack, new, old, status):
    assert stack.deploy(new, old) == status
