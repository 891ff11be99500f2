"""jobgate's rules where the apiserver enforces them itself: CRD schemas and CEL, admission policies.

``catalogue`` names each rule of the webhook and says where else it holds; ``podtemplate``,
``jobmeta``, ``replicajobs`` and each family's ``jobgate/families/<name>/cel`` give the rules; ``generate`` writes them
into the CRDs and policies that ``jobgate manifests generate`` writes.
"""
