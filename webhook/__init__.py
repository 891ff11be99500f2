"""The admission server (``jobgate webhook``): AdmissionReviews over TLS, answered by the engine.

``admission`` turns a review into its answer (shared with ``jobgate review``), ``server`` is the
HTTP transport, ``queues`` and ``policies`` the watch-backed caches the reviews' context reads.
"""
