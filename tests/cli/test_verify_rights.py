"""verify's Kubernetes rights (issue 38 item 6): the ClusterRole a pipeline's verify role is
bound to (gpu_pool/cdk/cluster/verifier.py, rendered from gpu_pool/model/verify_rights.py) allows every
request verify makes, and a 403 is a verdict naming the missing right, not a traceback.

tests/support/command.run serves every verify test through a fake API server that enforces the
verify role's rights as the real one does (403 for what its RBAC doesn't allow): each of them
also proves the role allows what that run reads. These tests name the reads the diagnosis adds.
"""

from __future__ import annotations

from tests.support.command import run, verify_rights
from tests.support.fake_kube import Access, Rights, node_claim
from tests.support.karpenter_scenarios import karpenter_run, scenario

# A claim of another pool: no scale-up, so verify diagnoses the pool's NodePool and node class.
OTHER_POOLS_CLAIM = [(1, node_claim("gpu-pool-other-abcde", "other"))]


def test_a_stalled_karpenter_pool_reads_its_ec2nodeclass_which_the_role_allows(tmp_path, capsys):
    """Fails before: the ClusterRole read only NodeClaims and NodePools, so this read was a 403
    (and a traceback)."""
    code, fake = karpenter_run(tmp_path, scenario(node_claims=OTHER_POOLS_CLAIM))
    out = capsys.readouterr().out
    assert code == 1
    assert "evidence: EC2NodeClass gpu-pool-gpu: Ready" in out
    assert Access("get", "karpenter.k8s.aws", "ec2nodeclasses", None, "gpu-pool-gpu") in (
        fake.accesses
    )
    assert fake.refused == []


def test_a_stalled_auto_mode_pool_reads_its_nodeclass_which_the_role_allows(tmp_path, capsys):
    from tests.cli.test_auto_mode_diagnostics import auto_mode_run
    from tests.cli.test_auto_mode_diagnostics import scenario as auto_mode

    code, fake = auto_mode_run(tmp_path, auto_mode(node_claims=OTHER_POOLS_CLAIM))
    out = capsys.readouterr().out
    assert code == 1
    assert "evidence: NodeClass gpu-pool-gpu: Ready" in out
    assert Access("get", "eks.amazonaws.com", "nodeclasses", None, "gpu-pool-gpu") in fake.accesses
    assert fake.refused == []


def test_a_403_is_a_verdict_naming_the_verb_group_and_resource_it_lacks(tmp_path, capsys):
    """An identity without the EC2NodeClass read (an older stack's role, or one's own): the
    report names the right and the rule that grants it, and the pod is still deleted."""
    granted = verify_rights("default")
    without = Rights(
        tuple(r for r in granted.cluster_rules if r["apiGroups"] != ["karpenter.k8s.aws"]),
        granted.namespace_rules,
    )
    config = tmp_path / "karpenter.yaml"
    config.write_text("pool:\n  provisioner: karpenter\n")
    code, fake = run(
        tmp_path, scenario(node_claims=OTHER_POOLS_CLAIM), "--config", str(config), rights=without
    )
    out = capsys.readouterr().out.splitlines()
    assert code == 1
    name = fake.created[0]["metadata"]["name"]
    start = next(i for i, line in enumerate(out) if line.startswith("verify: FAILED"))
    assert out[start:] == [
        "verify: FAILED while waiting for 'scale-up': no Kubernetes right to get "
        "ec2nodeclasses (API group karpenter.k8s.aws) cluster-wide",
        '  evidence: ec2nodeclasses.karpenter.k8s.aws "gpu-pool-gpu" is forbidden: User '
        '"gpu-pool-verify" cannot get resource "ec2nodeclasses" in API group '
        '"karpenter.k8s.aws" at the cluster scope',
        "  fix: give the identity you run as this right: a pipeline's verify role gets every "
        "read gpu-pool verify makes from its stack's ClusterRole (redeploy the stack with this "
        "gpu-pool); for your own identity, bind a (Cluster)Role with the rule {apiGroups: "
        '["karpenter.k8s.aws"], resources: ["ec2nodeclasses"], verbs: ["get"]}',
        f"deleted pod default/{name}",
    ]
    assert fake.deleted == [name]


def test_a_namespaced_403_names_its_namespace(tmp_path, capsys):
    """Without the edit access policy in the smoke namespace, creating the pod is refused."""
    granted = verify_rights("default")
    code, fake = run(tmp_path, scenario(), rights=Rights(granted.cluster_rules, ()))
    out = capsys.readouterr().out
    assert code == 1
    assert (
        "verify: FAILED while waiting for 'pending': no Kubernetes right to create pods "
        "(API group core) in namespace default"
    ) in out
    assert fake.created == []


def test_a_403_without_the_api_servers_text_is_named_by_its_message_and_others_are_not():
    """A webhook authorizer's or a proxy's 403 keeps its own message; a 404 is no missing
    right (verify classifies it elsewhere)."""
    from kubernetes.client import ApiException

    from gpu_pool.cli.inspect.rbac import missing_right

    proxy = ApiException(status=403, reason="Forbidden")
    proxy.body = '{"message": "denied by policy"}'
    right = missing_right(proxy)
    assert right is not None
    assert (right.verb, right.message) == (None, "denied by policy")
    assert right.cause == "the Kubernetes API refused a request (403 Forbidden)"
    page = ApiException(status=403, reason="Forbidden")
    page.body = "<html>403 Forbidden</html>"
    assert missing_right(page).message == "<html>403 Forbidden</html>"
    assert missing_right(ApiException(status=404, reason="Not Found")) is None
