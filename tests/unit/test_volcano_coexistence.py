"""Serving a subset of families (--families) and the queue check's transport side."""

from __future__ import annotations

import json

import pytest
import yaml

from jobgate.cli import main
from jobgate.engine import registry
from jobgate.engine.views import ClusterViews, QueueInfo
from jobgate.webhook.admission import Webhook, answer_review, parse_review
from testkit.builders import admission_review, vc_task, vcjob


@pytest.fixture
def only_kubedl():
    registry.serve_families(frozenset({"kubedl"}))
    yield
    registry.serve_families(None)


@pytest.fixture
def queues() -> ClusterViews:
    class View:
        def queue(self, name: str) -> QueueInfo | None:
            return QueueInfo(name, "Closed", 0) if name == "closed" else None

    return ClusterViews(queues=View())


def answer(obj, webhook=Webhook.VALIDATE, views=None):
    body = json.dumps(admission_review(obj)).encode()
    return answer_review(parse_review(body), webhook, views)["response"]


def test_unserved_family_is_answered_like_an_unknown_kind(only_kubedl):
    bad = vcjob(vc_task("w", 1, minAvailable=5))
    for webhook in Webhook:
        response = answer(bad, webhook)
        assert response["allowed"] is True
        assert "patch" not in response
        assert response["warnings"] == ["jobgate does not serve batch.volcano.sh/v1alpha1 Job; admitted without checks"]
    assert {k.family for k in registry.served_kinds()} == {"kubedl"}


def test_all_families_served_by_default():
    assert answer(vcjob(vc_task("w", 1, minAvailable=5)))["allowed"] is False
    assert set(registry.known_families()) >= {"kubedl", "mlkube", "volcano"}


def test_parse_families():
    assert registry.parse_families(" volcano, kubedl ") == {"volcano", "kubedl"}
    with pytest.raises(ValueError, match="unknown families \\['nope'\\]"):
        registry.parse_families("volcano,nope")


@pytest.mark.parametrize("command", ["webhook", "controller"])
def test_bad_families_flag_exits_2(command, capsys):
    argv = [command, "--families", "nope"] + (["--tls-dir", "/nonexistent"] if command == "webhook" else [])
    assert main(argv) == 2
    assert "--families: unknown families ['nope']" in capsys.readouterr().err


def test_the_transports_queue_view_is_used_by_validate(queues):
    response = answer(vcjob(vc_task("w", 1), queue="closed"), views=queues)
    assert response["allowed"] is False
    assert "can only submit job to queue with state `Open`" in response["status"]["message"]
    response = answer(vcjob(vc_task("w", 1), queue="gone"), views=queues)
    assert 'unable to find job queue: queue.scheduling.volcano.sh "gone" not found' in response["status"]["message"]


def test_a_review_without_a_queue_view_skips_the_check_and_says_so_in_its_verdict():
    from jobgate.engine.context import ReviewContext
    from jobgate.families.volcano.rules.queue_check import QUEUE_CHECK
    from jobgate.review import kind_of, review_job

    job = vcjob(vc_task("w", 1), queue="gone")
    verdict = review_job(kind_of(job), job, context=ReviewContext())
    assert verdict.allowed
    assert verdict.skipped == {QUEUE_CHECK}
    assert answer(job)["allowed"] is True


def test_offline_validate_warns_once_that_the_queue_check_is_skipped(tmp_path, capsys):
    path = tmp_path / "jobs.yaml"
    path.write_text(yaml.safe_dump_all([vcjob(vc_task("w", 1), name="a"), vcjob(vc_task("w", 1), name="b")]))
    assert main(["validate", str(path)]) == 0
    err = capsys.readouterr().err
    assert err.count("queue check (queue exists, is Open, is a leaf) was skipped") == 1


QUEUE_LIST = {
    "apiVersion": "v1",
    "kind": "List",
    "items": [
        {"kind": "Queue", "metadata": {"name": "default"}, "status": {"state": "Open"}},
        {"kind": "Queue", "metadata": {"name": "closed"}, "status": {"state": "Closed"}},
        {"kind": "Queue", "metadata": {"name": "child"}, "spec": {"parent": "default"}, "status": {"state": "Open"}},
    ],
}


@pytest.mark.parametrize(
    ("queue", "fragment"),
    [
        ("child", None),
        ("default", "can only submit job to leaf queue, queue `default` has 1 child queues"),
        ("closed", "queue `closed` status is `Closed`"),
        ("nowhere", "unable to find job queue"),
    ],
)
def test_validate_and_review_check_queues_from_a_file(tmp_path, capsys, queue, fragment):
    queues = tmp_path / "queues.yaml"
    queues.write_text(yaml.safe_dump(QUEUE_LIST))
    job = tmp_path / "job.yaml"
    job.write_text(yaml.safe_dump(vcjob(vc_task("w", 1), queue=queue)))
    if True:
        code = main(["validate", "--queues", str(queues), str(job)])
        out = capsys.readouterr().out
        assert code == (0 if fragment is None else 1)
        if fragment:
            assert fragment in out
        review = tmp_path / "review.json"
        review.write_text(json.dumps(admission_review(vcjob(vc_task("w", 1), queue=queue))))
        # The flag is taken before the sub-command, before FILE and after it.
        for argv in (
            ["review", "--queues", str(queues), "validate", str(review)],
            ["review", "validate", "--queues", str(queues), str(review)],
            ["review", "validate", str(review), "--queues", str(queues)],
        ):
            assert main(argv) == 0
            response = json.loads(capsys.readouterr().out)["response"]
            assert response["allowed"] is (fragment is None), argv


def test_unreadable_queues_file_exits_2(tmp_path, capsys):
    assert main(["validate", "--queues", str(tmp_path / "missing.yaml"), str(tmp_path)]) == 2
    assert "--queues" in capsys.readouterr().err
