"""Fields a schema does not know: a warning at admission, kubectl's strict-decoding error offline.

Kept out of the compiled rule modules: mypyc does not compile subclasses of ``str``.
"""

from __future__ import annotations

from jobgate.engine.fielderrors import FieldPath, render_path
from jobgate.engine.findings import clip_warning


class UnknownField(str):
    """The warning about a field the schema does not know, carrying its path.

    The webhook shows it as a warning (the apiserver has already pruned or, under strict
    field validation, refused such fields before admission); ``jobgate validate`` turns it
    into kubectl's strict-decoding error, a warning or nothing (``--validate``).
    """

    path: FieldPath

    def __new__(cls, path: FieldPath) -> UnknownField:
        text = f"unknown field {render_path(path)}: the apiserver drops it or, with strict validation, refuses it"
        warning = super().__new__(cls, clip_warning(text))
        warning.path = path
        return warning


def kubectl_path(path: FieldPath) -> str:
    """A field path as kubectl's strict decoding prints it: ``spec.tfReplicaSpecs.Worker.replica``."""
    parts: list[str] = []
    for segment in path:
        if isinstance(segment, int):
            parts.append(f"[{segment}]")
        else:
            parts.append(f".{segment}" if parts else str(segment))
    return "".join(parts)
