"""The leaderboard holds one column (test set) of predictions at once and gives the cells it
gave when every file was held (issue 47)."""

from __future__ import annotations

import gc
import weakref
from pathlib import Path

import numpy as np

from fairforensics.evaluation import leaderboard
from fairforensics.evaluation.leaderboard import Entry, _level_cells, collect_entries
from tests.test_eval_tables import make_eval_dir

AUCS = {"xception": (0.9, 0.7), "spsl": (0.85, 0.75), "core": (0.6, 0.72)}
OPTIONS = {"reduce": "mean", "threshold": 0.5, "n_boot": 30, "confidence": 0.95, "seed": 0,
           "alpha": 0.05}  # fmt: skip


def folders(tmp_path: Path) -> list[Path]:
    return [
        make_eval_dir(tmp_path, det, "FF", {"A": a, "B": b}) for det, (a, b) in AUCS.items()
    ] + [make_eval_dir(tmp_path / "seed2", "core", "FF", {"A": 0.62, "B": 0.7})]


def test_one_column_is_held_at_once(tmp_path, monkeypatch) -> None:
    dirs = folders(tmp_path)
    alive: list[tuple[str, weakref.ref]] = []
    read = leaderboard.read_predictions

    def tracked(path, *args, **kwargs):
        gc.collect()
        column = Path(path).stem
        held = {c for c, ref in alive if ref() is not None}
        assert held <= {column}, f"reading {column} while {held - {column}} are held"
        pred = read(path, *args, **kwargs)
        alive.append((column, weakref.ref(pred)))
        return pred

    monkeypatch.setattr(leaderboard, "read_predictions", tracked)
    cells = _level_cells(collect_entries(dirs), "frame", **OPTIONS)
    assert {c for c, _ in alive} == {"A", "B"} and len(cells.results) == 6


def test_cells_are_those_of_entries_held_in_memory(tmp_path) -> None:
    dirs = folders(tmp_path)
    lazy = collect_entries(dirs)
    held = [
        Entry(
            e.detector,
            e.train_data,
            e.test_data,
            list(e.preds),
            e.baseline,
            e.thresholds,
            e.eval_dirs,
        )  # fmt: skip
        for e in lazy
    ]
    a = _level_cells(lazy, "frame", **OPTIONS)
    b = _level_cells(held, "frame", **OPTIONS)
    assert [(r.detector, r.test_data, r.metrics) for r in a.results] == [
        (r.detector, r.test_data, r.metrics) for r in b.results
    ]
    assert repr(a.details) == repr(b.details)  # NaN bounds print alike
    assert any("tied" in v for v in a.details.values())


def test_parquet_evaluation_folders_join_the_leaderboard(tmp_path) -> None:
    from fairforensics.evaluation.predictions import read_predictions
    from fairforensics.evaluation.results import evaluate_prediction_files
    from fairforensics.evaluation.settings import load_test_config

    csv_dirs = folders(tmp_path / "csv")[:3]
    cfg = load_test_config(overrides=["n_boot=0", "plots=false", "report=false"])
    parquet_dirs = []
    for d in csv_dirs:
        files = {n: d / "predictions" / f"{n}.csv" for n in ("A", "B")}
        out = tmp_path / "parquet" / d.name
        evaluate_prediction_files(files, out, cfg, d.name.split("_")[0], "FF", fmt="parquet")
        assert sorted(p.name for p in (out / "predictions").iterdir()) == ["A.parquet", "B.parquet"]
        x, y = read_predictions(out / "predictions" / "A.parquet"), read_predictions(files["A"])
        for c in ("dataset", "video_id", "frame", "label", "score", "method", "unit"):
            assert np.array_equal(getattr(x, c), getattr(y, c)), c
        parquet_dirs.append(out)
    a = _level_cells(collect_entries(csv_dirs), "frame", **OPTIONS)
    b = _level_cells(collect_entries(parquet_dirs), "frame", **OPTIONS)
    assert [r.metrics for r in a.results] == [r.metrics for r in b.results]
    assert repr(a.details) == repr(b.details)
