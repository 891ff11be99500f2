"""Pod-level resources of a task's template (``rules/families/volcano/resources.py``
pod_level_resource_errors) for the apiserver: the pod's requests within its limits, at least what
its containers ask for together, and each container's limits within the pod's.

What the containers ask for together: the containers and the sidecars (init containers that keep
running, restartPolicy Always) add up; an ordinary init container runs beside the sidecars started
before it, and the pod needs the most of either. CEL of 1.30 has no fold: a list of quantities is
added up by its positions, which its maxItems bounds (``_sum``); the sidecars before each init
container, by a running sum (``_exceeded``).
"""

from __future__ import annotations

import copy
import re

from jobgate.families.volcano.cel.common import TASK
from jobgate.forms.catalogue import LIST_ITEMS, Placement, Produces, Rule, Validation, Where, bound
from jobgate.generate.cel.podtemplate import QUANTITIES, is_quantity, quantity_of
from jobgate.rules.podtemplate import POD_TEMPLATE_BOUNDS

SPEC = (*TASK, "template", "spec")
_PATH = "spec.tasks[*].template.spec"
_MOST = max(POD_TEMPLATE_BOUNDS["containers"], POD_TEMPLATE_BOUNDS["initContainers"])
_ZERO = "quantity('0')"


def _sum(quantities: str) -> str:
    """CEL of the sum of a list of quantities (of at most ``_MOST`` items)."""
    terms = "".join(f".add(size(q) > {i} ? q[{i}] : {_ZERO})" for i in range(_MOST))
    return f"[{quantities}].map(q, {_ZERO}{terms})[0]"


def _has(container: str, which: str) -> str:
    """CEL true when the container asks for the resource ``r`` (a valid quantity) in ``which``."""
    values = f"{container}.resources.{which}"
    return f"(has({container}.resources) && has({values}) && r in {values} && {is_quantity(values + '[r]')})"


def _of(container: str, which: str) -> str:
    return quantity_of(f"{container}.resources.{which}[r]")


def _sidecar(container: str) -> str:
    return f"(has({container}.restartPolicy) && {container}.restartPolicy == 'Always')"


def _exceeded(which: str, pod: str) -> str:
    """CEL true when what the containers ask for together of ``r`` in ``which`` is more than ``pod``.
    The sidecars started before each init container are added up as the init containers are walked,
    a running sum bound at each one (``[s.add(...)].all(t, ...)``: CEL of 1.30 has no cel.bind).
    Each init container is read once, into lists the walk indexes (what an ordinary one asks for,
    whether it asks, what a sidecar adds), and the pod's quantity once: the walk repeats per index,
    and reading the containers there made the policy too big to apply on a busy apiserver."""
    containers = (
        f"(has(self.containers) ? self.containers.filter(c, {_has('c', which)}).map(c, {_of('c', which)}) : [])"
    )
    inits = "self.initContainers"
    sidecars = (
        f"(has({inits}) ? {inits}.filter(c, {_sidecar('c')} && {_has('c', which)}).map(c, {_of('c', which)}) : [])"
    )
    checked = f"{inits}.map(c, !{_sidecar('c')} && {_has('c', which)})"
    asks = f"{inits}.map(c, !{_sidecar('c')} && {_has('c', which)} ? {_of('c', which)} : {_ZERO})"
    starts = f"{inits}.map(c, {_sidecar('c')} && {_has('c', which)} ? {_of('c', which)} : {_ZERO})"
    walk = "true"
    for j in reversed(range(POD_TEMPLATE_BOUNDS["initContainers"])):
        fits = f"(!initChecked[{j}] || initAsks[{j}].add(s{j}).compareTo(podQ) <= 0)"
        walk = f"(size(initChecked) <= {j} || ({fits} && [s{j}.add(initStarts[{j}])].all(s{j + 1}, {walk})))"
    walked = bound(
        checked, "initChecked", bound(asks, "initAsks", bound(starts, "initStarts", bound(_ZERO, "s0", walk)))
    )
    return bound(
        pod,
        "podQ",
        f"({_sum(containers)}.add({_sum(sidecars)}).compareTo(podQ) > 0 || (has({inits}) && !{walked}))",
    )


def _asked(which: str) -> str:
    """CEL true when a container or an init container asks for ``r`` in ``which``."""
    return (
        f"((has(self.containers) && self.containers.exists(c, {_has('c', which)})) || "
        f"(has(self.initContainers) && self.initContainers.exists(c, {_has('c', which)})))"
    )


def pod_level_resources_rules() -> list[Rule]:
    requests, limits = "self.resources.requests", "self.resources.limits"
    within = (
        f"!(r in {limits}) || !{is_quantity(requests + '[r]')} || !{is_quantity(limits + '[r]')} || "
        f"{quantity_of(requests + '[r]')}.compareTo({quantity_of(limits + '[r]')}) <= 0"
    )
    covers_requests = (
        f"!{is_quantity(requests + '[r]')} || !{_asked('requests')} || "
        f"!{_exceeded('requests', quantity_of(requests + '[r]'))}"
    )
    covers_hugepages = (
        f"!r.startsWith('hugepages-') || !{is_quantity(limits + '[r]')} || !{_asked('limits')} || "
        f"!{_exceeded('limits', quantity_of(limits + '[r]'))}"
    )
    container_within = (
        f"!{_has('c', 'limits')} || !(r in {limits}) || !{is_quantity(limits + '[r]')} || "
        f"{_of('c', 'limits')}.compareTo({quantity_of(limits + '[r]')}) <= 0"
    )
    container_over = (
        f"has(c.resources) && has(c.resources.limits) && c.resources.limits.exists(r, !({container_within}))"
    )
    pod_resources = {
        "type": "object",
        "x-kubernetes-preserve-unknown-fields": True,
        "properties": {"requests": copy.deepcopy(QUANTITIES), "limits": copy.deepcopy(QUANTITIES)},
    }
    return [
        Rule(
            "volcano/pod-level-resources/types",
            "a pod template's pod-level resources are quantities, an init container's restartPolicy a string",
            Where.SCHEMA,
            (
                Produces(f"{_PATH}.resources", "INVALID", "must be of type "),
                Produces(f"{_PATH}.resources.*", "INVALID", "must be of type "),
                Produces(f"{_PATH}.resources.*[*]", "INVALID", "must be of type "),
                Produces(f"{_PATH}.initContainers[*].restartPolicy", "INVALID", "must be of type "),
            ),
            (
                Placement(SPEC, {"properties": {"resources": pod_resources}}),
                Placement((*SPEC, "initContainers", LIST_ITEMS), {"properties": {"restartPolicy": {"type": "string"}}}),
            ),
            why="the fields the rules of pod-level resources read, typed as the apiserver types a pod's",
        ),
        Rule(
            "volcano/pod-level-resources",
            "pod-level resources: requests within limits, at least what the containers ask for together "
            "(hugepages limits too), each container's limits within the pod's",
            Where.POLICY,
            (
                Produces(f"{_PATH}.resources.requests", "INVALID", "must be less than or equal to .* limit of"),
                Produces(
                    f"{_PATH}.resources.requests[*]", "INVALID", "aggregate container requests", apiserver_drops=1
                ),
                Produces(f"{_PATH}.resources.limits[*]", "INVALID", "aggregate container limits", apiserver_drops=1),
                Produces(
                    f"{_PATH}.containers[*].resources.limits[*]",
                    "INVALID",
                    re.escape("pod limits of"),
                    apiserver_drops=4,
                ),
            ),
            (
                Placement(
                    SPEC,
                    validation=Validation(
                        rule=f"!has(self.resources) || !has({requests}) || !has({limits}) || "
                        f"{requests}.all(r, {within})",
                        message_expression=f"'must be less than or equal to ' + {requests}.filter(r, !({within}))[0] + "
                        "' limit'",
                        field_path=".resources.requests",
                    ),
                ),
                Placement(
                    SPEC,
                    validation=Validation(
                        rule=f"!has(self.resources) || !has({requests}) || {requests}.all(r, {covers_requests})",
                        message_expression=f"{requests}.filter(r, !({covers_requests}))[0] + "
                        "': must be greater than or equal to aggregate container requests'",
                        field_path=".resources.requests",
                    ),
                ),
                Placement(
                    SPEC,
                    validation=Validation(
                        rule=f"!has(self.resources) || !has({limits}) || {limits}.all(r, {covers_hugepages})",
                        message_expression=f"{limits}.filter(r, !({covers_hugepages}))[0] + "
                        "': must be greater than or equal to aggregate container limits'",
                        field_path=".resources.limits",
                    ),
                ),
                Placement(
                    SPEC,
                    validation=Validation(
                        rule=f"!has(self.resources) || !has({limits}) || !has(self.containers) || "
                        f"!self.containers.exists(c, {container_over})",
                        message_expression="'limits of container ' + self.containers.map(c, "
                        f"{container_over} && has(c.name) ? c.name : '').filter(n, n != '')[0] + "
                        "' must be less than or equal to pod limits'",
                        field_path=".containers",
                    ),
                ),
            ),
            why="a ValidatingAdmissionPolicy: it reads integer-or-string quantities, which Kubernetes 1.30's CRD cost "
            "estimate cannot bound; reported at the pod's requests, limits or containers",
        ),
    ]
