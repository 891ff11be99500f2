"""``python -m jobgate``: the same as the ``jobgate`` command."""

import sys

from jobgate.cli import main

sys.exit(main())
