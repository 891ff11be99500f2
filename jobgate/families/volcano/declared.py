"""Volcano Job's rules as declarations (``jobgate/rules/forms.py``), as far as a form says them;
``jobgate manifests generate`` compiles them to the calls ``rules/`` makes
(``jobgate/_generated/declared_rules.py``), to the CRD's rules (``cel/`` lists them) and to the
catalogue's records.
"""

from __future__ import annotations

from jobgate.rules.forms import AtMostSum, Declaration

JOB: tuple[Declaration, ...] = (
    AtMostSum(
        "volcano/min-available",
        "the job's minAvailable is at most the total of the tasks' replicas",
        "spec.minAvailable",
        "spec.tasks",
        "replicas",
        # Volcano's words on CREATE and on UPDATE.
        "job 'minAvailable' should not be greater than total replicas in tasks",
        update_message="job 'minAvailable' must not be greater than total replicas",
    ),
)
