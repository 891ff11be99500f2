"""Where JobSet keeps the fields a platform policy reads or writes (``jobgate.policy.fieldmap``).

JobSet has no queue or priority field of its own: Kueue, which admits JobSets, reads the
``kueue.x-k8s.io/queue-name`` label (the queue) and the ``kueue.x-k8s.io/priority-class`` label (a
WorkloadPriorityClass); ``kueue=True`` makes policies read and default them there. The scheduler and
the pods' priority class are each pod template's; the TTL is the JobSet's own
``spec.ttlSecondsAfterFinished``; a JobSet has no deadline of its own (each Job's
``activeDeadlineSeconds`` is its template's). The groups are the replicated jobs, each
``replicas`` Jobs of ``min(parallelism, completions)`` pods (parallelism 1 when unset), as Kueue counts
a JobSet's pod sets: one per replicated job, with the pod template of its Job template.
"""

from __future__ import annotations

from jobgate.families.jobset import GROUP
from jobgate.policy.fieldmap import TEMPLATE, KindMap, fixed, job_groups

KIND_MAPS: tuple[KindMap, ...] = (
    KindMap(
        "jobset",
        GROUP,
        "JobSet",
        job_groups("replicatedJobs"),
        queue=None,
        priority_class=TEMPLATE,
        scheduler=TEMPLATE,
        ttl=fixed("spec", "ttlSecondsAfterFinished"),
        deadline=None,
        kueue=True,
        replica_field="replicatedJobs",
        replica_layout="jobs",
    ),
)
