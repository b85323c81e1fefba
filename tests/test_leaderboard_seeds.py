"""The leaderboard's seeded cells carry both named intervals (issue 45, item 3)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from fairforensics.evaluation.leaderboard import build_leaderboard
from fairforensics.evaluation.predictions import Predictions, write_predictions
from fairforensics.evaluation.results import evaluate_prediction_files
from fairforensics.evaluation.settings import load_test_config


def _eval_dir(root: Path, detector: str, seed: int, shift: float) -> Path:
    rng = np.random.default_rng(seed)
    video = np.repeat(np.arange(24), 3)
    y = (video % 2).astype(int)
    score = 1 / (1 + np.exp(-(shift * y + rng.normal(size=24)[video] + rng.normal(size=72))))
    path = root / "src" / f"{detector}{seed}" / "FF.csv"
    path.parent.mkdir(parents=True)
    write_predictions(
        path,
        Predictions(dataset=["FF"] * 72, video_id=[f"v{v}" for v in video],
                    frame=np.tile(np.arange(3), 24), label=y, score=score,
                    method=np.where(y == 1, "DF", "real")),
    )  # fmt: skip
    cfg = load_test_config(overrides=["n_boot=0", "plots=false", "report=false"])
    out = root / "evals" / f"{detector}_{seed}"
    evaluate_prediction_files({"FF": path}, out, cfg, detector, "FF")
    return out


def test_seeded_cells_carry_both_intervals(tmp_path: Path) -> None:
    dirs = [_eval_dir(tmp_path, "xception", s, 1.5 + 0.3 * s) for s in (1, 2)]
    dirs.append(_eval_dir(tmp_path, "meso4", 3, 1.0))
    out = build_leaderboard(dirs, tmp_path / "board", metrics=("auc", "acc"), n_boot=50)
    data = json.loads((out / "leaderboard_frame_auc.json").read_text())
    rows = {r["Detector"]: r for r in data["rows"]}
    seeded, single = rows["xception"], rows["meso4"]
    assert seeded["FF seeds low"] < seeded["FF low"] < seeded["FF"] < seeded["FF high"]
    assert seeded["FF high"] < seeded["FF seeds high"]
    assert single.get("FF seeds low") is None  # one seed: no over-seeds interval
    assert "given these trained models" in data["title"] and "over training seeds" in data["title"]
    assert "with 2 seeds the over-seeds interval is wide" in data["title"]
    header = (out / "leaderboard_frame_acc.csv").read_text().splitlines()[0]
    assert "FF seeds low,FF seeds high" in header
