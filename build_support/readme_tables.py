"""Keep the README's generated tables current: now part of ``build_support/docs.py``.

``python -m build_support.readme_tables [--check]`` rewrites (or checks) the README's marked
tables only; ``python -m build_support.docs`` does the same for every generated page.
"""

from __future__ import annotations

import argparse
import sys

from build_support.docs import REPO
from build_support.docs import updated as _updated

README = REPO / "README.md"


def updated(text: str) -> str:
    """The README's text with its marked tables (served kinds, overlays, enforcement summary) rewritten."""
    return _updated(text, "README.md")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if the README's tables are stale")
    args = parser.parse_args()
    from build_support.checkout import install_problem

    problem = install_problem()
    if problem:
        print(f"python -m build_support.readme_tables: {problem}", file=sys.stderr)
        return 2
    text = README.read_text()
    new = updated(text)
    if args.check:
        if new != text:
            print("README.md's tables are stale: run `python -m build_support.docs`", file=sys.stderr)
            return 1
        return 0
    if new != text:
        README.write_text(new)
        print(f"wrote {README}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
