"""Every error jobgate reports carries the id of the rule that produced it, set where the error is made:
each example of ``examples/``, each test vector and fuzzed jobs, checked as ``jobgate validate`` checks
them; the id is the one the catalogue's table names (``jobgate.engine.ruleids.rule_id``, kept for
messages that are not jobgate's), and the table agrees with the catalogue."""

from __future__ import annotations

import copy
from collections import Counter

import pytest

from jobgate.engine.pathpattern import rule_anchor
from jobgate.engine.ruleids import STRICT_DECODING, rule_id
from jobgate.forms.catalogue import explaining_rule
from jobgate.generate.cel.generate import rules_for
from jobgate.generate.manifests import every_family_kind
from jobgate.offline.results import Outcome, check_file
from jobgate.review import kind_of, review_job
from testkit.cel_corpus import REPO, vectors

VECTORS = vectors()
INVALID = sorted((REPO / "examples" / "invalid").glob("*.yaml"))


def _ids(kind):
    return {rule.id for rule in rules_for(kind)}


@pytest.mark.parametrize("path", INVALID, ids=[p.name for p in INVALID])
def test_every_error_of_an_invalid_example_names_its_rule(path):
    results = check_file(str(path))
    assert any(r.outcome is Outcome.DENIED for r in results)
    for result in results:
        for error in result.errors:
            assert error.rule, f"{path.name}:{error.line}: no rule id for {error.message}"


@pytest.mark.parametrize("vector", VECTORS, ids=[v.id for v in VECTORS])
def test_every_error_of_a_vector_names_the_rule_the_catalogue_names(vector):
    kind = kind_of(vector.obj)
    verdict = review_job(kind, vector.obj, vector.old)
    gvk = (kind.gvk.group, kind.gvk.version, kind.gvk.kind)
    for error in verdict.errors:
        found = explaining_rule(rules_for(kind), error)
        assert found is not None
        assert rule_id(gvk, error) == found[0].id, str(error)


def _example_jobs():
    """Every job of ``examples/`` (valid and invalid), as a CREATE."""
    import yaml

    for path in sorted((REPO / "examples").glob("*/*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if isinstance(doc, dict) and kind_of(doc) is not None:
                yield doc, None


def _fuzzed_jobs(count):
    """``count`` jobs mutated from the examples and vectors of every family (seeded: the same each run),
    for the errors of paths no example takes (a wrong type, a bound, an UPDATE)."""
    from testkit.fuzzing.cel_cases import cases

    corpus = [copy.deepcopy(obj) for obj, _ in (*((v.obj, v.old) for v in VECTORS), *_example_jobs())]
    return [(case.obj, case.old) for case in cases(47, count, corpus)]


def _errors(jobs):
    """(gvk, error) of reviewing each (obj, old)."""
    for obj, old in jobs:
        kind = kind_of(obj)
        gvk = (kind.gvk.group, kind.gvk.version, kind.gvk.kind)
        for error in review_job(kind, obj, old).errors:
            yield gvk, error


@pytest.fixture(scope="module")
def reviewed():
    """The errors of the examples, the vectors and fuzzed jobs: (labelled, unlabelled)."""
    jobs = [*((v.obj, v.old) for v in VECTORS), *_example_jobs(), *_fuzzed_jobs(1500)]
    labelled, unlabelled = [], []
    for gvk, error in _errors(jobs):
        (labelled if error.rule else unlabelled).append((gvk, error))
    return labelled, unlabelled


def test_every_error_carries_the_id_the_table_names(reviewed):
    """Each error carries its rule's id from the code that made it (a declaration's generated check, a
    hand-written rule, a schema check), the one the catalogue's table found for it before errors
    carried ids: ``jobgate validate`` names the same rules as before. An error the table names no
    rule for (a bound no example reaches) carries its rule's id all the same."""
    labelled, _ = reviewed
    assert len(labelled) > 2000
    disagree = Counter((e.rule, rule_id(gvk, e), str(e)[:160]) for gvk, e in labelled if e.rule != rule_id(gvk, e))
    assert not [d for d in disagree if d[1]], disagree


def test_no_error_is_left_unlabelled(reviewed):
    """No runtime check makes an error without its rule's id: jobgate reads no table for its own."""
    _, unlabelled = reviewed
    assert not unlabelled, Counter(rule_id(gvk, e) or str(e)[:120] for gvk, e in unlabelled)


def test_the_queue_checks_errors_carry_its_id():
    """The Volcano queue check (it needs the cluster's Queues, which no vector holds)."""
    from jobgate.engine.views import QueueSnapshot
    from jobgate.families.volcano.rules.queue_check import check_queue

    gvk = ("batch.volcano.sh", "v1alpha1", "Job")
    queues = QueueSnapshot(
        [
            {"metadata": {"name": "closed"}, "status": {"state": "Closed"}},
            {"metadata": {"name": "root"}, "status": {"state": "Open"}},
            {"metadata": {"name": "parent"}, "status": {"state": "Open"}},
            {"metadata": {"name": "child"}, "spec": {"parent": "parent"}, "status": {"state": "Open"}},
        ]
    )
    errors = [
        error
        for name in ("missing", "closed", "root", "parent")
        for error in check_queue({"spec": {"queue": name}}, queues)
    ]
    assert len(errors) == 4
    assert [(e.rule, rule_id(gvk, e)) for e in errors] == [("volcano/queue", "volcano/queue")] * 4


def test_a_generated_check_labels_its_errors():
    from jobgate.engine.registry import lookup_names

    kind = lookup_names("batch.volcano.sh", "v1alpha1", "Job")
    job = {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {"name": "j"}, "spec": {}}
    errors = review_job(kind, job).errors
    assert [e.rule for e in errors if e.detail == "No task specified in job spec"] == ["volcano/tasks-required"]


def test_the_ids_name_rules_of_the_kind_or_strict_decoding(tmp_path):
    path = tmp_path / "unknown.yaml"
    text = (REPO / "examples" / "valid" / "tfjob-mnist.yaml").read_text()
    path.write_text(text.replace("spec:\n", "spec:\n  notAField: 1\n", 1))
    (result,) = check_file(str(path))
    assert [e.rule for e in result.errors] == [STRICT_DECODING]


def test_every_kubeflow_kind_has_named_rules():
    """Kubeflow is left to the webhook; its rules still have ids (webhook-only catalogue records)."""
    for kind in every_family_kind():
        if kind.family == "kubeflow":
            assert any(i.startswith("kubeflow/") for i in _ids(kind)), kind.gvk


def test_rule_anchor():
    assert rule_anchor("roles/one-leader") == "roles-one-leader"
    assert rule_anchor("pod-template/containers/requests-within-limits") == (
        "pod-template-containers-requests-within-limits"
    )
    assert rule_anchor("Schema/Types_x.y") == "schema-types-x-y"


def test_a_field_errors_rule_is_a_label_kept_by_pickle_and_left_out_of_equality():
    import copy
    import pickle

    from jobgate.engine.fielderrors import FieldError, invalid

    labelled = invalid(("spec", "x"), -1, "must be greater than or equal to 0", "family/x")
    plain = invalid(("spec", "x"), -1, "must be greater than or equal to 0")
    assert labelled.rule == "family/x" and plain.rule == ""
    assert labelled == plain and hash(labelled) == hash(plain) and repr(labelled) == repr(plain)
    assert str(labelled) == str(plain)
    for twin in (pickle.loads(pickle.dumps(labelled)), copy.copy(labelled), copy.deepcopy(labelled)):
        assert type(twin) is FieldError and twin == labelled and twin.rule == "family/x"
