"""Platform policy for training jobs (``policy.jobgate.io/v1alpha1``): the pure core.

``ClusterTrainingJobPolicy`` and ``TrainingJobPolicy`` objects are resolved into one effective
policy per job (:mod:`.resolve`), which gives the defaults to write (:func:`.check.policy_defaults`)
and the findings on a job (:func:`.check.policy_findings`). Everything here works on plain dicts
and, but for the engine's field paths and patch recorder and the families' records (the family
list; each family's field map, :mod:`.kinds`), imports nothing of the rest of jobgate: the review
(``jobgate.review``) calls it for a review that carries policies (:mod:`.review`), and the
webhook, the offline command and the controller's audit all go through it; only :mod:`.models`
and :mod:`.crds` need pydantic.
"""
