"""Every module of runtime twins the generated checks may import from: the shared ones
(``jobgate/forms/checks/``), then each family's own (its record's ``form_checks``), in the order the
generator looks a function up (jobgate.forms.python_text) and the compiled build compiles them
(build_support/native.py).

Not read at review time: reading it loads every family's record.
"""

from __future__ import annotations

from jobgate.families import every_family
from jobgate.forms.checks import SHARED_RUNTIME_MODULES

RUNTIME_MODULES: tuple[str, ...] = SHARED_RUNTIME_MODULES + tuple(
    module for record in every_family() for module in record.form_checks
)
