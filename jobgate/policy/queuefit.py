"""``require.fitsQueue``: refuse at admission a job its queue can never run.

A job that asks more than its queue can ever hold is stored, then waits forever (Kueue:
``QuotaReserved=False`` with ``ExceedsMaxQuota``, ``NoMatchingFlavor`` or ``Misconfigured``; Volcano:
a PodGroup left Pending). This check says so before anything is stored, from the queue objects the
review's context shows (:mod:`.queueobjects`).

**Kueue** (the kinds Kueue integrates: ``KUEUE_INTEGRATED`` of the ``KindMap.kueue`` families, through
``kueue.x-k8s.io/queue-name``; a label on any other kind, a Kubeflow v1 MPIJob included, is not
checked). LocalQueue in the job's namespace → its ClusterQueue (a missing or stopped one, or one whose
``namespaceSelector`` leaves the namespace out, is misconfigured) → its resource groups. What is
modelled, as Kueue's flavor assigner (``pkg/scheduler/flavorassigner``) and quota tree
(``pkg/cache/scheduler/resource_node.go``) do it:

- each pod set asks ``count`` × the pod's request (:mod:`.podrequests`), plus ``pods`` = ``count``
  when the ClusterQueue has quota for ``pods``; a resource no resource group covers is never
  admitted ("resource X unavailable in ClusterQueue");
- a pod set takes one flavor per resource group, among the flavors whose ``nodeTaints`` it tolerates
  (with the flavor's own ``tolerations``) and whose ``nodeLabels`` its node selector and required node
  affinity accept (only the flavor's label keys are compared); pod sets given the same flavor add up;
- the most a ClusterQueue can ever have of a flavor's resource is Kueue's ``potentialAvailable``:
  its ``nominalQuota``, plus what its cohort tree can lend (each Cohort's own quota and its members'
  quota past their ``lendingLimit``), capped by ``borrowingLimit`` at each level.

The job is refused only when no assignment of flavors to its pod sets fits (every assignment is
tried, not only Kueue's first-fit order, so that a job Kueue could admit in some state of the
cluster is never refused). Where only an assignment other than Kueue's first-fit one fits, or the
search is too large, or DRA claims are asked (Kueue counts them by its own configuration,
``deviceClassMappings``), the job is admitted with a warning saying so. Not modelled (admitted):
admission checks, TAS, Kueue's configuration (``resources.excludeResourcePrefixes``,
``resourceTransformations``), LimitRange defaults and RuntimeClass overhead (they only add).

**Volcano** (Volcano Jobs, and jobs of other kinds whose pod templates name ``schedulerName:
volcano`` and whose scheduling policy names a queue). The Queue must exist and be open; the job's
minimum (``schedulingPolicy.minResources`` where the kind has one, else the gang minimum of
:func:`.podrequests.gang_minimum`) must fit, per resource the queue's ``capability`` names (cpu or
memory at zero or less bounds nothing, as Volcano's scheduler reads it), in the queue and in each
parent up ``spec.parent`` (hierarchical queues).
"""

from __future__ import annotations

from jobgate.engine.fielderrors import Key, render_path
from jobgate.policy.fieldmap import KUEUE_LABEL, TEMPLATE, get_path
from jobgate.policy.podrequests import gang_minimum, kueue_pod_sets, parse_resources, volcano_tasks
from jobgate.policy.selectors import selector_matches

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at run time (start-up)
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

    from jobgate.engine.fielderrors import FieldPath
    from jobgate.policy.fieldmap import KindMap
    from jobgate.policy.gpu import Amount
    from jobgate.policy.podrequests import PodSet
    from jobgate.policy.queueobjects import QueueObjects

FIT = "policy/queue-fit"
MISCONFIGURED = "policy/queue-misconfigured"
OBJECTS_MISSING = "policy/queue-objects-missing"
NOT_MODELLED = "policy/queue-fit-not-modelled"
RULES = (FIT, MISCONFIGURED, OBJECTS_MISSING, NOT_MODELLED)

VOLCANO_SCHEDULER = "volcano"
# The kinds of the Kueue-labelled families (KindMap.kueue) that Kueue itself integrates
# (pkg/controller/jobs/kubeflow/jobs; pkg/controller/jobs/jobset: one pod set per replicated job;
# pkg/controller/jobs/trainjob: its pod sets are its runtime's replicated jobs): not kubeflow.org/v1
# MPIJob, Kueue's MPIJob being mpi-operator's v2beta1.
KUEUE_INTEGRATED = frozenset(("TFJob", "PyTorchJob", "XGBoostJob", "PaddleJob", "JAXJob", "JobSet", "TrainJob"))
# Kueue's stopPolicy values that stop admission (``None`` is the default and admits).
_STOPPED = ("Hold", "HoldAndDrain")
_CLOSED = ("Closed", "Closing")
# The most assignments of pod sets to flavors tried in one resource group before giving up (warning).
SEARCH_LIMIT = 20000

KUEUE_EXPORT = "kubectl get localqueues,clusterqueues,resourceflavors,cohorts -A -o yaml"
VOLCANO_EXPORT = "kubectl get queues.scheduling.volcano.sh -o yaml"


class Outcome:
    """One thing the check found, before it is a finding of each policy that requires it."""

    __slots__ = ("identity", "message", "path", "rule", "value")

    def __init__(self, rule: str, path: FieldPath, value: Any, message: str, identity: tuple[Any, ...]) -> None:
        self.rule = rule
        self.path = path
        self.value = value
        self.message = message
        self.identity = identity

    def __repr__(self) -> str:
        return f"Outcome({self.rule!r}, {render_path(self.path)!r}, {self.message!r})"


# --- quantities in messages --------------------------------------------------------------------------


def format_amount(value: Amount) -> str:
    """A quantity as a person writes it: ``32``, ``500m``, ``64Gi``, ``1.5``."""
    denominator = getattr(value, "denominator", 1)
    if denominator == 1:
        number = int(value)
        for suffix, size in (("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20)):
            if number >= size and number % size == 0:
                return f"{number // size}{suffix}"
        return str(number)
    milli = value * 1000
    if getattr(milli, "denominator", 1) == 1:
        return f"{int(milli)}m"
    return f"{float(value):g}"


def _breakdown(pod_sets: list[PodSet], resource: str) -> str:
    parts = [
        f"{p.name} {p.count} × {format_amount(p.per_pod[resource])}"
        for p in pod_sets
        if p.count and p.per_pod.get(resource)
    ]
    return ", ".join(parts)


# --- Kueue: the quota tree ---------------------------------------------------------------------------


class _Quota:
    __slots__ = ("borrowing", "lending", "nominal")

    def __init__(self, nominal: Amount, borrowing: Amount | None, lending: Amount | None) -> None:
        self.nominal = nominal
        self.borrowing = borrowing
        self.lending = lending


def _parse(value: Any) -> Amount | None:
    from jobgate.policy.gpu import QuantityError, parse_quantity

    if value is None:
        return None
    try:
        return parse_quantity(value)
    except QuantityError:
        return None


def _quotas(spec: Any) -> dict[tuple[str, str], _Quota]:
    """(flavor, resource) → quota of a ClusterQueue's or Cohort's ``spec.resourceGroups``."""
    out: dict[tuple[str, str], _Quota] = {}
    groups = spec.get("resourceGroups") if isinstance(spec, dict) else None
    for group in groups if isinstance(groups, list) else []:
        flavors = group.get("flavors") if isinstance(group, dict) else None
        for flavor in flavors if isinstance(flavors, list) else []:
            if not isinstance(flavor, dict) or not isinstance(flavor.get("name"), str):
                continue
            resources = flavor.get("resources")
            for resource in resources if isinstance(resources, list) else []:
                if isinstance(resource, dict) and isinstance(resource.get("name"), str):
                    out[flavor["name"], resource["name"]] = _Quota(
                        _parse(resource.get("nominalQuota")) or 0,
                        _parse(resource.get("borrowingLimit")),
                        _parse(resource.get("lendingLimit")),
                    )
    return out


def cohort_of(cluster_queue: Mapping[str, Any]) -> str | None:
    """A ClusterQueue's cohort: ``spec.cohortName`` (v1beta2) or ``spec.cohort`` (v1beta1)."""
    spec = cluster_queue.get("spec")
    if not isinstance(spec, dict):
        return None
    name = spec.get("cohortName") or spec.get("cohort")
    return name if isinstance(name, str) and name else None


def parent_of_cohort(cohort: Mapping[str, Any] | None) -> str | None:
    spec = cohort.get("spec") if cohort is not None else None
    if not isinstance(spec, dict):
        return None
    name = spec.get("parentName") or spec.get("parent")
    return name if isinstance(name, str) and name else None


def _name(obj: Mapping[str, Any]) -> str:
    metadata = obj.get("metadata")
    name = metadata.get("name") if isinstance(metadata, dict) else None
    return name if isinstance(name, str) else ""


class QuotaTree:
    """Kueue's quota tree for one ClusterQueue: ``potential_available`` per flavor and resource."""

    def __init__(self, store: QueueObjects, cluster_queue: Mapping[str, Any]) -> None:
        self.store = store
        self.cq_name = _name(cluster_queue)
        self.cq_quotas = _quotas(cluster_queue.get("spec"))
        self.cohort = cohort_of(cluster_queue)
        # Cohort name → its quotas, parent and children (ClusterQueues' quotas, child cohorts).
        self._cohort_quotas: dict[str, dict[tuple[str, str], _Quota]] = {}
        self._children_cqs: dict[str, list[dict[tuple[str, str], _Quota]]] = {}
        self._children_cohorts: dict[str, list[str]] = {}
        for cq in store.cluster_queues():
            parent = cohort_of(cq)
            if parent:
                quotas = self.cq_quotas if _name(cq) == self.cq_name else _quotas(cq.get("spec"))
                self._children_cqs.setdefault(parent, []).append(quotas)
        for cohort in store.cohorts():
            parent = parent_of_cohort(cohort)
            if parent:
                self._children_cohorts.setdefault(parent, []).append(_name(cohort))
        self._subtree: dict[tuple[str, str, str], Amount] = {}

    def cohort_chain(self) -> list[str] | None:
        """The cohorts from the ClusterQueue's up to the root; None on a cycle (Kueue then leaves the
        ClusterQueue inactive)."""
        chain: list[str] = []
        name = self.cohort
        while name:
            if name in chain:
                return None
            chain.append(name)
            name = parent_of_cohort(self.store.cohort(name))
        return chain

    def _own(self, cohort: str) -> dict[tuple[str, str], _Quota]:
        quotas = self._cohort_quotas.get(cohort)
        if quotas is None:
            obj = self.store.cohort(cohort)
            quotas = self._cohort_quotas[cohort] = _quotas(obj.get("spec")) if obj is not None else {}
        return quotas

    @staticmethod
    def _local(subtree: Amount, quota: _Quota | None) -> Amount:
        if quota is None or quota.lending is None:
            return 0
        return max(0, subtree - quota.lending)

    def _cohort_subtree(self, cohort: str, fr: tuple[str, str], depth: int = 0) -> Amount:
        key = (cohort, *fr)
        if key in self._subtree:
            return self._subtree[key]
        quota = self._own(cohort).get(fr)
        total: Amount = quota.nominal if quota is not None else 0
        for cq_quotas in self._children_cqs.get(cohort, []):
            child = cq_quotas.get(fr)
            sub = child.nominal if child is not None else 0
            total += sub - self._local(sub, child)
        if depth < 64:  # a cycle is refused before this is asked; the bound keeps a bad tree finite
            for child_name in self._children_cohorts.get(cohort, []):
                sub = self._cohort_subtree(child_name, fr, depth + 1)
                total += sub - self._local(sub, self._own(child_name).get(fr))
        self._subtree[key] = total
        return total

    def potential_available(self, flavor: str, resource: str) -> Amount:
        """The most of ``resource`` in ``flavor`` the ClusterQueue can ever hold (nothing else running)."""
        fr = (flavor, resource)
        chain = self.cohort_chain() or []
        quota = self.cq_quotas.get(fr)
        subtree: Amount = quota.nominal if quota is not None else 0
        if not chain:
            return subtree
        # Up from the root: the root's potential is its subtree; each level below adds its local
        # quota to its parent's and is capped by its own borrowing limit.
        available = self._cohort_subtree(chain[-1], fr)
        for index in range(len(chain) - 2, -1, -1):
            name = chain[index]
            own = self._own(name).get(fr)
            sub = self._cohort_subtree(name, fr)
            available = self._local(sub, own) + available
            if own is not None and own.borrowing is not None:
                available = min(sub + own.borrowing, available)
        available = self._local(subtree, quota) + available
        if quota is not None and quota.borrowing is not None:
            available = min(subtree + quota.borrowing, available)
        return available

    def describe(self, flavor: str, resource: str) -> str:
        quota = self.cq_quotas.get((flavor, resource))
        if quota is None:
            return f"no quota for {resource}"
        parts = [f"nominalQuota {format_amount(quota.nominal)}"]
        if self.cohort:
            if quota.borrowing is not None:
                parts.append(f"borrowingLimit {format_amount(quota.borrowing)}")
            parts.append(f"cohort {self.cohort}")
        return ", ".join(parts)


# --- Kueue: flavors ----------------------------------------------------------------------------------


def _object(value: Any) -> dict[str, Any]:
    """An object field as a dict (anything else, as a malformed object may hold, as an empty one)."""
    return value if isinstance(value, dict) else {}


def _items(value: Any) -> list[Any]:
    """A list field as a list (anything else, as a malformed object may hold, as none)."""
    return value if isinstance(value, list) else []


def _tolerates(tolerations: list[Any], taint: Mapping[str, Any]) -> bool:
    for toleration in tolerations:
        if not isinstance(toleration, dict):
            continue
        effect = toleration.get("effect")
        if effect and effect != taint.get("effect"):
            continue
        key = toleration.get("key")
        operator = toleration.get("operator") or "Equal"
        if not key:
            if operator == "Exists":
                return True
            continue
        if key != taint.get("key"):
            continue
        if operator == "Exists" or (toleration.get("value") or "") == (taint.get("value") or ""):
            return True
    return False


def _expression_matches(expression: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    key, operator = expression.get("key"), expression.get("operator")
    values = _items(expression.get("values"))
    if not isinstance(key, str):
        return False
    present = key in labels
    if operator == "In":
        return present and labels[key] in values
    if operator == "NotIn":
        return not present or labels[key] not in values
    if operator == "Exists":
        return present
    if operator == "DoesNotExist":
        return not present
    if operator in ("Gt", "Lt") and present and len(values) == 1:
        try:
            have, bound = int(labels[key]), int(values[0])
        except (TypeError, ValueError):
            return False
        return have > bound if operator == "Gt" else have < bound
    return False


def flavor_rejects(flavor: Mapping[str, Any], pod_spec: Any) -> str | None:
    """Why a ResourceFlavor cannot take a pod of ``pod_spec`` (None: it can), as Kueue's
    ``checkFlavorForPodSets``: an untolerated NoSchedule/NoExecute taint, or node labels the pod's
    node selector or required node affinity refuse (only the flavor's label keys compared)."""
    spec = _object(flavor.get("spec"))
    pod = _object(pod_spec)
    tolerations = [*_items(pod.get("tolerations")), *_items(spec.get("tolerations"))]
    for taint in _items(spec.get("nodeTaints")):
        stops = isinstance(taint, dict) and taint.get("effect") in ("NoSchedule", "NoExecute")
        if stops and not _tolerates(tolerations, taint):
            shown = f"{taint.get('key')}={taint.get('value') or ''}:{taint.get('effect')}"
            return f"untolerated taint {shown}"
    labels = _object(spec.get("nodeLabels"))
    selector = pod.get("nodeSelector")
    for key, value in (selector if isinstance(selector, dict) else {}).items():
        if key in labels and labels[key] != value:
            return f"nodeSelector {key}={value} against its node label {key}={labels[key]}"
    terms = get_path(pod, ("affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution"))
    terms = terms.get("nodeSelectorTerms") if isinstance(terms, dict) else None
    if isinstance(terms, list) and terms:
        kept: list[list[dict[str, Any]]] = []
        for term in terms:
            expressions = term.get("matchExpressions") if isinstance(term, dict) else None
            relevant = [
                e
                for e in _items(expressions)
                if isinstance(e, dict) and isinstance(e.get("key"), str) and e["key"] in labels
            ]
            if not relevant:
                kept = []  # a term with nothing about this flavor's labels matches it
                break
            kept.append(relevant)
        if kept and not any(all(_expression_matches(e, labels) for e in term) for term in kept):
            return "the pods' required node affinity refuses its node labels"
    return None


# --- Kueue: assigning flavors ------------------------------------------------------------------------


class _Group:
    """One resource group of the ClusterQueue: its covered resources and flavors in order."""

    __slots__ = ("covered", "flavors")

    def __init__(self, covered: list[str], flavors: list[str]) -> None:
        self.covered = covered
        self.flavors = flavors


def _groups(spec: Any) -> list[_Group]:
    out = []
    groups = spec.get("resourceGroups") if isinstance(spec, dict) else None
    for group in groups if isinstance(groups, list) else []:
        if not isinstance(group, dict):
            continue
        covered = [r for r in _items(group.get("coveredResources")) if isinstance(r, str)]
        flavors = [
            f["name"] for f in _items(group.get("flavors")) if isinstance(f, dict) and isinstance(f.get("name"), str)
        ]
        out.append(_Group(covered, flavors))
    return out


def _fits(usage: dict[str, Amount], need: Mapping[str, Amount], caps: Mapping[str, Amount]) -> bool:
    return all(usage.get(r, 0) + value <= caps.get(r, 0) for r, value in need.items())


def _assign(
    needs: list[dict[str, Amount]], eligible: list[list[str]], caps: dict[str, dict[str, Amount]]
) -> tuple[list[str] | None, list[str] | None, bool]:
    """(Kueue's first-fit assignment on an empty queue or None, any assignment that fits or None,
    whether the search stopped at SEARCH_LIMIT) of pod sets (their ``needs``) to flavors."""
    usage: dict[str, dict[str, Amount]] = {f: {} for f in caps}
    greedy: list[str] = []
    for need, flavors in zip(needs, eligible, strict=True):
        chosen = next((f for f in flavors if _fits(usage[f], need, caps[f])), None)
        if chosen is None:
            break
        for r, value in need.items():
            usage[chosen][r] = usage[chosen].get(r, 0) + value
        greedy.append(chosen)
    if len(greedy) == len(needs):
        return greedy, greedy, False
    usage = {f: {} for f in caps}
    chosen_list: list[str] = []
    steps = [0]

    def search(index: int) -> bool:
        if index == len(needs):
            return True
        for flavor in eligible[index]:
            steps[0] += 1
            if steps[0] > SEARCH_LIMIT:
                return False
            if _fits(usage[flavor], needs[index], caps[flavor]):
                for r, value in needs[index].items():
                    usage[flavor][r] = usage[flavor].get(r, 0) + value
                chosen_list.append(flavor)
                if search(index + 1):
                    return True
                chosen_list.pop()
                for r, value in needs[index].items():
                    usage[flavor][r] -= value
        return False

    found = search(0)
    return None, chosen_list if found else None, steps[0] > SEARCH_LIMIT


def _kueue_outcomes(
    job: dict[str, Any],
    kmap: KindMap,
    *,
    store: QueueObjects | None,
    namespace: str,
    namespace_labels: Mapping[str, str] | None,
    labels_known: bool,
) -> list[Outcome]:
    labels = get_path(job, ("metadata", "labels"))
    name = labels.get(KUEUE_LABEL) if isinstance(labels, dict) else None
    path: FieldPath = ("metadata", "labels", Key(KUEUE_LABEL))
    defaulted = False
    if not isinstance(name, str) or not name:
        # Kueue's LocalQueue defaulting: an unlabelled job in a namespace with a LocalQueue "default" goes there.
        if store is not None and store.kueue and store.local_queue(namespace, "default") is not None:
            name, defaulted, path = "default", True, ("metadata", "labels")
        else:
            return []
    out: list[Outcome] = []

    def say(rule: str, message: str, *identity: Any) -> list[Outcome]:
        out.append(Outcome(rule, path, name, message, (name, *identity)))
        return out

    lq_title = f"LocalQueue {namespace}/{name}" + (" (Kueue's default LocalQueue)" if defaulted else "")
    if store is None or not store.kueue:
        if store is not None and store.origin != "offline":
            return say(
                NOT_MODELLED,
                f"{lq_title} cannot be checked: the webhook knows no Kueue queues (this cluster does not serve "
                "kueue.x-k8s.io, or the webhook may not list its queues)",
            )
        return say(
            OBJECTS_MISSING,
            f"whether {lq_title} can ever admit this job is unknown: no Kueue objects were given; pass the "
            f"LocalQueues, ClusterQueues, ResourceFlavors and Cohorts with --cluster-objects (`{KUEUE_EXPORT}`)",
        )
    local_queue = store.local_queue(namespace, name)
    if local_queue is None:
        return say(MISCONFIGURED, f"misconfigured: {lq_title} does not exist, so Kueue never admits the job")
    lq_spec = _object(local_queue.get("spec"))
    if lq_spec.get("stopPolicy") in _STOPPED:
        return say(MISCONFIGURED, f"misconfigured: {lq_title} is stopped (stopPolicy {lq_spec['stopPolicy']})")
    cq_name = lq_spec.get("clusterQueue")
    cluster_queue = store.cluster_queue(cq_name) if isinstance(cq_name, str) else None
    if cluster_queue is None:
        return say(
            MISCONFIGURED,
            f"misconfigured: {lq_title} points to ClusterQueue {cq_name}, which does not exist",
        )
    title = f"{lq_title} (ClusterQueue {cq_name})"
    spec = _object(cluster_queue.get("spec"))
    if spec.get("stopPolicy") in _STOPPED:
        return say(
            MISCONFIGURED,
            f"misconfigured: ClusterQueue {cq_name} of {lq_title} is stopped (stopPolicy {spec['stopPolicy']})",
        )
    selector = spec.get("namespaceSelector")
    ns_labels = namespace_labels if namespace_labels is not None else {"kubernetes.io/metadata.name": namespace}
    if selector is None:
        return say(
            MISCONFIGURED,
            f"misconfigured: ClusterQueue {cq_name} of {lq_title} has no namespaceSelector, which selects no namespace",
        )
    if not selector_matches(selector, ns_labels):
        if labels_known:
            return say(
                MISCONFIGURED,
                f"misconfigured: the namespaceSelector of ClusterQueue {cq_name} does not select namespace "
                f"{namespace}, so {lq_title} never admits the job",
            )
        say(
            NOT_MODELLED,
            f"whether ClusterQueue {cq_name} selects namespace {namespace} is unknown: pass the Namespace "
            "(--cluster-objects); the rest of the queue was checked",
            "namespace",
        )
    tree = QuotaTree(store, cluster_queue)
    if tree.cohort and tree.cohort_chain() is None:
        return say(MISCONFIGURED, f"misconfigured: the cohorts above ClusterQueue {cq_name} form a cycle")
    groups = _groups(spec)
    flavors_named = [f for g in groups for f in g.flavors]
    missing = [f for f in flavors_named if store.resource_flavor(f) is None]
    if missing:
        return say(
            MISCONFIGURED,
            f"misconfigured: ClusterQueue {cq_name} of {lq_title} names ResourceFlavor "
            f"{', '.join(missing)}, which does not exist (Kueue keeps it inactive)",
        )
    problems: list[str] = []
    pod_sets = [p for p in kueue_pod_sets(kmap, job, problems) if p.count > 0]
    covers_pods = any("pods" in g.covered for g in groups)
    if covers_pods:
        for p in pod_sets:
            p.per_pod = {**p.per_pod, "pods": 1}
    by_resource = {r: index for index, g in enumerate(groups) for r in g.covered}
    for resource in sorted({r for p in pod_sets for r in p.per_pod}):
        if resource not in by_resource:
            total = sum(p.total(resource) for p in pod_sets)
            say(
                FIT,
                f"the job can never be admitted by {title}: it asks {resource} {format_amount(total)} "
                f"({_breakdown(pod_sets, resource)}) and no resource group of the ClusterQueue covers {resource} "
                "(resource unavailable in ClusterQueue; Kueue's resources.excludeResourcePrefixes, which jobgate "
                "cannot see, would exclude it)",
                "uncovered",
                resource,
            )
    if any(o.rule == FIT for o in out):
        return out
    for index, group in enumerate(groups):
        members = [p for p in pod_sets if any(r in group.covered for r in p.per_pod)]
        if not members:
            continue
        caps = {f: {r: tree.potential_available(f, r) for r in group.covered} for f in group.flavors}
        needs = [{r: p.total(r) for r in group.covered if p.per_pod.get(r)} for p in members]
        eligible: list[list[str]] = []
        rejected: dict[str, str] = {}
        for p in members:
            ok = []
            for flavor in group.flavors:
                reason = flavor_rejects(store.resource_flavor(flavor) or {}, p.spec)
                if reason is None:
                    ok.append(flavor)
                else:
                    rejected.setdefault(flavor, reason)
            eligible.append(ok)
        asked = [r for r in group.covered if any(r in need for need in needs)]

        def considered_for(
            resources: list[str], group: _Group = group, caps: Any = caps, rejected: Any = rejected
        ) -> str:
            return _considered(tree, group, caps, resources, rejected)

        considered = considered_for(asked)
        stranded = [p.name for p, ok in zip(members, eligible, strict=True) if not ok]
        if stranded:
            say(
                FIT,
                f"the job can never be admitted by {title}: no flavor of the ClusterQueue takes pod set "
                f"{', '.join(stranded)} (flavors considered: {considered})",
                "flavors",
                index,
            )
            continue
        greedy, found, stopped = _assign(needs, eligible, caps)
        if greedy is not None:
            continue
        if found is not None:
            assignment = ", ".join(f"{p.name} → {f}" for p, f in zip(members, found, strict=True))
            say(
                NOT_MODELLED,
                f"{title} can admit the job only as {assignment}: Kueue gives each pod set the first flavor that "
                f"fits, which on an empty ClusterQueue does not end there (flavors considered: {considered})",
                "order",
                index,
            )
            continue
        if stopped:
            say(
                NOT_MODELLED,
                f"whether {title} can ever admit the job was not decided: more than {SEARCH_LIMIT} assignments of "
                f"its pod sets to flavors (flavors considered: {considered})",
                "search",
                index,
            )
            continue
        say(
            FIT,
            _exceeds(title, members, group=group, caps=caps, eligible=eligible, considered_for=considered_for),
            "quota",
            index,
        )
    if any(p.spec.get("resourceClaims") for p in pod_sets if isinstance(p.spec, dict)):
        say(
            NOT_MODELLED,
            f"the DRA claims of the job's pods are not counted against {title}: Kueue counts them through its "
            "deviceClassMappings configuration, which jobgate does not read",
            "claims",
        )
    for problem in dict.fromkeys(problems):
        where, _, detail = problem.partition(": ")
        say(NOT_MODELLED, f"{where}: {detail}: not counted against {title}", "uncounted", where)
    return out


def _considered(
    tree: QuotaTree,
    group: _Group,
    caps: dict[str, dict[str, Amount]],
    asked: list[str],
    rejected: dict[str, str],
) -> str:
    parts = []
    for flavor in group.flavors:
        if flavor in rejected:
            parts.append(f"{flavor}: {rejected[flavor]}")
            continue
        shown = "; ".join(f"{r} at most {format_amount(caps[flavor][r])} ({tree.describe(flavor, r)})" for r in asked)
        parts.append(f"{flavor}: {shown}")
    return "; ".join(parts) if parts else "none"


def _exceeds(
    title: str,
    members: list[PodSet],
    *,
    group: _Group,
    caps: dict[str, dict[str, Amount]],
    eligible: list[list[str]],
    considered_for: Any,
) -> str:
    """The message of a resource group no assignment fits: the resource a pod set or the job asks
    beyond what the flavors it may use can ever give, else the pod sets that do not pack."""
    for resource in group.covered:
        asked = [(p, p.total(resource), ok) for p, ok in zip(members, eligible, strict=True) if p.per_pod.get(resource)]
        if not asked:
            continue
        usable = {f for _, _, ok in asked for f in ok}
        total = sum(need for _, need, _ in asked)
        most = sum(caps[f].get(resource, 0) for f in usable)
        if total > most:
            return (
                f"the job can never be admitted by {title}: it asks {resource} {format_amount(total)} "
                f"({_breakdown(members, resource)}), the most the ClusterQueue can ever give is {format_amount(most)} "
                f"(flavors considered: {considered_for([resource])})"
            )
        for p, need, ok in asked:
            most = max((caps[f].get(resource, 0) for f in ok), default=0)
            if need > most:
                return (
                    f"the job can never be admitted by {title}: pod set {p.name} asks {resource} {format_amount(need)} "
                    f"({p.count} × {format_amount(p.per_pod[resource])}), the most the ClusterQueue can ever give it "
                    f"in one flavor is {format_amount(most)} (flavors considered: {considered_for([resource])})"
                )
    shown = "; ".join(
        f"{p.name}: " + ", ".join(f"{r} {format_amount(p.total(r))}" for r in group.covered if p.per_pod.get(r))
        for p in members
    )
    return (
        f"the job can never be admitted by {title}: no assignment of its pod sets ({shown}) to the flavors of the "
        f"ClusterQueue fits, each pod set taking one flavor (flavors considered: "
        f"{considered_for([r for r in group.covered if any(p.per_pod.get(r) for p in members)])})"
    )


# --- Volcano -----------------------------------------------------------------------------------------

# Where a kind's scheduling policy keeps the gang's minimum, beside its queue: (the fields under the
# object that holds the queue) for minAvailable and minResources; a Volcano Job keeps both under spec.
_GANG_FIELDS: dict[str, tuple[str, str | None]] = {
    "volcano": ("minAvailable", None),
    "kubeflow": ("minAvailable", "minResources"),
    "kubedl": ("minAvailable", None),
}


# Volcano's capacity and proportion plugins read a capability's cpu or memory of zero or less as no
# bound at all (they set it to the largest float); any other resource's zero is a bound of zero.
_UNBOUNDED_AT_ZERO = ("cpu", "memory")


def volcano_capability(queue: Mapping[str, Any]) -> dict[str, Amount]:
    """A Volcano Queue's ``spec.capability`` as its scheduler bounds the queue by it (a quantity that
    does not parse bounds nothing)."""
    capability = parse_resources(get_path(queue, ("spec", "capability")), "capability", [])
    return {r: v for r, v in capability.items() if not (r in _UNBOUNDED_AT_ZERO and v <= 0)}


def _volcano_queue(job: dict[str, Any], kmap: KindMap) -> tuple[FieldPath, str] | None:
    """(the queue's path, its name) when Volcano schedules the job in a queue; None otherwise."""
    if kmap.family not in _GANG_FIELDS or kmap.queue is None or kmap.queue == TEMPLATE:
        return None
    path = kmap.queue(job)  # type: ignore[operator]
    name = get_path(job, path)
    if kmap.family == "volcano":
        return path, name if isinstance(name, str) and name else "default"
    if not isinstance(name, str) or not name:
        return None
    for group in kmap.groups(job):
        if get_path(group.template, ("spec", "schedulerName")) == VOLCANO_SCHEDULER:
            return path, name
    return None


def _volcano_outcomes(job: dict[str, Any], kmap: KindMap, store: QueueObjects | None) -> list[Outcome]:
    found = _volcano_queue(job, kmap)
    if found is None:
        return []
    path, name = found
    out: list[Outcome] = []

    def say(rule: str, message: str, *identity: Any) -> list[Outcome]:
        out.append(Outcome(rule, path, name, message, (name, *identity)))
        return out

    if store is None or not store.volcano:
        if store is not None and store.origin != "offline":
            return say(
                NOT_MODELLED,
                f"Volcano queue {name} cannot be checked: the webhook knows no Volcano Queues (this cluster does "
                "not serve scheduling.volcano.sh/v1beta1, or the webhook may not list them)",
            )
        return say(
            OBJECTS_MISSING,
            f"whether Volcano queue {name} can ever run this job is unknown: no Volcano Queues were given; pass them "
            f"with --cluster-objects (`{VOLCANO_EXPORT}`)",
        )
    queue = store.volcano_queue(name)
    if queue is None:
        return say(MISCONFIGURED, f"misconfigured: Volcano queue {name} does not exist, so the job never runs")
    state = get_path(queue, ("status", "state"))
    if state in _CLOSED:
        return say(FIT, f"the job can never run in Volcano queue {name}: the queue is {state}", "closed")
    problems: list[str] = []
    min_field, resources_field = _GANG_FIELDS[kmap.family]
    holder = path[:-1]
    given = get_path(job, (*holder, resources_field)) if resources_field is not None else None
    if isinstance(given, dict) and given and resources_field is not None:
        where = render_path((*holder, resources_field))
        need = parse_resources(given, where, problems)
        what = f"its minResources ({where})"
    else:
        parts: list[str] = []
        min_available = get_path(job, (*holder, min_field))
        need, _ = gang_minimum(
            volcano_tasks(kmap, job, problems),
            min_available if isinstance(min_available, int) and not isinstance(min_available, bool) else None,
            parts,
        )
        what = f"its gang minimum ({', '.join(parts) or 'no pods'})"
    chain: list[tuple[str, Mapping[str, Any]]] = []
    current: Mapping[str, Any] | None = queue
    current_name = name
    while current is not None and all(current_name != seen for seen, _ in chain):
        chain.append((current_name, current))
        parent = get_path(current, ("spec", "parent"))
        if not isinstance(parent, str) or not parent:
            break
        current_name, current = parent, store.volcano_queue(parent)
    for resource in sorted(need):
        if resource == "pods" or not need[resource]:
            continue
        tightest: tuple[Amount, str] | None = None
        for queue_name, obj in chain:
            capability = volcano_capability(obj)
            if resource in capability and (tightest is None or capability[resource] < tightest[0]):
                tightest = (capability[resource], queue_name)
        if tightest is not None and need[resource] > tightest[0]:
            capped = "its capability" if tightest[1] == name else f"the capability of its parent queue {tightest[1]}"
            say(
                FIT,
                f"the job can never run in Volcano queue {name}: {what} asks {resource} "
                f"{format_amount(need[resource])}, the most the queue can ever give is "
                f"{format_amount(tightest[0])} ({capped})",
                "capability",
                resource,
            )
    for problem in dict.fromkeys(problems):
        where, _, detail = problem.partition(": ")
        say(NOT_MODELLED, f"{where}: {detail}: not counted against Volcano queue {name}", "uncounted", where)
    return out


# --- outcomes ----------------------------------------------------------------------------------------


def queue_outcomes(
    job: dict[str, Any],
    kmap: KindMap,
    store: QueueObjects | None,
    namespace: str,
    *,
    namespace_labels: Mapping[str, str] | None = None,
    labels_known: bool = True,
) -> list[Outcome]:
    """What the check finds of ``job`` against the queues ``store`` shows (None: none given)."""
    out: list[Outcome] = []
    if kmap.kueue and kmap.kind in KUEUE_INTEGRATED:
        out += _kueue_outcomes(
            job, kmap, store=store, namespace=namespace, namespace_labels=namespace_labels, labels_known=labels_known
        )
    out += _volcano_outcomes(job, kmap, store)
    return out


# --- jobgate policy explain --------------------------------------------------------------------------


def ceiling_lines(store: QueueObjects | None, namespace: str) -> list[str]:
    """Each queue a job of ``namespace`` may name, with the most it can ever give per resource: the
    namespace's LocalQueues (per flavor of their ClusterQueue) and every Volcano Queue (its
    capability, capped by its parents')."""
    if store is None or not (store.kueue or store.volcano):
        return ["  no Kueue or Volcano queue objects known (pass them with --cluster-objects)"]
    lines: list[str] = []
    local_queues = sorted(
        (lq for lq in store.local_queues() if (lq.get("metadata") or {}).get("namespace") == namespace), key=_name
    )
    for lq in local_queues:
        cq_name = get_path(lq, ("spec", "clusterQueue"))
        head = f"  LocalQueue {namespace}/{_name(lq)} → ClusterQueue {cq_name}"
        cq = store.cluster_queue(cq_name) if isinstance(cq_name, str) else None
        if cq is None:
            lines.append(f"{head}: misconfigured (the ClusterQueue does not exist)")
            continue
        tree = QuotaTree(store, cq)
        stopped = [
            f"{what} stopped ({policy})"
            for what, policy in (
                ("LocalQueue", get_path(lq, ("spec", "stopPolicy"))),
                ("ClusterQueue", get_path(cq, ("spec", "stopPolicy"))),
            )
            if policy in _STOPPED
        ]
        cohort = f" (cohort {tree.cohort})" if tree.cohort else ""
        lines.append(f"{head}{cohort}{': misconfigured: ' + ', '.join(stopped) if stopped else ''}")
        if tree.cohort and tree.cohort_chain() is None:
            lines.append("    misconfigured: its cohorts form a cycle")
            continue
        for group in _groups(cq.get("spec")):
            for flavor in group.flavors:
                shown = ", ".join(f"{r} {format_amount(tree.potential_available(flavor, r))}" for r in group.covered)
                missing = (
                    "" if store.resource_flavor(flavor) is not None else " (misconfigured: no such ResourceFlavor)"
                )
                lines.append(f"    flavor {flavor}: {shown}{missing}")
    if store.kueue and not local_queues:
        lines.append(f"  no Kueue LocalQueue in namespace {namespace}")
    for queue in sorted(store.volcano_queues(), key=_name):
        name = _name(queue)
        state = get_path(queue, ("status", "state"))
        capped: dict[str, tuple[Amount, str]] = {}
        current: Mapping[str, Any] | None = queue
        seen: list[str] = []
        current_name = name
        while current is not None and current_name not in seen:
            seen.append(current_name)
            for resource, value in volcano_capability(current).items():
                if resource not in capped or value < capped[resource][0]:
                    capped[resource] = (value, current_name)
            parent = get_path(current, ("spec", "parent"))
            current_name = parent if isinstance(parent, str) else ""
            current = store.volcano_queue(current_name) if current_name else None
        shown = ", ".join(
            f"{r} {format_amount(v)}" + ("" if by == name else f" (queue {by})")
            for r, (v, by) in sorted(capped.items())
        )
        closed = f" [{state}]" if state in _CLOSED else ""
        lines.append(f"  Volcano Queue {name}{closed}: {shown or 'no capability (unbounded)'}")
    return lines
