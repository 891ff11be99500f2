"""Job plugins of a Volcano job: the known names, and the MPI plugin's default master task; the rules
that read them are declared (``jobgate/families/volcano/declared.py``)."""

from __future__ import annotations

PLUGINS: tuple[str, ...] = ("ssh", "env", "svc", "tensorflow", "mpi", "pytorch", "hcclrank", "ray")
DEFAULT_MPI_MASTER = "master"
