"""Keep the README's enforcement tables equal to ``jobgate manifests enforcement``'s output.

``python -m build_support.readme_tables`` rewrites the text between the README's markers;
``--check`` only reports a difference (tests/unit/test_cel_catalogue.py runs it).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import re
import sys
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"
TABLES = {"enforcement-summary": ["manifests", "enforcement", "--summary"], "enforcement": ["manifests", "enforcement"]}


def table(arguments: list[str]) -> str:
    from jobgate.cli import main

    output = io.StringIO()
    with contextlib.redirect_stdout(output):
        status = main(arguments)
    if status != 0:
        raise RuntimeError(f"jobgate {' '.join(arguments)} exited {status}")
    return output.getvalue()


def updated(text: str) -> str:
    for marker, arguments in TABLES.items():
        pattern = re.compile(rf"(<!-- {marker} -->\n).*?(<!-- /{marker} -->)", re.S)
        if not pattern.search(text):
            raise RuntimeError(f"README.md has no <!-- {marker} --> ... <!-- /{marker} --> markers")
        text = pattern.sub(lambda m, a=arguments: m.group(1) + table(a) + m.group(2), text)
    return text


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if the README's tables are stale")
    args = parser.parse_args()
    text = README.read_text()
    new = updated(text)
    if args.check:
        if new != text:
            print(
                "README.md's enforcement tables are stale: run `python -m build_support.readme_tables`", file=sys.stderr
            )
            return 1
        return 0
    if new != text:
        README.write_text(new)
        print(f"wrote {README}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
