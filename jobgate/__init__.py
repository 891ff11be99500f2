"""jobgate: admission (mutating and validating webhooks, an offline validator) and reconciliation
for distributed-training jobs on Kubernetes.

Installed, everything is under this one name: ``jobgate.webhook`` (the rules and the admission
server), ``jobgate.controller``, ``jobgate.certs``, ``jobgate.kube`` (the client both servers
share) and ``jobgate.cli`` (the ``jobgate`` command). In the repository the first three keep
their own directories at the root (``webhook/``, ``controller/``, ``certs/``); pyproject.toml's
``package-dir`` maps them here, so a source checkout imports them only through an install
(``pip install -e .``).
"""
