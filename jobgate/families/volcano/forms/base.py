"""What several of Volcano's forms share: the CEL that holds on CREATE only, and the words of a
check a rule on a list reports at the list."""

from __future__ import annotations

CREATE_ONLY = "oldSelf.hasValue() || "
ITEM_NOT_NAMED = "reported at the list (a rule on a list cannot name the item)"


def _create_only(rule: str, create_only: bool) -> str:
    """CEL of ``rule`` on CREATE and true on UPDATE (with ``optionalOldSelf``), or ``rule``."""
    return CREATE_ONLY + "(" + rule + ")" if create_only else rule
