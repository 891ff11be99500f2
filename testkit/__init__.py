"""What the tests, the benchmarks and the harness share: fixtures, corpora and fuzzers.

- ``builders``: jobs of every family, built in code, and a review of one (``reviewed``);
- ``big_jobs``: large jobs for the size and throughput tests;
- ``policy_set``: the bench's policy set (50 policies, 10 applying to its TFJob) and its namespaces;
- ``cel_corpus``: the examples and vectors the generated CEL is held to on a real apiserver;
- ``fuzzing``: the review, offline and loader mutators and the CEL differential's cases.

Not installed (like ``envtest/``, ``bench/`` and ``tests/``); it imports nothing of ``tests`` or
``bench`` (tests/unit/test_import_graph.py). ``envtest/`` keeps the control plane, node, images,
deployment and peers.
"""
