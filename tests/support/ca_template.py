"""Cluster Autoscaler's AWS node template, rebuilt from ASG tags by CA's own parsing rules.

Written from cluster-autoscaler/cloudprovider/aws (aws_manager.go, extract*FromAsg), independent
of gpu_pool's tag writer: label tags by prefix; taint tags only when the value matches
`(.*):(NoSchedule|NoExecute|PreferNoSchedule)`, split at the first ':'; resource tags only when
the value parses as a quantity.
"""

import re

LABEL = "k8s.io/cluster-autoscaler/node-template/label/"
TAINT = "k8s.io/cluster-autoscaler/node-template/taint/"
RESOURCE = "k8s.io/cluster-autoscaler/node-template/resources/"
_TAINT_VALUE = re.compile(r"(.*):(?:NoSchedule|NoExecute|PreferNoSchedule)")
_QUANTITY = re.compile(r"^[0-9]+(\.[0-9]+)?([KMGTPE]i?|m|k)?$")


def node_template(tags: dict[str, str]) -> dict:
    labels, taints, allocatable = {}, [], {}
    for key, value in tags.items():
        if key.startswith(LABEL) and key[len(LABEL) :]:
            labels[key[len(LABEL) :]] = value
        elif key.startswith(TAINT) and _TAINT_VALUE.search(value):
            taint_value, effect = value.split(":", 1)
            taints.append({"key": key[len(TAINT) :], "value": taint_value, "effect": effect})
        elif key.startswith(RESOURCE) and _QUANTITY.match(value):
            allocatable[key[len(RESOURCE) :]] = value
    return {"labels": labels, "taints": taints, "allocatable": allocatable}


def pod_fits_template(pod: dict, template: dict) -> bool:
    from gpu_pool.model.scheduling import pod_fits_node

    spec = pod["spec"]
    for container in spec["containers"]:
        for resource, amount in container["resources"].get("limits", {}).items():
            if int(amount) > int(template["allocatable"].get(resource, "0")):
                return False
    return pod_fits_node(spec, template["labels"], template["taints"])


def _requests(pod: dict) -> dict[str, int]:
    totals: dict[str, int] = {}
    for container in pod["spec"]["containers"]:
        for resource, amount in container["resources"].get("limits", {}).items():
            totals[resource] = totals.get(resource, 0) + int(amount)
    return totals


def estimate_nodes(pods: list[dict], template: dict) -> int:
    """How many new nodes of this template CA asks for to run `pods`: its binpacking estimator
    (cluster-autoscaler estimator/binpacking_estimator.go), which places each pod on a node it
    has already added if the pod fits there, and adds a node only for a pod that fits none."""
    free: list[dict[str, int]] = []
    for pod in pods:
        if not pod_fits_template(pod, template):
            raise ValueError("the pod fits no node of this template")
        wanted = _requests(pod)
        node = next(
            (n for n in free if all(n.get(r, 0) >= amount for r, amount in wanted.items())),
            None,
        )
        if node is None:
            node = {r: int(v) for r, v in template["allocatable"].items() if v.isdigit()}
            free.append(node)
        for resource, amount in wanted.items():
            node[resource] = node.get(resource, 0) - amount
    return len(free)
