"""The per-review metrics give the exposition prometheus-client's Counter and Histogram give."""

from __future__ import annotations

import re

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest

from jobgate.webhook.metrics import LATENCY_BUCKETS
from jobgate.webhook.review_metrics import DURATION, DURATION_HELP, REVIEW_LABELS, REVIEWS, REVIEWS_HELP, ReviewMetrics

# Durations below, on and above bounds (a value equal to a bound is counted in that bucket).
DURATIONS = (0.0, 0.0004, 0.0005, 0.00050001, 0.001, 0.02, 0.025, 1.0, 2.5, 2.6, 100.0)
REVIEWS_DONE = (
    ("validate", "TFJob", "CREATE", "allowed"),
    ("validate", "TFJob", "CREATE", "allowed"),
    ("validate", "Job", "UPDATE", "denied"),
    ("mutate", "TFJob", "CREATE", "patched"),
)


def exposition(registry: CollectorRegistry) -> str:
    # Creation times differ between the two registries; everything else must not.
    return re.sub(r"(_created\{[^}]*\}) \S+", r"\1 T", generate_latest(registry).decode())


def test_the_exposition_is_prometheus_clients():
    reference = CollectorRegistry()
    counter = Counter(REVIEWS, REVIEWS_HELP, list(REVIEW_LABELS), registry=reference)
    histogram = Histogram(DURATION, DURATION_HELP, ["webhook"], buckets=LATENCY_BUCKETS, registry=reference)
    ours = CollectorRegistry()
    metrics = ReviewMetrics(LATENCY_BUCKETS)
    ours.register(metrics)
    for labels in REVIEWS_DONE:
        counter.labels(*labels).inc()
        metrics.count(*labels).inc()
    for webhook in ("validate", "mutate"):
        for seconds in DURATIONS:
            histogram.labels(webhook).observe(seconds)
            metrics.latency(webhook).observe(seconds)
    assert exposition(ours) == exposition(reference)
    allowed = 'kind="TFJob",operation="CREATE",verdict="allowed",webhook="validate"'
    assert f"jobgate_admission_reviews_total{{{allowed}}} 2.0" in exposition(ours)


def test_a_duration_on_a_bound_is_counted_in_that_bucket():
    registry = CollectorRegistry()
    metrics = ReviewMetrics(LATENCY_BUCKETS)
    registry.register(metrics)
    metrics.latency("mutate").observe(0.0005)
    metrics.latency("mutate").observe(3.0)
    bucket = f"{DURATION}_bucket"
    assert registry.get_sample_value(bucket, {"webhook": "mutate", "le": "0.0005"}) == 1.0
    assert registry.get_sample_value(bucket, {"webhook": "mutate", "le": "2.5"}) == 1.0
    assert registry.get_sample_value(bucket, {"webhook": "mutate", "le": "+Inf"}) == 2.0
    assert registry.get_sample_value(f"{DURATION}_sum", {"webhook": "mutate"}) == 3.0005


def test_the_same_labels_give_the_same_count():
    metrics = ReviewMetrics(LATENCY_BUCKETS)
    labels = ("validate", "TFJob", "CREATE", "allowed")
    assert metrics.count(*labels) is metrics.count(*labels)
    assert metrics.latency("validate") is metrics.latency("validate")
