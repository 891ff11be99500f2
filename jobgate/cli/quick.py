"""The common ``jobgate validate [-o FORMAT] [-j N] [--validate MODE] PATH...`` read without argparse."""

from __future__ import annotations

from jobgate.cli.offline import QuickArguments

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at run time (start-up)
if TYPE_CHECKING:
    pass


# The flags the quick parse reads, by the attribute each sets.
_QUICK_FLAGS = {"-o": "output", "--output": "output", "-j": "jobs", "--jobs": "jobs", "--validate": "validate"}


def quick_validate_arguments(arguments: list[str]) -> QuickArguments | None:
    """``jobgate validate [-o FORMAT] [-j N] [--validate MODE] PATH...``, what a pre-commit hook or
    a CI step runs, read without argparse; None for anything else, which argparse then parses.

    Importing argparse (and gettext, and the locale look-ups of its messages when a parser is
    built) costs a one-file check more than its rules. Only the plain forms are read here: a
    flag and its value as two words, or a long flag and its value joined by "=", each value
    valid (argparse checks every occurrence, the last one wins), the paths in one run (argparse
    refuses paths on both sides of a flag). Any other word (--queues, -j2, an abbreviation, --,
    -h, a path starting with "-"), a bad value or no path at all is left to argparse, so that
    every usage error keeps argparse's message and exit status 2.
    """
    if arguments[:1] != ["validate"]:
        return None
    from jobgate.offline.report import FORMATS
    from jobgate.offline.results import FieldValidation

    output, validation, jobs = "text", FieldValidation.STRICT, None
    paths: list[str] = []
    index, after_path = 1, False
    while index < len(arguments):
        word = arguments[index]
        flag, joined, value = word.partition("=") if word.startswith("--") else (word, "", "")
        if flag in _QUICK_FLAGS:
            if not joined:
                value = arguments[index + 1] if index + 1 < len(arguments) else "-"
                if value.startswith("-"):
                    return None
                index += 1
            # Each value as argparse's choices= or type= takes it (FORMATS, _field_validation,
            # _positive_int); one argparse would refuse is left to it.
            if _QUICK_FLAGS[flag] == "output":
                if value not in FORMATS:
                    return None
                output = value
            elif _QUICK_FLAGS[flag] == "validate":
                try:
                    validation = FieldValidation.parse(value)
                except ValueError:
                    return None
            else:
                try:
                    jobs = int(value)
                except ValueError:
                    return None
                if jobs < 1:
                    return None
            index, after_path = index + 1, False
            continue
        if word.startswith("-") and word != "-":
            return None
        if paths and not after_path:
            return None
        paths.append(word)
        index, after_path = index + 1, True
    if not paths:
        return None
    return QuickArguments(paths, output, validation, jobs)
