"""What a reader sees (issue 31, items 6, 7 and 9): help texts, tables, one copy of shared code."""

from __future__ import annotations

import importlib
import inspect
import re

import pytest

from fairforensics.cli.errors import UserInputError
from fairforensics.cli.source import HELP, check_detector_source


@pytest.mark.parametrize("verb", ["preprocess", "train", "test", "fairness", "metamorphic"])
def test_help_has_no_runs_of_spaces(verb: str, capsys: pytest.CaptureFixture) -> None:
    """A docstring line ending in a backslash once joined the next one with a run of spaces."""
    module = importlib.import_module(f"fairforensics.cli.{verb}")
    with pytest.raises(SystemExit):
        (getattr(module, "parse_args", None) or module.main)(["--help"])
    description = capsys.readouterr().out.split("\noptions:")[0]
    assert not re.search(r"\S {3,}\S", description), description


#: every verb that loads a detector (issue 36, item 10)
DETECTOR_VERBS = ("test", "detect", "robustness", "metamorphic")


@pytest.mark.parametrize("verb", DETECTOR_VERBS)
def test_detector_source_is_declared_once(verb: str, capsys: pytest.CaptureFixture) -> None:
    """Each verb declares its detector through ``add_detector_source`` (no option of its own)
    and shows that one help text of each of its options."""
    module = importlib.import_module(f"fairforensics.cli.{verb}")
    text = inspect.getsource(module)
    assert "add_detector_source(p)" in text, verb
    for option in ("--run", "--detector", "--model", "--weights", "--model-config", "--variant"):
        assert f'"{option}"' not in text, (verb, option)
    with pytest.raises(SystemExit):
        module.parse_args(["--help"])
    shown = " ".join(capsys.readouterr().out.split())
    for help_text in HELP.values():
        assert " ".join(help_text.split()) in shown, (verb, help_text)


@pytest.mark.parametrize("verb", DETECTOR_VERBS)
@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--detector", "meso4"], "--detector needs --weights FILE"),
        (["--model", "pkg", "--weights", "best"], "--weights: a --model package holds"),
        (["--run", "r", "--variant", "paper"], "go with --detector, not --run"),
    ],
)
def test_detector_source_combinations_are_checked(verb: str, argv: list, message: str) -> None:
    module = importlib.import_module(f"fairforensics.cli.{verb}")
    extra = {"detect": ["x.jpg"], "robustness": ["--test-data", "d"]}.get(verb, [])
    extra += ["--test-data", "d"] if verb == "metamorphic" else []
    args = module.parse_args([*extra, *argv])
    with pytest.raises(UserInputError, match=re.escape(message)):
        check_detector_source(args)


@pytest.mark.parametrize(
    "config",
    [
        "fairforensics.detectors.backbones.clip_vit:ClipVitConfig",
        "fairforensics.detectors.backbones.hf_video:VideoTransformerConfig",
    ],
)
def test_transformer_towers_share_one_shape_check(config: str) -> None:
    module, name = config.split(":")
    cls = getattr(importlib.import_module(module), name)
    with pytest.raises(ValueError, match="width 100 is not divisible by heads 12"):
        cls(width=100)
    with pytest.raises(ValueError, match="input_size 100 is not a multiple of patch_size 16"):
        cls(input_size=100)


@pytest.mark.parametrize(
    "function",
    [
        "fairness.report:attribute_report",  # was 178 lines
        "fairness.gaps:group_gaps",  # 157
        "fairness.protocols:write_protocol_tables",  # 154
    ],
)
def test_long_functions_are_split_into_named_steps(function: str) -> None:
    module, name = function.split(":")
    source = inspect.getsource(getattr(importlib.import_module(f"fairforensics.{module}"), name))
    assert len(source.splitlines()) <= 70, function


def test_copies_became_one() -> None:
    """The metamorphic report's summary columns are the tables' columns; PG-FDD's training
    forward is UCF's (``duplicates`` found both written twice)."""
    from fairforensics.detectors import pg_fdd, ucf
    from fairforensics.fairness.metamorphic import report, tables

    assert report.SUMMARY_COLUMNS is tables.SUMMARY_COLUMNS
    assert [c for c in tables.COLUMNS if c in tables.SUMMARY_COLUMNS] == list(
        tables.SUMMARY_COLUMNS
    )
    assert pg_fdd.training_outputs is ucf.training_outputs
    assert "training_outputs(self" in inspect.getsource(pg_fdd.PGFDD.forward)
    assert "training_outputs(self" in inspect.getsource(ucf.UCF.forward)


def test_group_metrics_tables_by_family_with_named_notes(tmp_path) -> None:
    """Issue 31, item 6: group_metrics.md split by metric family, notes last (also after the
    per-species APCER columns of the CSV), each reason once and named with its group, and the
    counts say what they count."""
    import csv

    import numpy as np

    from fairforensics.evaluation.predictions import Predictions
    from fairforensics.fairness.report import ReportConfig, fairness_report, write_report

    rng = np.random.default_rng(0)
    videos = [("f", 0, "real")] * 3 + [("f", 1, "A")] * 8 + [("m", 0, "real")] * 8
    videos += [("m", 1, "B")] * 8  # species A only in group f, B only in m
    rows = [(i, g, y, meth) for i, (g, y, meth) in enumerate(videos) for _ in range(2)]
    pred = Predictions(
        dataset=["d"] * len(rows),
        video_id=[f"v{i}" for i, *_ in rows],
        frame=np.tile([0, 1], len(videos)),
        label=np.array([y for _, _, y, _ in rows]),
        score=np.clip(
            np.array([y for _, _, y, _ in rows]) * 0.5 + rng.uniform(0, 0.5, len(rows)), 0, 1
        ),
        method=[m for *_, m in rows],
        attributes={"gender": [g for _, g, _, _ in rows]},
    )
    cfg = ReportConfig(bootstrap=100, permutations=0, curve_bootstrap=0, figures=False)
    write_report(fairness_report(pred, ["gender"], cfg), tmp_path)
    with (tmp_path / "group_metrics.csv").open(newline="") as fh:
        table = list(csv.DictReader(fh))
    header = list(table[0])
    assert header[-1] == "notes" and {"apcer[A]", "apcer[B]"} <= set(header)
    f = next(r for r in table if r["group"] == "f")
    assert f["counted"] == "frames" and f["n_real"] == "6"  # 3 videos of 2 frames
    assert f["notes"].startswith("f: fewer than 5 real videos (3): no interval of ")
    assert f["notes"].count("fewer than 5 real videos (3)") == 1
    assert next(r for r in table if r["group"] == "m")["notes"] == ""
    md = (tmp_path / "group_metrics.md").read_text()
    titles = [line for line in md.splitlines() if line.startswith("## ")]
    assert titles == ["## Detection metrics", "## Calibration (ECE of P(fake), 15 equal-width bins)",
                      "## Intervals", "## ISO/IEC 30107-3", "## Notes"]  # fmt: skip
    assert max(len(line.split("|")) for line in md.splitlines()) < 22  # no 50-column table
