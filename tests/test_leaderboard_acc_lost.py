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
from fairforensics.evaluation.calibration import transfer
from fairforensics.evaluation.calibration.section import threshold_transfer_rows
from fairforensics.evaluation.calibration.transfer import acc_lost
from fairforensics.evaluation.confidence import stratified_multiplicities
from fairforensics.evaluation.leaderboard import build_leaderboard
from fairforensics.evaluation.metrics import acc, eer, factorize, video_scores
from fairforensics.evaluation.predictions import Predictions, write_predictions
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


def _tied(rng: np.random.Generator, n_videos: int) -> Predictions:
    """Videos of 1-6 frames, scores on a grid of 0.02 (many ties, some across classes)."""
    frames = rng.integers(1, 7, n_videos)
    video = np.repeat(np.arange(n_videos), frames)
    y = (rng.random(n_videos) < 0.4).astype(int)[video]
    z = (2 * y - 1) * 0.6 + rng.normal(0, 0.7, n_videos)[video] + rng.normal(0, 0.4, len(y))
    return Predictions(
        dataset=["FF"] * len(y), video_id=[f"v{v}" for v in video], frame=np.zeros(len(y)),
        label=y, score=np.round(1 / (1 + np.exp(-z)) / 0.02) * 0.02, method=["m"] * len(y),
    )  # fmt: skip


def _replicates(pred: Predictions, threshold: float, seed: int, level: str = "frame"):
    """The fast replicates of one seed, the full O(rows) computation's and the bootstrap."""
    y, s, key = transfer._level_rows(pred, level, "mean")
    codes, uniq = factorize(key)
    label = np.zeros(len(uniq), dtype=np.int64)
    label[codes] = y
    rows = transfer._Sorted(y, s, codes, len(uniq))
    block = next(stratified_multiplicities(np.random.default_rng(seed), label, 60))
    fast = rows.replicates(block, threshold)
    return rows, block, fast, np.array([rows.acc_lost(w, threshold)[0] for w in block])


def _repeated(pred: Predictions, weights: np.ndarray, threshold: float) -> float:
    """ACC lost of the rows repeated by their video's weight (metrics.eer and metrics.acc)."""
    codes = factorize(np.asarray(pred.video_key, dtype=object))[0]
    y, s = np.repeat(pred.label, weights[codes]), np.repeat(pred.score, weights[codes])
    return acc(y, s, threshold=eer(y, s)[1]) - acc(y, s, threshold=threshold)


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_window_replicates_equal_the_full_computation(seed: int):
    """Issue 47 x 48: the per-video counts and the window around the EER crossing give the
    replicates of the full computation (and of the repeated rows), with ties and the video
    level; most replicates from the window."""
    rng = np.random.default_rng(seed)
    cases = [(simulate(rng, 60, 8), 0.75, "frame"), (simulate(rng, 200, 4), 0.5, "video"),
             (_tied(rng, 150), 0.56, "frame"), (_tied(rng, 150), 0.4, "video")]  # fmt: skip
    for pred, threshold, level in cases:
        rows, block, fast, slow = _replicates(pred, threshold, seed, level)
        np.testing.assert_allclose(fast, slow, rtol=0, atol=1e-12)
        assert rows.window.misses < rows.window.tried / 2, (rows.window.misses, level)
        if level == "frame":
            for w, value in zip(block[:5], fast[:5], strict=True):
                assert value == pytest.approx(_repeated(pred, w, threshold), abs=1e-12)


def test_window_falls_back_and_widens_and_stays_exact():
    """A window of one row each side: nearly every replicate falls back to the full
    computation (same answers), and the window doubles until it holds them."""
    pred = simulate(np.random.default_rng(5), 100, 3)
    y, s, key = transfer._level_rows(pred, "frame", "mean")
    codes, uniq = factorize(key)
    label = np.zeros(len(uniq), dtype=np.int64)
    label[codes] = y
    rows = transfer._Sorted(y, s, codes, len(uniq))
    own = rows.curve.summary(np.ones(len(uniq), dtype=np.int64), ())["eer_threshold"]
    rows.window = transfer._Window(rows, rows._row(own), 1)
    first = rows.window
    block = next(stratified_multiplicities(np.random.default_rng(6), label, 200))
    fast = rows.replicates(block, 0.3)
    slow = [rows.acc_lost(w, 0.3)[0] for w in block]
    np.testing.assert_allclose(fast, slow, rtol=0, atol=1e-12)
    assert first.misses >= 2 and rows.window.half > 1
    assert rows.window.misses < rows.window.tried


def test_interval_is_that_of_the_full_computation(monkeypatch: pytest.MonkeyPatch):
    """The leaderboard cell (two seeds) with the window path and with the full one."""
    preds = [_tied(np.random.default_rng(8), 120) for _ in range(2)]
    preds[1].score = np.clip(preds[1].score + 0.04, 0, 1)  # the same videos, other scores
    fast = acc_lost(preds, [0.6, 0.5], n_boot=200, seed=3)

    def full(self, block: np.ndarray, threshold: float) -> np.ndarray:
        return np.array([self.acc_lost(w, threshold)[0] for w in block])

    monkeypatch.setattr(transfer._Sorted, "replicates", full)
    slow = acc_lost(preds, [0.6, 0.5], n_boot=200, seed=3)
    assert fast.low == pytest.approx(slow.low, abs=1e-12)
    assert fast.high == pytest.approx(slow.high, abs=1e-12)
    assert fast.low < fast.high


def test_window_at_every_position_is_exact_or_declines():
    """Windows of 1 and 3 rows each side centred on every row: each replicate's EER threshold
    and ACC there are the full computation's, or the window declines (None)."""
    pred = simulate(np.random.default_rng(9), 30, 3)
    y, s, key = transfer._level_rows(pred, "frame", "mean")
    codes, uniq = factorize(key)
    label = np.zeros(len(uniq), dtype=np.int64)
    label[codes] = y
    rows = transfer._Sorted(y, s, codes, len(uniq))
    block = next(stratified_multiplicities(np.random.default_rng(10), label, 30))
    totals = block @ rows.counts_above(len(y))
    owns = [rows.curve.summary(w, ())["eer_threshold"] for w in block]
    expected = [(own, rows.acc(w, [own])[0]) for w, own in zip(block, owns, strict=True)]
    told = 0
    for center in range(len(y)):
        for half in (1, 3):
            window = transfer._Window(rows, center, half)
            for w, (n, n_fake), value in zip(block, totals, expected, strict=True):
                got = window.eer_acc(w, int(n), int(n_fake))
                assert got is None or got == pytest.approx(value, abs=1e-12)
                told += got is not None
    assert told >= 100  # of 5400: the windows that hold the crossing


def _one_row_videos(y, s) -> Predictions:
    return Predictions(
        dataset=["FF"] * len(y), video_id=[f"v{i}" for i in range(len(y))],
        frame=np.zeros(len(y)), label=y, score=s, method=["m"] * len(y),
    )  # fmt: skip


def test_acc_at_thresholds_by_hand():
    """ACC counted by hand: above every score (all called real), between the scores, and with
    the lowest-scored row a fake."""
    y = np.array([0, 1, 0, 1, 1])
    s = np.array([0.9, 0.8, 0.6, 0.4, 0.2])
    pred = _one_row_videos(y, s)
    own = eer(y, s)[1]
    at_own = acc(y, s, threshold=own)
    for threshold, given in ((0.95, 2 / 5), (0.5, 1 / 5), (0.1, 3 / 5), (0.8, 2 / 5)):
        est = acc_lost([pred], [threshold], n_boot=0)
        assert est.acc_given == pytest.approx(given, abs=1e-15)
        assert est.value == pytest.approx(at_own - given, abs=1e-15)


def test_video_level_reduces_as_asked_and_arguments():
    pred = simulate(np.random.default_rng(4), 30, 5)
    for reduce in ("mean", "max"):
        y, s, _ = video_scores(pred.label, pred.score, pred.video_key, reduce=reduce)
        direct = acc(y, s, threshold=eer(y, s)[1]) - acc(y, s, threshold=0.8)
        est = acc_lost([pred], [0.8], level="video", reduce=reduce, n_boot=0)
        assert est.value == pytest.approx(direct, abs=1e-12)
    assert acc_lost([pred], [0.8], level="video", reduce="max", n_boot=0).value != pytest.approx(
        acc_lost([pred], [0.8], level="video", n_boot=0).value
    )
    # the defaults (1000 replicates, seed 0), the interval's confidence, ACC at the threshold
    default = acc_lost([pred], [0.8])
    assert default == acc_lost([pred], [0.8], n_boot=1000, seed=0, confidence=0.95)
    assert default != acc_lost([pred], [0.8], n_boot=1001)
    narrow = acc_lost([pred], [0.8], confidence=0.5)
    assert default.low < narrow.low <= narrow.high < default.high
    assert narrow.acc_given == default.acc_given == acc(pred.label, pred.score, threshold=0.8)
    with pytest.raises(ValueError, match="zip"):  # one threshold a seed
        acc_lost([pred], [0.8, 0.5], n_boot=0)
    with pytest.raises(ValueError, match="zip"):
        acc_lost([pred, pred], [0.8], n_boot=0)


def test_refusal_messages_and_notes_in_full():
    rng = np.random.default_rng(2)
    pred = simulate(rng, n_videos=8)
    assert acc_lost([pred], [0.5], n_boot=50).note == (
        "fewer than 5 real videos (4); fewer than 5 fake videos (4)"
    )
    with pytest.raises(ValueError, match=r"^the seeds' predictions hold different videos$"):
        acc_lost([pred, simulate(rng, n_videos=10)], [0.5, 0.5], n_boot=0)
    pred.label = np.ones(len(pred), dtype=int)
    with pytest.raises(ValueError, match=r"^ACC lost needs both classes \(an EER threshold\)$"):
        acc_lost([pred], [0.5], n_boot=0)


@pytest.mark.parametrize("tied", [False, True])
def test_window_declines_weights_it_cannot_tell(tied: bool):
    """Windows at every position with extreme weights: a class weighted 0 (no EER threshold),
    every row above the window weighted 0, and bootstrap weights on tied scores (a window
    inside the top tie block): the window's answer is the full computation's, or None."""
    pred = (
        _tied(np.random.default_rng(12), 40) if tied else simulate(np.random.default_rng(9), 20, 2)
    )
    if tied:  # the 5 highest rows tied in one block: a window inside it holds no score
        pred.score = np.minimum(pred.score, np.sort(pred.score)[-5])
    y, s, key = transfer._level_rows(pred, "frame", "mean")
    codes, uniq = factorize(key)
    label = np.zeros(len(uniq), dtype=np.int64)
    label[codes] = y
    rows = transfer._Sorted(y, s, codes, len(uniq))
    boot = next(stratified_multiplicities(np.random.default_rng(13), label, 6))
    told = 0
    for center in range(len(y)):
        for half in (1, 3):
            window = transfer._Window(rows, center, half)
            above = np.zeros(len(uniq), dtype=np.int64)
            above[np.unique(rows.videos[: window.start])] = 1
            blocks = [
                boot[0] * (label == 1),
                boot[1] * (label == 0),
                boot[2] * (1 - above),
                *boot[3:],
            ]
            for w in blocks:
                n, n_fake = w @ rows.counts_above(len(y))
                got = window.eer_acc(w, int(n), int(n_fake))
                own = rows.curve.summary(w, ())["eer_threshold"]
                if not np.isfinite(own):
                    assert got is None
                    continue
                assert got is None or got == pytest.approx((own, rows.acc(w, [own])[0]), abs=1e-12)
                told += got is not None
    assert told >= 20
