"""Whether this checkout is the jobgate Python imports: the generators read the checkout's rules.

``jobgate.controller``, ``jobgate.webhook`` and ``jobgate.certs`` live at the checkout's root
(``controller/``, ...) and join the package only through an install (pyproject.toml's
``package-dir``); after ``pip install .`` (not ``-e``) the ``jobgate`` command runs the installed
copy, not the checkout. The README's "Adding a rule" needs ``pip install -e '.[test]'``.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
EDITABLE = "python3 -m pip install -e '.[test]'"


def install_problem() -> str:
    """'' when the checkout is installed editable; otherwise what is wrong and what to run."""
    import jobgate

    imported = Path(jobgate.__file__).resolve().parent
    if imported != REPO / "jobgate":
        return f"jobgate is imported from {imported}, not from this checkout ({REPO}): run `{EDITABLE}` here"
    for module in ("jobgate.controller", "jobgate.webhook", "jobgate.certs"):
        try:
            found = importlib.util.find_spec(module)
        except ModuleNotFoundError:
            found = None
        if found is None:
            return f"{module} cannot be imported: this checkout is not installed editable; run `{EDITABLE}` here"
    return ""
