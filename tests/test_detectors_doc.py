"""docs/detectors.md lists every detector with the parameter count the code really has."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from fairforensics.detectors import build_detector, get_detector_class, list_detectors

DOC = Path(__file__).resolve().parents[1] / "docs" / "detectors.md"
# The package's own detectors (tests register tiny ones of their own).
BUILTIN = [
    n
    for n in list_detectors()
    if get_detector_class(n).__module__.startswith("fairforensics.detectors.")
]


def documented_counts() -> dict[str, int]:
    counts = {}
    for line in DOC.read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 7 and cells[5].replace(",", "").isdigit():
            counts[cells[0]] = int(cells[5].replace(",", ""))
    return counts


def test_every_detector_has_a_row() -> None:
    assert sorted(documented_counts()) == BUILTIN


@pytest.mark.parametrize("name", BUILTIN)
def test_documented_parameter_count_is_measured(name: str) -> None:
    with torch.device("meta"):  # counts shapes without allocating or initialising weights
        model = build_detector(name, pretrained=False)
    measured = sum(p.numel() for p in model.parameters() if p.requires_grad)
    assert measured == documented_counts()[name]
