"""The webhook's Prometheus metrics (``/metrics``): reviews, refusals, requests in flight, certificates."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge

from .review_metrics import ReviewMetrics
from .tlsreload import LoadedCertificate

LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        # The two metrics every review updates, without prometheus-client's locks (review_metrics.py).
        self.reviews = ReviewMetrics(LATENCY_BUCKETS)
        self.registry.register(self.reviews)
        self.rejected = Counter(
            "jobgate_admission_rejected_requests",
            "Requests refused before review (HTTP 400, 405, 413, 415), by status.",
            ["code"],
            registry=self.registry,
        )
        self.in_flight = Gauge("jobgate_admission_in_flight", "Reviews being answered.", registry=self.registry)
        self.general_handler_reviews = Counter(
            "jobgate_admission_general_handler_reviews",
            "Reviews answered by aiohttp's general request handler rather than the admission fast path: "
            "bodies of 256 KiB or more, chunked bodies, requests of another shape.",
            registry=self.registry,
        )
        self.certificate_expiry = Gauge(
            "jobgate_tls_certificate_expiry_timestamp_seconds",
            "notAfter of the serving certificate, as a Unix time.",
            registry=self.registry,
        )
        self.certificate_reloads = Counter(
            "jobgate_tls_certificate_reloads",
            "Serving-certificate reload attempts, by result.",
            ["result"],
            registry=self.registry,
        )

    def refused(self, status: int) -> None:
        """A request refused before or instead of a review (400, 405, 413, 415, 429)."""
        self.rejected.labels(str(status)).inc()

    def certificate_changed(self, loaded: LoadedCertificate | None, ok: bool) -> None:
        self.certificate_reloads.labels("success" if ok else "failure").inc()
        if loaded is not None:
            self.certificate_expiry.set(loaded.not_after.timestamp())
