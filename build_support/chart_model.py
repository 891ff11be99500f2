"""What the chart generator (``build_support.chart``) and the chart's hand-written parts
(``build_support.chart_static``) share: the repository's place, the generator's error and the
defaults read from ``manifests/``. Its own module, so that neither of the two imports the other's."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]


class ChartError(RuntimeError):
    """The manifests hold something this generator does not know how to carry into the chart."""


@dataclass
class Defaults:
    repository: str
    tag: str
    webhook: dict[str, Any]
    controller: dict[str, Any]
    pdb: dict[str, Any]
    admission: dict[str, Any]
    families: list[str]
    groups: dict[str, str] = field(default_factory=dict)  # API group -> family
