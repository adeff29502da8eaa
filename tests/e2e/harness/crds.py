"""The CustomResourceDefinitions gpu-pool's objects need, each from the release it pins:
Karpenter's from its Go module at the pinned version (pkg/apis/crds, the CRDs generated from
that release's API types; gpu_pool/model/versions.py KARPENTER), and the charts' own crds/
folders (GPU Operator, NVIDIA DRA driver, CloudWatch observability). Two are not published by
their owners and stay the schemas the suite writes from their docs: EKS Auto Mode's NodeClass
(tests/fixtures/eks-auto-mode) and nodeadm's NodeConfig (tests/fixtures/nodeadm-v20260724,
generated from amazon-eks-ami's types at that tag); the API server judges objects by them all
the same."""

from __future__ import annotations

from pathlib import Path

import yaml

from gpu_pool.model.versions import KARPENTER
from tests.e2e.harness.build import module_dir
from tests.e2e.harness.stack_objects import VENDORED_CHARTS
from tests.support.paths import FIXTURES

KARPENTER_MODULE = "github.com/aws/karpenter-provider-aws"
KARPENTER_CRDS = (
    "karpenter.sh_nodepools.yaml",
    "karpenter.sh_nodeclaims.yaml",
    "karpenter.k8s.aws_ec2nodeclasses.yaml",
)


def karpenter_module() -> Path:
    return module_dir(KARPENTER_MODULE, f"v{KARPENTER.version}")


def crd_files() -> list[Path]:
    crds = karpenter_module() / "pkg" / "apis" / "crds"
    return [
        *(crds / name for name in KARPENTER_CRDS),
        FIXTURES / "eks-auto-mode" / "eks.amazonaws.com_nodeclasses.yaml",
        FIXTURES / "nodeadm-v20260724" / "node.eks.aws_nodeconfigs.yaml",
        *sorted((VENDORED_CHARTS["gpu-operator"] / "crds").glob("*.yaml")),
        *sorted((VENDORED_CHARTS["dra-driver-nvidia-gpu"] / "crds").glob("*.yaml")),
        *sorted(
            (FIXTURES / "charts" / "amazon-cloudwatch-observability-6.4.0" / "crds").glob("*.yaml")
        ),
    ]


def crd_documents() -> list[dict]:
    return [
        document
        for path in crd_files()
        for document in yaml.safe_load_all(path.read_text())
        if document and document.get("kind") == "CustomResourceDefinition"
    ]
