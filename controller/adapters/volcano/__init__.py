"""The volcano family (``batch.volcano.sh/v1alpha1``): Volcano's Job.

A defaulted Job becomes one replica group per task (pods ``<job>-<task>-<index>``), with
Volcano's labels and annotations on every pod, the plugins' children and pod changes (env,
svc, ssh, tensorflow, pytorch, mpi), and ``controller.lifecycle`` as the job's state machine
(lifecycle policies, maxRetry, minSuccess, Volcano's phases). The status is written in
Volcano's own shape so that ``kubectl get vcjob`` reads as it does with Volcano.

Its parts: ``plugins`` (arguments, hosts), ``children`` (Service, ConfigMap, NetworkPolicy, Secret,
PodGroup), ``pods`` (what the plugins add to each pod), ``model`` (the job as the common model),
``status``.
"""

from __future__ import annotations

from jobgate.families.volcano import rules as volcano

from ..common import Adapter
from .model import build_volcano_job
from .status import project_volcano_status, read_volcano_status

ADAPTERS = (Adapter(volcano.VOLCANO_JOB, build_volcano_job, project_volcano_status, read_volcano_status),)
