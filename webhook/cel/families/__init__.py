"""Each family's rules for the apiserver, one module per family (as under ``rules/families/``).

A module ``<family>.py`` gives ``rules(kind) -> list[Rule]`` for each of its kinds; a family
without a module here is enforced by the webhook only (``generate.rules_for`` says so).
"""
