"""Input generators and oracles shared by the CI slices (tests/) and the long runs (bench/).

- ``review_mutator``: AdmissionReviews mutated from ``examples/`` and the review handler's oracle
  (``tests/fuzz/test_fuzz_review.py``, ``python -m bench.fuzz_review``);
- ``offline_mutator``: manifest files mutated from ``examples/`` and the offline command's oracle
  (``tests/unit/test_loader_fuzz.py``, ``python -m bench.fuzz_offline``);
- ``loader_differential``: libyaml's reading of a document against ruamel's
  (``tests/unit/test_loader_libyaml.py``, ``python -m bench.fuzz_offline --differential``);
- ``cel_cases``: jobs mutated from the CEL corpus (``testkit/cel_corpus.py``) for the apiserver
  against the webhook (``tests/envtest/test_cel_fuzz_cases.py``, ``python -m bench.cel_fuzz``).

They sit in the harness package, below both tests/ and bench/, so that neither imports the other.
"""
