"""What a family's validation finds: field errors and warnings, the engine's result type."""

from __future__ import annotations

from jobgate.engine.fielderrors import FieldError

WARNING_MAX_LENGTH = 120


def clip_warning(text: str) -> str:
    """Warnings longer than this are cut by some clients; keep the start, which says what is wrong."""
    return text if len(text) <= WARNING_MAX_LENGTH else text[: WARNING_MAX_LENGTH - 1] + "…"


class Findings:
    # Not a dataclass: importing ``dataclasses`` costs a one-file ``jobgate validate`` more
    # than the rules it runs.
    __slots__ = ("errors", "warnings")

    def __init__(self, errors: list[FieldError] | None = None, warnings: list[str] | None = None) -> None:
        self.errors: list[FieldError] = [] if errors is None else errors
        self.warnings: list[str] = [] if warnings is None else warnings

    def __repr__(self) -> str:
        return f"Findings(errors={self.errors!r}, warnings={self.warnings!r})"

    def extend(self, other: Findings) -> None:
        self.errors.extend(other.errors)
        self.warnings.extend(other.warnings)
