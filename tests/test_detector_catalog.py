"""The detector catalog and ``fairforensics detectors`` (issue 31, item 2): a row per registered
detector, names and parity results that agree with docs/detectors.md, ``--json``."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from fairforensics.cli.detectors import format_table
from fairforensics.cli.detectors import main as detectors_main
from fairforensics.detectors.catalog import CATALOG, COLUMNS, PASS
from fairforensics.detectors.registry import _builtin_modules

REPO = Path(__file__).resolve().parents[1]


def test_every_builtin_detector_has_exactly_one_row() -> None:
    assert set(CATALOG) == set(_builtin_modules())


def _docs_parity_rows() -> dict[str, tuple[str, str]]:
    """``name -> (DeepfakeBench name, result cell)`` of the parity tables of docs/detectors.md
    (rows ``| name (dfb name) | ... |``)."""
    rows = {}
    for line in (REPO / "docs" / "detectors.md").read_text(encoding="utf-8").splitlines():
        found = re.match(r"\| (\w+) \((\w+)\) \|.*\| ([^|]*) \|$", line)
        if found:
            rows[found[1]] = (found[2], found[3])
    return rows


def test_names_and_parity_agree_with_the_docs() -> None:
    docs = _docs_parity_rows()
    passed = {name for name, info in CATALOG.items() if info.forward_parity == PASS}
    assert passed == set(docs)
    for name, (dfb, result) in docs.items():
        assert CATALOG[name].deepfakebench == dfb, name
        assert "pass" in result, (name, result)
    for name, info in CATALOG.items():
        if info.parity_test is not None:  # the test that checks it names the detector
            assert re.search(rf"\b{name}\b", (REPO / info.parity_test).read_text()), name


def test_format_table_aligns_columns_and_shows_none_as_a_dash() -> None:
    rows = [{"a": "x", "b": None}, {"a": "long", "b": "y"}]
    assert format_table(rows, ("a", "b")).splitlines() == ["a     b", "x     -", "long  y"]


def test_the_command_lists_every_detector_with_a_users_one(capsys) -> None:
    """``--json`` rows, with a detector registered by ``--import`` (nothing known about it)."""
    assert detectors_main(["--json", "--import", "tests.clip_detectors"]) == 0
    rows = {row["name"]: row for row in json.loads(capsys.readouterr().out)}
    assert set(CATALOG) < set(rows) and all(tuple(r) == COLUMNS for r in rows.values())
    assert rows["xray"] == {
        "name": "xray",
        "family": "Spatial",
        "input": "frame",
        "paper": "Li et al., CVPR 2020",
        "deepfakebench": "facexray",
        "forward_parity": "pass",
        "parity_test": "tests/test_parity_b.py",
    }
    assert rows["i3d"]["input"] == "clip" and rows["lbp_mlp"]["forward_parity"] == "no fixture"
    assert rows["_tiny_clip"] == {
        "name": "_tiny_clip",
        "family": "Video",
        "input": "clip",
        **dict.fromkeys(COLUMNS[3:]),
    }
    assert detectors_main([]) == 0
    table = capsys.readouterr().out.splitlines()
    assert table[0].split() == list(COLUMNS) and len(table) == len(rows) + 1


@pytest.mark.parametrize("verb", ["detectors", "demographics", "combine"])
def test_new_verbs_are_dispatched(verb, capsys) -> None:
    from fairforensics.cli import main

    with pytest.raises(SystemExit) as stop:
        main([verb, "--help"])
    assert stop.value.code == 0 and f"fairforensics {verb}" in capsys.readouterr().out


def test_family_and_input_read_from_the_source_match_the_classes() -> None:
    """``fairforensics detectors`` reads family and input kind from the source (issue 40, item
    7); what it reads is what each class says."""
    from fairforensics.detectors.registry import (
        detector_family,
        detector_input_kind,
        get_detector_class,
    )

    read = {name: (detector_family(name), detector_input_kind(name)) for name in CATALOG}
    for name in CATALOG:
        cls = get_detector_class(name)
        assert read[name] == (cls.family, cls.input_kind), name


def test_listing_imports_no_detector_module() -> None:
    """The table is built without importing any built-in detector's module (no model is built,
    no backbone library loaded)."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from fairforensics.cli.detectors import main\n"
        "main([])\n"
        "from fairforensics.detectors.registry import _builtin_modules\n"
        "print(sorted(set(_builtin_modules().values()) & set(sys.modules)), 'timm' in sys.modules,"
        " file=sys.stderr)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=REPO
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stderr.strip().splitlines()[-1] == "[] False", done.stderr[-2000:]
