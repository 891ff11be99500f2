"""``python -m jobgate.generate.cost``: how the apiserver's check of each declared rule grows with
the list it reads (``jobgate/generate/forms.py``, ``Declarations.cost``), one line per rule."""

from __future__ import annotations

from jobgate.generate.forms import cost_report
from jobgate.generate.manifests import declared_kinds, every_family_kind


def main() -> int:
    for line in cost_report(declared_kinds(every_family_kind())):
        print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
