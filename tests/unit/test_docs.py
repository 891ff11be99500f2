"""The documentation: every generated page current, every link and repository path resolved."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
if not (REPO / "docs").is_dir() or not (REPO / "jobgate").is_dir():
    # .ci/run's compiled-wheel pass runs the unit tests from a tree without sources or docs.
    pytest.skip("no documentation or sources here (the compiled wheel's pass)", allow_module_level=True)

from build_support import docs  # noqa: E402 (after the skip: it reads the tree)

# Pages other changes are writing; linked already, checked once they exist.
PENDING: set[str] = set()
# Paths the CHANGELOG names as they were when its entry was written, and where each is now.
MOVED: dict[str, str] = {
    "jobgate/generate/cel/carried.py": "jobgate/forms/carried.py",
    # Issue 47: the rule forms, their runtime and their compiler became the jobgate/forms/ package.
    "jobgate/rules/forms.py": "jobgate/forms",
    "jobgate/rules/declared.py": "jobgate/forms/checks",
    "jobgate/generate/forms.py": "jobgate/forms",
}


def _pages() -> list[Path]:
    return [REPO / "README.md", REPO / "CHANGELOG.md", *sorted((REPO / "docs").rglob("*.md"))]


pytestmark = pytest.mark.skipif(
    not (REPO / "README.md").exists() or not (REPO / "docs").is_dir(),
    reason="no README.md or docs/ here (the compiled pass copies the tests, not the documentation)",
)


def test_generated_pages_are_current():
    stale = docs.stale()
    assert not stale, f"stale: {stale}; run `python -m build_support.docs`"


def test_rule_anchors_are_unique_per_page():
    assert docs.rule_anchor("dijob/one-task-per-type") == "dijob-one-task-per-type"
    for path, target in docs.rule_ids().items():
        page, anchor = target.split("#")
        assert anchor in _anchors(REPO / page), (path, target)


def _slug(heading: str) -> str:
    """GitHub's anchor of a heading."""
    text = re.sub(r"<[^>]+>", "", heading).strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    text = path.read_text()
    text_no_code = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)
    found = set(re.findall(r'<a id="([^"]+)"', text_no_code))
    seen: dict[str, int] = {}
    for heading in re.findall(r"^#+ (.+)$", text_no_code, flags=re.M):
        slug = _slug(heading)
        count = seen.get(slug, 0)
        found.add(slug if count == 0 else f"{slug}-{count}")
        seen[slug] = count + 1
    return found


LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
# A backticked token that looks like a repository path: a known top directory or a file with a suffix.
TOPS = (
    "jobgate/",
    "webhook/",
    "controller/",
    "certs/",
    "manifests/",
    "charts/",
    "envtest/",
    "bench/",
    "tests/",
    "build_support/",
    "examples/",
    "docs/",
)
PATHLIKE = re.compile(r"`([A-Za-z0-9_.][\w./-]*)`")


def _links(path: Path) -> list[tuple[str, str]]:
    text = re.sub(r"^```.*?^```", "", path.read_text(), flags=re.S | re.M)
    return [(path.name, target) for target in LINK.findall(text)]


def _repo_paths(path: Path) -> list[str]:
    text = re.sub(r"^```.*?^```", "", path.read_text(), flags=re.S | re.M)
    found = []
    for written in PATHLIKE.findall(text):
        token = written.split(":")[0].rstrip("/.,")
        # Bare file names (`values.yaml`) are named relative to a directory the text names.
        if not token.startswith(TOPS) or "*" in token or "<" in token:
            continue
        found.append(token)
    return found


@pytest.mark.parametrize("page", _pages(), ids=lambda p: str(p.relative_to(REPO)))
def test_links_and_paths_resolve(page: Path):
    broken = []
    for _, target in _links(page):
        if re.match(r"[a-z]+:", target):
            continue  # an absolute URL
        file, _, anchor = target.partition("#")
        resolved = (page.parent / file).resolve() if file else page
        relative = resolved.relative_to(REPO).as_posix() if resolved.is_relative_to(REPO) else str(resolved)
        if not resolved.exists():
            if relative not in PENDING:
                broken.append(f"{target}: no {relative}")
            continue
        if anchor and resolved.suffix == ".md" and anchor not in _anchors(resolved):
            broken.append(f"{target}: no anchor #{anchor} in {relative}")
    for token in _repo_paths(page):
        if not (REPO / token).exists() and token.rstrip("/") not in PENDING:
            if page.name == "CHANGELOG.md" and (REPO / MOVED.get(token, token)).exists():
                continue
            broken.append(f"`{token}`: no such path")
    assert not broken, broken
