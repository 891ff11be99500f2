"""``jobgate``: the command-line front end.

``main`` reads the common ``jobgate validate`` without argparse
(``cli.offline.quick_validate_arguments``) and every other command line with the parser
(``parser``); each command's handler is in the module of its concern: ``offline`` (validate,
default, review), ``serve`` (webhook, controller), ``certs``, ``manifests``.
The offline commands import neither aiohttp nor the kubernetes client.
"""

from __future__ import annotations

import os
import sys

from jobgate.cli.offline import EXIT_DENIED, EXIT_OK, EXIT_USAGE

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at run time (start-up)
if TYPE_CHECKING:
    import argparse
    from collections.abc import Sequence

    from jobgate.cli.offline import QuickArguments

__all__ = ["EXIT_DENIED", "EXIT_OK", "EXIT_USAGE", "console_main", "main"]


def main(argv: Sequence[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    from jobgate.cli.offline import quick_validate_arguments

    args: argparse.Namespace | QuickArguments | None = quick_validate_arguments(arguments)
    if args is None:
        from jobgate.cli.parser import COMMANDS, build_parser

        parser = build_parser(arguments[0] if arguments and arguments[0] in COMMANDS else None)
        args = parser.parse_args(arguments)
    if getattr(args, "jobs", 0) is None:
        from jobgate.offline.results import default_jobs

        args.jobs = default_jobs()
    for stream in (sys.stdout, sys.stderr):
        # Never a UnicodeEncodeError while printing what a file contained.
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors="backslashreplace")
    try:
        return int(args.handler(args))
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return EXIT_OK


def _exit_handlers_may_run() -> bool:
    """Whether the interpreter's exit has work beyond freeing objects: multiprocessing's exit handlers
    (``-j N``), another thread to wait for, or logging's handlers to flush. Importing threading alone
    (pydantic does, for ``--policies``) starts no thread."""
    if "multiprocessing" in sys.modules or "logging" in sys.modules:
        return True
    threading = sys.modules.get("threading")
    return threading is not None and threading.active_count() > 1


def console_main() -> int:
    """The ``jobgate`` command (pyproject.toml's script) and ``python -m jobgate``: ``main()``, and
    for ``jobgate validate`` an exit that skips the interpreter's teardown.

    Once validate has printed everything, what is left is freeing every object one by one, a
    seventh of what a one-file check costs beyond the interpreter: ``os._exit`` ends the process
    with the same status instead. Only for validate, whose only output is stdout and stderr
    (flushed here first), and only while the process has one thread and nothing that registers
    exit handlers (``_exit_handlers_may_run``); a stream that
    cannot be flushed leaves the exit to the interpreter, which reports it as it always has.
    """
    validate = sys.argv[1:2] == ["validate"]
    if validate:
        # _validate's setting of the cyclic collector, from the start: the imports of a one-file
        # check would otherwise set it off a few dozen times, to find nothing to free.
        import gc

        gc.set_threshold(50_000, 50, 100)
    code = main()
    if not validate or _exit_handlers_may_run():
        return code
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        return code
    os._exit(code)
