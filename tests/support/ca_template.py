"""Cluster Autoscaler's AWS node template, rebuilt from ASG tags by CA's own parsing rules.

Written from cluster-autoscaler/cloudprovider/aws (aws_manager.go, extract*FromAsg), independent
of gpu_pool's tag writer: label tags by prefix; taint tags only when the value matches
`(.*):(NoSchedule|NoExecute|PreferNoSchedule)`, split at the first ':'; resource tags only when
the value parses as a quantity.

Our reading, kept only where the real CA does not run here: tests/e2e/test_cluster_autoscaler.py
runs the 1.36.1 binary on the label, taint (EKS's spelling dropped), discovery and GPU resource
tags, time-sliced and renamed shares, mixed MIG slices and its binpacking of them (so the
estimate of nodes per pod count left this module), and which group the priority expander picks.
What stays on this reading: the unit and synth tests of templates no e2e world builds (EFA
interfaces and hugepages, training pools, every instance type of the catalog).
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
