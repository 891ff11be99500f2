"""Platform policy for training jobs (``policy.jobgate.io/v1alpha1``): the pure core.

``ClusterTrainingJobPolicy`` and ``TrainingJobPolicy`` objects are resolved into one effective
policy per job (:mod:`.resolve`), which gives the defaults to write (:func:`.check.policy_defaults`)
and the findings on a job (:func:`.check.policy_findings`). Everything here works on plain dicts
and imports nothing from the rest of jobgate, so the webhook, the offline command and the
controller can all call it; only :mod:`.models` and :mod:`.crds` need pydantic.
"""
