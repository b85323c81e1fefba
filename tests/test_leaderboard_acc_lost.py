"""The leaderboard's ACC lost to threshold transfer (issue 48, item 4): the value of
``tables/threshold_transfer`` and of an independent computation, a seeded coverage simulation
of its interval with exact binomial bounds, seeds, refusals and ``leaderboard_<level>_acc_lost``
beside the other tables (lower is better)."""

from __future__ import annotations

import json
import zlib
from pathlib import Path

import numpy as np
import pytest

from fairforensics.benchmarks.acc_lost_coverage import coverage, simulate, true_acc_lost
from fairforensics.evaluation.calibration.section import threshold_transfer_rows
from fairforensics.evaluation.calibration.transfer import acc_lost
from fairforensics.evaluation.leaderboard import build_leaderboard
from fairforensics.evaluation.metrics import acc, eer
from fairforensics.evaluation.predictions import write_predictions
from fairforensics.evaluation.results import evaluate_prediction_files
from fairforensics.evaluation.settings import load_test_config


def test_value_is_that_of_the_threshold_transfer_table_and_of_a_direct_computation():
    pred = simulate(np.random.default_rng(0))
    for level in ("frame", "video"):
        row = threshold_transfer_rows(pred, "FF", 0.75, "run", level)
        est = acc_lost([pred], [0.75], level=level, n_boot=0)
        assert est.value == pytest.approx(row["acc lost"], abs=1e-12)
        assert est.acc_given == pytest.approx(row["acc (given)"], abs=1e-12)
        assert est.note == "intervals off"
    y, s = pred.label, pred.score
    own = eer(y, s)[1]
    direct = acc(y, s, threshold=own) - acc(y, s, threshold=0.75)
    assert acc_lost([pred], [0.75], n_boot=0).value == pytest.approx(direct, abs=1e-12)
    two = acc_lost([pred, simulate(np.random.default_rng(1))], [0.75, 0.5], n_boot=50)
    first, second = (acc_lost([p], [t], n_boot=0).value for p, t in
                     ((pred, 0.75), (simulate(np.random.default_rng(1)), 0.5)))  # fmt: skip
    assert two.value == pytest.approx((first + second) / 2)  # the mean over the seeds
    assert two.low <= two.value <= two.high


def test_refusals_and_small_group_rule():
    rng = np.random.default_rng(2)
    pred = simulate(rng, n_videos=8)
    assert "fewer than 5 real videos (4)" in acc_lost([pred], [0.5], n_boot=50).note
    with pytest.raises(ValueError, match="different videos"):
        acc_lost([pred, simulate(rng, n_videos=10)], [0.5, 0.5], n_boot=0)
    fakes = simulate(rng)
    fakes.label = np.ones(len(fakes), dtype=int)
    with pytest.raises(ValueError, match="both classes"):
        acc_lost([fakes], [0.5], n_boot=0)


def test_interval_coverage_simulation():
    """Seeded, small (``scripts/bench_acc_lost.py --coverage`` runs more): 150 test sets of 40
    videos (20 per class, 4 frames each, a video effect), a threshold 0.75 off the EER
    threshold. Coverage of the true ACC lost within exact binomial (Clopper-Pearson) bounds
    that reach 95 %."""
    assert true_acc_lost(0.5) == pytest.approx(0.0, abs=1e-15) and true_acc_lost(0.75) > 0.05
    res = coverage(40, 0.75, 150, n_boot=150, seed=7)
    assert res["high"] >= 0.95 and res["low"] <= 0.95, res


def _eval_dir(root: Path, name: str, shift: float, threshold: float) -> Path:
    pred = simulate(np.random.default_rng(zlib.crc32(name.encode())), shift=shift)
    path = root / "src" / name / "FF.csv"
    path.parent.mkdir(parents=True)
    write_predictions(path, pred)
    cfg = load_test_config(
        overrides=["n_boot=0", "plots=false", "report=false", f"threshold={threshold}"]
    )
    out = root / "evals" / name
    evaluate_prediction_files({"FF": path}, out, cfg, name, "FF")
    return out


def test_leaderboard_writes_acc_lost_beside_the_other_tables(tmp_path: Path):
    dirs = [_eval_dir(tmp_path, "xception", 0.0, 0.5), _eval_dir(tmp_path, "meso4", 0.0, 0.8)]
    out = build_leaderboard(dirs, tmp_path / "board", metrics=("auc", "acc"), n_boot=50)
    for suffix in ("csv", "md", "json"):
        assert (out / f"leaderboard_frame_acc_lost.{suffix}").is_file()
    data = json.loads((out / "leaderboard_frame_acc_lost.json").read_text())
    rows = {r["Detector"]: r for r in data["rows"]}
    assert "own EER threshold" in data["title"] and "lower is better" in data["title"]
    for name, threshold in (("xception", 0.5), ("meso4", 0.8)):
        pred = simulate(np.random.default_rng(zlib.crc32(name.encode())))
        expected = acc_lost([pred], [threshold], n_boot=0).value
        assert rows[name]["FF"] == pytest.approx(expected)
        assert rows[name]["FF low"] <= rows[name]["FF"] <= rows[name]["FF high"]
        assert rows[name]["Threshold"] == threshold
    # the threshold far from the EER threshold loses more, and lower is better: xception best
    assert rows["meso4"]["FF"] > rows["xception"]["FF"]
    assert [r for r, col in data["best"]][:1] == [
        next(i for i, r in enumerate(data["rows"]) if r["Detector"] == "xception")
    ]


def test_acc_table_says_validation_threshold_when_every_row_chose_one(tmp_path: Path):
    dirs = [_eval_dir(tmp_path, "xception", 0.0, 0.6), _eval_dir(tmp_path, "meso4", 0.0, 0.4)]
    given = build_leaderboard(dirs, tmp_path / "given", metrics=("acc",), n_boot=0)
    assert (
        "validation threshold"
        not in json.loads((given / "leaderboard_frame_acc.json").read_text())["title"]
    )
    for d in dirs:  # as a run's evaluation records it (scripts/test.py --run)
        info = json.loads((d / "eval.json").read_text())
        (d / "eval.json").write_text(json.dumps({**info, "threshold_chosen_by": "run"}))
    out = build_leaderboard(dirs, tmp_path / "run", metrics=("acc",), n_boot=0)
    title = json.loads((out / "leaderboard_frame_acc.json").read_text())["title"]
    assert "ACC at the validation threshold of each row (columns Threshold" in title
    lost = json.loads((out / "leaderboard_frame_acc_lost.json").read_text())
    assert {r["Chosen by"] for r in lost["rows"]} == {"run's validation threshold"}
    assert "FF low" not in lost["rows"][0]  # n_boot 0: no interval
