"""The node group handler routes every custom resource type the templates send it.

The handler ships as a Lambda asset and cannot import the constructs, so each side spells the
type strings itself: a type renamed on one side only would pass the handler's own tests and
fail every deploy. Here the types come from a synthesized template, found the way
CloudFormation finds the handler: resource -> ServiceToken -> the Provider framework's Lambda
-> its USER_ON_EVENT_FUNCTION_ARN -> the Lambda whose code is handler/index.py.
"""

from gpu_pool.cdk.nodes import volume_key
from gpu_pool.cdk.auto_mode import guard
from gpu_pool.cdk.nodegroups import asg_tags, scaling
from gpu_pool.cdk.nodegroups.handler import index
from tests.support.cfn import resources, synth
from tests.support.settings import NODE_GROUP_KMS


def _arn_of(value):
    """The logical id of a {"Fn::GetAtt": [id, "Arn"]}."""
    logical_id, attribute = value["Fn::GetAtt"]
    assert attribute == "Arn"
    return logical_id


def handler_resource_types(template) -> dict[str, str]:
    """{logical id: resource type} of every resource the template routes to index.on_event."""
    functions = resources(template, "AWS::Lambda::Function")
    handlers = {
        logical_id
        for logical_id, function in functions.items()
        if function["Properties"].get("Handler") == "index.on_event"
        and "gpu-pool: node group" in function["Properties"].get("Description", "")
    }
    assert len(handlers) == 1, handlers
    frameworks = {
        logical_id
        for logical_id, function in functions.items()
        if (function["Properties"].get("Environment") or {})
        .get("Variables", {})
        .get("USER_ON_EVENT_FUNCTION_ARN", {})
        .get("Fn::GetAtt", [None])[0]
        in handlers
    }
    assert len(frameworks) == 1, frameworks
    return {
        logical_id: resource["Type"]
        for logical_id, resource in template.to_json()["Resources"].items()
        if isinstance(resource.get("Properties", {}).get("ServiceToken"), dict)
        and "Fn::GetAtt" in resource["Properties"]["ServiceToken"]
        and _arn_of(resource["Properties"]["ServiceToken"]) in frameworks
    }


def test_the_handler_routes_every_type_the_template_sends_it(default_template):
    sent = handler_resource_types(default_template)
    # Both kinds of per-node-group resource and the cluster's Auto Mode guard, or this test
    # checks less than it claims.
    assert set(sent.values()) == {
        asg_tags.RESOURCE_TYPE,
        scaling.RESOURCE_TYPE,
        guard.RESOURCE_TYPE,
    }
    assert set(sent.values()) <= index.HANDLERS.keys()


def test_the_handler_routes_a_volume_keys_grant():
    sent = set(handler_resource_types(synth(NODE_GROUP_KMS)).values())
    assert volume_key.RESOURCE_TYPE in sent
    assert sent <= index.HANDLERS.keys()
