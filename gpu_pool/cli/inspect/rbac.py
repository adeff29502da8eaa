"""A 403 from the Kubernetes API, as the right the caller lacks: the verb, API group and
resource the API server's message names (k8s.io/apiserver pkg/endpoints/handlers/
responsewriters/errors.go forbiddenMessage: `User "<u>" cannot <verb> resource "<resource>" in
API group "<group>"` and `in the namespace "<ns>"` or `at the cluster scope`)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from kubernetes import client

_FORBIDDEN = re.compile(
    r'cannot (?P<verb>\S+) resource "(?P<resource>[^"]+)" in API group "(?P<group>[^"]*)"'
    r'(?: in the namespace "(?P<namespace>[^"]+)")?'
)


@dataclass(frozen=True)
class MissingRight:
    """What the API server refused, and its message; verb, group and resource are None for a
    403 that does not name them."""

    verb: str | None
    group: str | None
    resource: str | None
    namespace: str | None
    message: str

    @property
    def cause(self) -> str:
        if self.verb is None:
            return "the Kubernetes API refused a request (403 Forbidden)"
        group = self.group or "core"
        scope = f"in namespace {self.namespace}" if self.namespace else "cluster-wide"
        return f"no Kubernetes right to {self.verb} {self.resource} (API group {group}) {scope}"

    @property
    def fix(self) -> str:
        if self.verb is None:
            return "the refusal's message names who refused: your RBAC, or a webhook or proxy"
        rule = (
            f'{{apiGroups: ["{self.group}"], resources: ["{self.resource}"], '
            f'verbs: ["{self.verb}"]}}'
        )
        return (
            "give the identity you run as this right: a pipeline's verify role gets every read "
            "gpu-pool verify makes from its stack's ClusterRole (redeploy the stack with this "
            f"gpu-pool); for your own identity, bind a (Cluster)Role with the rule {rule}"
        )


def missing_right(err: client.ApiException) -> MissingRight | None:
    """The right a 403 names, or None for any other error."""
    if err.status != 403:
        return None
    try:
        status = json.loads(err.body or "{}")
    except (TypeError, ValueError):
        status = None
    # The API server's Status object; anything else (a proxy's page) is its own message.
    message = str(status.get("message", "") if isinstance(status, dict) else err.body or "")
    found = _FORBIDDEN.search(message)
    if found is None:
        # A 403 without the API server's text (a webhook authorizer's, a proxy's): its
        # message is all there is to name.
        return MissingRight(None, None, None, None, message or str(err.reason))
    return MissingRight(
        found["verb"], found["group"], found["resource"], found["namespace"], message
    )
