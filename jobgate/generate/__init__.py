"""Generators: what ``jobgate manifests generate`` writes from the families' records.

``manifests`` writes the CRDs, webhook configurations, RBAC and the tables generated into the
package (``jobgate/_generated``); ``cel`` is the catalogue of where the apiserver enforces each rule,
and writes those rules into the CRDs and the admission policies.
"""
