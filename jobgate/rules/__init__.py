"""Rules every family shares: job metadata and names, pod templates, quantities, replica maps.

Pure functions over the plain dicts of a review; a family's own rules are in
``jobgate.families.<name>.rules``.
"""
