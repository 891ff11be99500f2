"""``python -m jobgate``: the same as the ``jobgate`` command."""

import sys

from jobgate.cli import console_main

sys.exit(console_main())
