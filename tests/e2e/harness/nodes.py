"""GPU nodes as EKS registers them, kept alive by kwok, and GPUs advertised the way a device
plugin makes the kubelet advertise them.

A node of a managed node group joins with what its kubelet and EKS give it: the well-known
labels (kubernetes.io/arch, os, hostname; node.kubernetes.io/instance-type;
topology.kubernetes.io/region and zone: Kubernetes docs, "Well-Known Labels, Annotations and
Taints"), EKS's node group labels (eks.amazonaws.com/nodegroup, eks.amazonaws.com/capacityType:
EKS user guide, "Managed node groups"), the node group's own labels and taints (the template's
AWS::EKS::Nodegroup Labels and Taints) and, on the AL2023 NVIDIA AMI with kubelet 1.35 or
newer, nodeadm's `nvidia.com/gpu.present=true` (awslabs/amazon-eks-ami, nodeadm, since release
v20260209). Capacity comes from the instance type's EC2 facts (DescribeInstanceTypes, as moto
ships them): vCPUs, memory, and no `nvidia.com/gpu` at all; allocatable is less, by what the
AMI's nodeadm reserves for the kubelet and the system and its max pods (node_resources).

The GPUs appear only once a device plugin pod is Running on the node, as with a real kubelet,
whose device manager advertises what a plugin registers (Kubernetes docs, "Device Plugins").
Which pod lands where is decided by the real DaemonSet controller and scheduler; kwok then runs
it. GpuAdvertiser plays the plugin's registration: a plugin pod Running on a node makes that
node's capacity and allocatable carry what that plugin advertises, read from the config its
release rendered (plugin_resources: the instance type's GPUs, or their time-sliced shares).
"""

from __future__ import annotations

import gzip
import json
from functools import cache
from pathlib import Path
from typing import Any

import moto
import yaml

from tests.e2e.harness.control_plane import KWOK_NODE_ANNOTATION
from tests.e2e.harness.processes import Poller

GPU_RESOURCE = "nvidia.com/gpu"
# The device plugin's image repository (nvidia-device-plugin chart values.yaml image.repository):
# a pod running it is a device plugin, whichever release or namespace deployed it.
DEVICE_PLUGIN_IMAGE = "nvcr.io/nvidia/k8s-device-plugin"
# nodeadm labels GPU nodes of the AL2023 NVIDIA AMI so (see the module docstring).
NODEADM_GPU_LABEL = {"nvidia.com/gpu.present": "true"}
_ARCH = {"x86_64": "amd64", "arm64": "arm64"}
_EFFECT = {
    "NO_SCHEDULE": "NoSchedule",
    "NO_EXECUTE": "NoExecute",
    "PREFER_NO_SCHEDULE": "PreferNoSchedule",
}


@cache
def instance_type_facts(instance_type: str) -> dict[str, Any]:
    """DescribeInstanceTypes' entry for a type, from the copy moto ships."""
    path = Path(moto.__file__).parent / "ec2" / "resources" / "instance_types.json.gz"
    with gzip.open(path) as data:
        return dict(json.load(data)[instance_type])


def gpu_count(instance_type: str) -> int:
    """Whole GPUs EC2 reports for the type (0 for fractional ones, as EC2 says)."""
    gpus = instance_type_facts(instance_type).get("GpuInfo", {}).get("Gpus", [])
    return sum(int(g["Count"]) for g in gpus)


def node_group_node(
    name: str,
    nodegroup: dict[str, Any],
    *,
    nodegroup_name: str,
    zone: str = "us-east-1a",
    instance_type: str | None = None,
    kubelet_minor: int = 36,
) -> dict[str, Any]:
    """The Node object a managed node group's instance registers, from the group's template
    properties (AWS::EKS::Nodegroup): labels, taints and the first instance type's facts."""
    instance_type = instance_type or nodegroup["InstanceTypes"][0]
    facts = instance_type_facts(instance_type)
    labels = {
        "kubernetes.io/arch": _ARCH[facts["ProcessorInfo"]["SupportedArchitectures"][0]],
        "kubernetes.io/os": "linux",
        "kubernetes.io/hostname": name,
        "node.kubernetes.io/instance-type": instance_type,
        "topology.kubernetes.io/region": zone[:-1],
        "topology.kubernetes.io/zone": zone,
        "eks.amazonaws.com/nodegroup": nodegroup_name,
        "eks.amazonaws.com/capacityType": nodegroup.get("CapacityType", "ON_DEMAND"),
        **(NODEADM_GPU_LABEL if gpu_count(instance_type) and kubelet_minor >= 35 else {}),
        **nodegroup.get("Labels", {}),
    }
    taints = [
        {
            "key": t["Key"],
            **({"value": t["Value"]} if t.get("Value") else {}),
            "effect": _EFFECT[t["Effect"]],
        }
        for t in nodegroup.get("Taints", [])
    ]
    capacity, allocatable = node_resources(instance_type, nodegroup.get("DiskSize", 20))
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels, "annotations": dict(KWOK_NODE_ANNOTATION)},
        "spec": {"taints": taints} if taints else {},
        "status": {"capacity": capacity, "allocatable": allocatable},
    }


def max_pods(instance_type: str) -> int:
    """The kubelet's maxPods on the AL2023 AMI: the ENIs of the default network card times
    their IPv4 addresses less one, plus 2 host-network pods (awslabs/amazon-eks-ami nodeadm,
    internal/kubelet/max_pods.go and its eni-max-pods.txt: g5.xlarge 58, p5.48xlarge 100)."""
    network = instance_type_facts(instance_type)["NetworkInfo"]
    cards = {c["NetworkCardIndex"]: c for c in network.get("NetworkCards", [])}
    default = cards.get(network.get("DefaultNetworkCardIndex", 0), {})
    enis = int(default.get("MaximumNetworkInterfaces", network["MaximumNetworkInterfaces"]))
    return enis * (int(network["Ipv4AddressesPerInterface"]) - 1) + 2


def _reserved_millicores(vcpus: int) -> int:
    """nodeadm's getCPUMillicoresToReserve: 6% of the first core, 1% of the second, 0.5% of
    the third and fourth, 0.25% of the rest."""
    total, reserved = vcpus * 1000, 0
    for start, end, per_ten_thousand in (
        (0, 1000, 600),
        (1000, 2000, 100),
        (2000, 4000, 50),
        (4000, total, 25),
    ):
        if total > start:
            reserved += (min(total, end) - start) * per_ten_thousand // 10000
    return reserved


def node_resources(instance_type: str, disk_gib: int) -> tuple[dict[str, str], dict[str, str]]:
    """(capacity, allocatable) of the kubelet nodeadm configures (internal/kubelet/config.go):
    allocatable is capacity less kubeReserved (CPU by _reserved_millicores, memory 11 MiB a pod
    plus 255 MiB, 1 GiB of ephemeral storage) and evictionHard (100 MiB of memory, 10% of the
    node's disk); pods: max_pods."""
    facts = instance_type_facts(instance_type)
    vcpus, memory = int(facts["VCpuInfo"]["DefaultVCpus"]), int(facts["MemoryInfo"]["SizeInMiB"])
    pods = max_pods(instance_type)
    disk = disk_gib * 1024**3
    capacity = {
        "cpu": str(vcpus),
        "memory": f"{memory}Mi",
        "pods": str(pods),
        "ephemeral-storage": str(disk),
    }
    allocatable = {
        "cpu": f"{vcpus * 1000 - _reserved_millicores(vcpus)}m",
        "memory": f"{memory - (11 * pods + 255) - 100}Mi",
        "pods": str(pods),
        "ephemeral-storage": str(disk - 1024**3 - disk // 10),
    }
    return capacity, allocatable


# The NVIDIA DRA driver's image (dra-driver-nvidia-gpu chart 0.4.1 values.yaml image.repository);
# its DaemonSet's pods are the kubelet plugin (its controller is a Deployment of the same image).
DRA_DRIVER_IMAGE = "registry.k8s.io/dra-driver-nvidia/dra-driver-nvidia-gpu"
DRA_GPU_DRIVER = "gpu.nvidia.com"


def _pcie_root(gpu: int) -> str:
    """The PCIe root of GPU `gpu`'s switch: its EFA interfaces sit under the same root."""
    return f"pci0000:{0x30 + gpu:02x}"


def _slice(node: Any, driver: str, devices: list[dict[str, Any]]) -> dict[str, Any]:
    """A kubelet plugin's ResourceSlice: one pool named after the node, owned by the node, as
    the kubelet plugin library publishes it (k8s.io/dynamic-resource-allocation/kubeletplugin):
    deleted with the node."""
    name = node.metadata.name
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {
            "name": f"{name}-{driver}",
            "ownerReferences": [
                {"apiVersion": "v1", "kind": "Node", "name": name, "uid": node.metadata.uid}
            ],
        },
        "spec": {
            "driver": driver,
            "nodeName": name,
            "pool": {"name": name, "generation": 1, "resourceSliceCount": 1},
            "devices": devices,
        },
    }


# The EFA DRA driver (DRANET) of the aws-dranet chart 1.0.0: its image (values.yaml
# image.repository), driver name and the attribute its DeviceClass selects EFA devices by
# (templates/deviceclass.yaml: device.attributes["dra.net"].pciDevice == 'Elastic Fabric
# Adapter (EFA)').
EFA_DRA_DRIVER_IMAGE = "602401143452.dkr.ecr.us-west-2.amazonaws.com/eks/dranet"
EFA_DRA_DRIVER = "dra.net"


def efa_resource_slice(node: Any) -> dict[str, Any]:
    """The EFA interfaces the type has (DescribeInstanceTypes' MaximumEfaInterfaces) as DRANET
    publishes them, spread evenly over the GPUs' PCIe roots (a p5.48xlarge has 4 per GPU)."""
    instance_type = node.metadata.labels["node.kubernetes.io/instance-type"]
    efas = instance_type_facts(instance_type)["NetworkInfo"]["EfaInfo"]["MaximumEfaInterfaces"]
    per_gpu = max(1, efas // max(1, gpu_count(instance_type)))
    devices = [
        {
            "name": f"efa-{index}",
            "attributes": {
                "pciDevice": {"string": "Elastic Fabric Adapter (EFA)"},
                "resource.kubernetes.io/pcieRoot": {"string": _pcie_root(index // per_gpu)},
            },
        }
        for index in range(efas)
    ]
    return _slice(node, EFA_DRA_DRIVER, devices)


def gpu_resource_slice(node: Any) -> dict[str, Any]:
    """The ResourceSlice the driver's kubelet plugin publishes for a node: one pool named after
    the node, one device per GPU named gpu-<minor>, with the attributes and capacity of
    GpuInfo.GetDevice (NVIDIA/k8s-dra-driver-gpu cmd/gpu-kubelet-plugin/deviceinfo.go, the code
    kubernetes-sigs/dra-driver-nvidia-gpu carries on) and the standard PCIe root attribute
    (k8s.io/dynamic-resource-allocation/deviceattribute, resource.kubernetes.io/pcieRoot)."""
    name = node.metadata.name
    instance_type = node.metadata.labels["node.kubernetes.io/instance-type"]
    (gpu,) = instance_type_facts(instance_type)["GpuInfo"]["Gpus"]
    devices = [
        {
            "name": f"gpu-{minor}",
            "attributes": {
                "type": {"string": "gpu"},
                "uuid": {"string": f"GPU-{name}-{minor}"},
                "productName": {"string": f"NVIDIA {gpu['Name']}"},
                "brand": {"string": "Nvidia"},
                "architecture": {"string": "Ada Lovelace"},
                "cudaComputeCapability": {"version": "8.9.0"},
                "driverVersion": {"version": "580.95.5"},
                "cudaDriverVersion": {"version": "13.0.0"},
                "pcieBusID": {"string": f"0000:{0x30 + minor:02x}:00.0"},
                "addressingMode": {"string": "None"},
                "resource.kubernetes.io/pcieRoot": {"string": _pcie_root(minor)},
            },
            "capacity": {"memory": {"value": f"{gpu['MemoryInfo']['SizeInMiB']}Mi"}},
        }
        for minor in range(gpu_count(instance_type))
    ]
    return _slice(node, DRA_GPU_DRIVER, devices)


class GpuAdvertiser(Poller):
    """Advertises a node's GPUs while a device plugin pod runs on it, and publishes its
    ResourceSlice while the DRA driver's kubelet plugin runs on it (polled every 0.2 s)."""

    interval = 0.2

    def __init__(self, core: Any, resource: Any) -> None:
        super().__init__()
        self._core = core
        self._resource = resource

    def sync_once(self) -> None:
        self.advertise_once()

    def advertise_once(self) -> None:
        pods = self._core.list_pod_for_all_namespaces(field_selector="status.phase=Running")
        plugin_pods = [
            pod
            for pod in pods.items
            if any(c.image.startswith(DEVICE_PLUGIN_IMAGE) for c in pod.spec.containers)
        ]
        published = {
            (s.spec.driver, s.spec.node_name) for s in self._resource.list_resource_slice().items
        }
        for image, driver, publish in (
            (DRA_DRIVER_IMAGE, DRA_GPU_DRIVER, gpu_resource_slice),
            (EFA_DRA_DRIVER_IMAGE, EFA_DRA_DRIVER, efa_resource_slice),
        ):
            with_driver = {
                pod.spec.node_name
                for pod in pods.items
                if any(c.image.startswith(image) for c in pod.spec.containers)
                and any(o.kind == "DaemonSet" for o in pod.metadata.owner_references or [])
            }
            for name in with_driver - {n for d, n in published if d == driver}:
                self._resource.create_resource_slice(publish(self._core.read_node(name)))
        for pod in plugin_pods:
            node = self._core.read_node(pod.spec.node_name)
            advertised = plugin_resources(self._core, pod, node)
            allocatable = node.status.allocatable or {}
            if all(allocatable.get(k) == str(v) for k, v in advertised.items()):
                continue
            counts = {k: str(v) for k, v in advertised.items()}
            self._core.patch_node_status(
                node.metadata.name, {"status": {"capacity": counts, "allocatable": counts}}
            )


# The device plugin's config-manager (the chart's sidecar when the release carries configs):
# which node label names the node's config, the config without one, and the volume holding
# them (nvidia-device-plugin chart 0.20.0, templates/daemonset-device-plugin.yml).
_CONFIG_VOLUME = "available-configs"


def _env(pod: Any, name: str) -> str | None:
    for container in [*(pod.spec.init_containers or []), *pod.spec.containers]:
        for variable in container.env or []:
            if variable.name == name:
                return str(variable.value)
    return None


def plugin_config(core: Any, pod: Any, node: Any) -> dict[str, Any]:
    """The config file the plugin on `node` reads, as its config-manager picks it: the
    ConfigMap's entry the node's label names (NODE_LABEL), else DEFAULT_CONFIG; {} for a
    release without configs (the plugin's defaults: every GPU whole)."""
    volumes = {v.name: v for v in pod.spec.volumes or []}
    if _CONFIG_VOLUME not in volumes:
        return {}
    config_map = core.read_namespaced_config_map(
        volumes[_CONFIG_VOLUME].config_map.name, pod.metadata.namespace
    )
    label = _env(pod, "NODE_LABEL") or ""
    name = (node.metadata.labels or {}).get(label) or _env(pod, "DEFAULT_CONFIG") or ""
    return dict(yaml.safe_load(config_map.data[name]) or {})


def plugin_resources(core: Any, pod: Any, node: Any) -> dict[str, int]:
    """What the plugin makes the kubelet advertise on `node`, from its config (the plugin's
    README, "Shared Access to GPUs"): each GPU whole as nvidia.com/gpu; with time-slicing,
    `replicas` shares of each GPU under the resource's name, or `<name>.shared` with
    renameByDefault (or its own `rename`), the whole GPUs then not advertised. MIG is not
    modelled here (its instances come from the GPU Operator's MIG manager): a MIG config fails
    loudly rather than advertising what no plugin would."""
    instance_type = (node.metadata.labels or {}).get("node.kubernetes.io/instance-type", "")
    gpus = gpu_count(instance_type) if instance_type else 0
    config = plugin_config(core, pod, node)
    strategy = config.get("flags", {}).get("migStrategy", "none")
    if strategy != "none":
        raise NotImplementedError(f"e2e: migStrategy {strategy} is not modelled")
    slicing = config.get("sharing", {}).get("timeSlicing", {})
    advertised = {GPU_RESOURCE: gpus}
    for resource in slicing.get("resources", []):
        name = resource["name"]
        renamed = resource.get("rename") or (
            f"{name}.shared" if slicing.get("renameByDefault") else name
        )
        if renamed != name:
            advertised.pop(name, None)
        advertised[renamed] = gpus * int(resource["replicas"])
    return advertised
