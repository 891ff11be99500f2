"""Each family's rules for the apiserver, one module per family (as under ``rules/families/``).

A module ``<family>.py`` gives ``rules(kind) -> list[Rule]`` for each of its kinds; a family
without a module here is enforced by the webhook only (``generate.rules_for`` says so).
"""

# Families whose rules stay with the webhook, and why (``jobgate manifests enforcement`` says so).
WEBHOOK_ONLY = {
    "kubeflow": "Kubeflow's CRDs are Kubeflow's, not jobgate's (it installs none for kubeflow.org): its rules would "
    "need admission policies over another project's kinds, which jobgate does not generate",
}
