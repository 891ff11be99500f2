"""The rule engine: the kinds' registry, the review (mutate, then validate), and its types.

``review.review_job`` is what every transport calls; ``context.ReviewContext`` is what a review
knows of its request and the cluster (``views``: the cluster objects it may read). Each family
registers a record, ``jobgate.families.Family``.
The rules themselves are in ``jobgate.rules`` (shared) and ``jobgate.families.<name>.rules``.
"""
