"""Job plugins of a Volcano job: known names, and the MPI plugin's master task."""

from __future__ import annotations

from jobgate.engine.fielderrors import FieldError, Key, invalid
from jobgate.families.volcano.rules.tasks import task_name

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at run time (start-up)
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any

PLUGINS: tuple[str, ...] = ("ssh", "env", "svc", "tensorflow", "mpi", "pytorch", "hcclrank", "ray")
DEFAULT_MPI_MASTER = "master"


def mpi_master_errors(spec: dict[str, Any], tasks: list[tuple[int, dict[str, Any]]]) -> Iterator[FieldError]:
    """The mpi plugin's master task is a task of the job (the known plugins are declared: ``declared.py``)."""
    plugins = spec.get("plugins")
    if not isinstance(plugins, dict):
        return
    if "mpi" in plugins:
        master = _flag_value(plugins.get("mpi"), "master") or DEFAULT_MPI_MASTER
        if master not in {task_name(t) for _, t in tasks}:
            yield invalid(("spec", "plugins", Key("mpi")), master, "The specified mpi master task was not found")


def _flag_value(arguments: Any, flag: str) -> str | None:
    """The value of ``--flag=v``, ``-flag=v`` or ``--flag v`` in plugin arguments (Go flag syntax)."""
    if not isinstance(arguments, list):
        return None
    args = [a for a in arguments if isinstance(a, str)]
    for position, argument in enumerate(args):
        bare = argument.lstrip("-")
        if not argument.startswith("-"):
            continue
        if bare.startswith(f"{flag}="):
            return bare.split("=", 1)[1]
        if bare == flag and position + 1 < len(args):
            return args[position + 1]
    return None
