"""jobgate: admission (mutating and validating webhooks, an offline validator) and reconciliation
for distributed-training jobs on Kubernetes.

Installed, everything is under this one name. Layers, lowest first (tests/unit/test_import_graph.py
holds them):

- ``jobgate.api``, ``jobgate.families.<name>.models``: the wire models; ``jobgate.common``,
  ``jobgate.kube``, ``jobgate.certs``: helpers every part shares;
- the engine: ``jobgate.engine`` (the review, the registry, the review's context, the family
  record), ``jobgate.rules`` (shared rules), ``jobgate.families.<name>.rules``, ``jobgate.policy``;
- beside each other over the engine: ``jobgate.generate`` and ``jobgate.families.<name>.cel`` (CRDs,
  CEL, admission policies), ``jobgate.offline`` (the offline command's files and reports),
  ``jobgate.webhook`` (the admission server), ``jobgate.controller``;
- ``jobgate.cli``: the ``jobgate`` command.

In the repository ``webhook/``, ``controller/`` and ``certs/`` keep their own directories at the
root; pyproject.toml's ``package-dir`` maps them here. Everything else is under ``jobgate/``.
"""
