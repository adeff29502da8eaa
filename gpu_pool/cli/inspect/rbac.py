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
    """What the API server refused, and its message."""

    verb: str
    group: str
    resource: str
    namespace: str | None
    message: str

    @property
    def cause(self) -> str:
        group = self.group or "core"
        scope = f"in namespace {self.namespace}" if self.namespace else "cluster-wide"
        return f"no Kubernetes right to {self.verb} {self.resource} (API group {group}) {scope}"

    @property
    def fix(self) -> str:
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
        message = str(json.loads(err.body or "{}").get("message", ""))
    except (TypeError, ValueError):
        message = str(err.body or err.reason)
    found = _FORBIDDEN.search(message)
    if found is None:
        # A 403 without the API server's text (a webhook authorizer's, a proxy's): its
        # message is all there is to name.
        return MissingRight("?", "?", "?", None, message or str(err.reason))
    return MissingRight(
        found["verb"], found["group"], found["resource"], found["namespace"], message
    )
