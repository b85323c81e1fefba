"""Calibration metrics against hand cases and independent implementations, post-hoc maps on a
simulated over-confident detector, interval coverage, refusals and the calibrate command."""

from __future__ import annotations

import json
import subprocess
import sys
import warnings

import numpy as np
import pytest
from scipy.special import expit
from sklearn.metrics import roc_auc_score

from fairforensics.evaluation.calibration import (
    CalibrationError,
    brier,
    calibration_summary,
    ece,
    fit_calibration,
    mce,
    nll,
    read_calibration,
    reliability_bins,
    write_calibration,
)
from fairforensics.evaluation.calibration.metrics import (
    basic_interval,
    bin_edges,
    bin_of,
    ece_bootstrap,
)
from fairforensics.evaluation.confidence import stratified_multiplicities
from fairforensics.evaluation.predictions import Predictions, write_predictions


def ece_by_loop(y, s, n_bins=15):
    """An independent ECE: a plain loop over equal-width bins (the last one closed)."""
    total = 0.0
    for b in range(n_bins):
        lo, hi = b / n_bins, (b + 1) / n_bins
        inside = [
            (yi, si)
            for yi, si in zip(y, s, strict=True)
            if lo <= si < hi or (b == n_bins - 1 and si == 1)
        ]
        if inside:
            share = sum(yi for yi, _ in inside) / len(inside)
            conf = sum(si for _, si in inside) / len(inside)
            total += len(inside) / len(y) * abs(share - conf)
    return total


def test_hand_case():
    """Two bins: [0.1, 0.2] (both real: gap 0.15) and [0.8, 0.9] (one fake: gap 0.35)."""
    y, s = [0, 0, 1, 0], [0.1, 0.2, 0.8, 0.9]
    assert ece(y, s, n_bins=2) == pytest.approx(0.5 * 0.15 + 0.5 * 0.35)
    assert mce(y, s, n_bins=2) == pytest.approx(0.35)
    assert brier(y, s) == pytest.approx((0.01 + 0.04 + 0.04 + 0.81) / 4)
    assert nll(y, s) == pytest.approx(-np.mean(np.log([0.9, 0.8, 0.8, 0.1])))
    bins = reliability_bins(y, s, n_bins=2)
    np.testing.assert_allclose(bins.counts, [2, 2])
    np.testing.assert_allclose(bins.fake_share, [0, 0.5])
    assert ece([1], [1.0], n_bins=15) == 0.0  # a score of 1 falls in the last bin


def test_basic_interval_by_hand():
    """Replicates 0, 0.01, ..., 1 (quantile q is q) and a point of 0.3: the interval is
    ``[0.6 - q_hi, 0.6 - q_lo]``, at 95 % by default."""
    replicates = np.arange(101) / 100
    assert basic_interval(0.3, replicates) == pytest.approx((0.6 - 0.975, 0.6 - 0.025))
    assert basic_interval(0.3, replicates, 0.9) == pytest.approx((0.6 - 0.95, 0.6 - 0.05))


def test_ece_weights_single_rows_and_default_bins():
    rng = np.random.default_rng(7)
    y, s = rng.integers(0, 2, 60), rng.random(60)
    w = rng.integers(0, 4, 60)
    # a weight is a repetition of the row
    repeated = ece_by_loop(np.repeat(y, w), np.repeat(s, w))
    assert ece(y, s, sample_weight=w) == pytest.approx(repeated, abs=1e-12)
    assert ece(y, s) == pytest.approx(ece_by_loop(y, s, 15), abs=1e-12)  # 15 bins by default
    assert ece([1], [0.3], n_bins=2) == pytest.approx(0.7)  # a bin of one row counts


def test_ece_bootstrap_equals_a_bootstrap_by_hand():
    """The interval of a bootstrap written out: each class's videos drawn ``n`` of ``n`` with
    :func:`stratified_multiplicities`, the ECE by the loop on the rows repeated by their
    video's multiplicity, the basic interval clipped at 0; seeded, 1000 replicates and 15 bins
    by default; the quantile bins of the data."""
    rng = np.random.default_rng(3)
    video = np.repeat(np.arange(16), 3)
    y = (video % 2).astype(int)
    s = expit(2.5 * (2 * y - 1) + rng.normal(0, 1.5, len(y)))
    names = np.array([f"v{v:02d}" for v in video])
    point, low, high = ece_bootstrap(y, s, names, n_boot=200, seed=5, confidence=0.9)
    reps = [
        ece_by_loop(np.repeat(y, w[video]), np.repeat(s, w[video]))
        for block in stratified_multiplicities(
            np.random.default_rng(5), np.arange(16) % 2, 200, minus_one=False
        )
        for w in block
    ]
    q_lo, q_hi = np.quantile(reps, [0.05, 0.95])
    assert point == pytest.approx(ece_by_loop(y, s), abs=1e-12)
    assert (low, high) == pytest.approx((max(0, 2 * point - q_hi), 2 * point - q_lo), abs=1e-12)
    assert 0 <= low < high < 1
    default = ece_bootstrap(y, s, names)
    assert default == ece_bootstrap(y, s, names, n_bins=15, n_boot=1000, seed=0)
    assert default != ece_bootstrap(y, s, names, n_boot=1001)
    assert default != ece_bootstrap(y, s, names, seed=1)
    quantile = ece_bootstrap(y, s, names, strategy="quantile", n_boot=50)
    assert quantile[0] == pytest.approx(ece(y, s, strategy="quantile"), abs=1e-12)


def test_bins_edges_and_extreme_scores_by_hand():
    y, s = [0, 0, 1, 0], [0.1, 0.2, 0.8, 0.9]
    # two empty middle bins of four: the MCE is that of the filled ones
    assert mce(y, s, n_bins=4) == pytest.approx(0.35)
    assert mce([1], [0.3], n_bins=2) == pytest.approx(0.7)  # a bin of one row counts
    rng = np.random.default_rng(1)
    yq, sq = rng.integers(0, 2, 40), rng.random(40)
    quantile = reliability_bins(yq, sq, n_bins=4, strategy="quantile")
    assert mce(yq, sq, n_bins=4, strategy="quantile") == pytest.approx(np.max(quantile.gaps))
    assert mce(yq, sq, n_bins=4, strategy="quantile") != pytest.approx(mce(yq, sq, n_bins=4))
    edges = bin_edges(sq, 4, "quantile")
    assert (edges[0], edges[-1]) == (0.0, 1.0) and np.all(np.diff(edges) > 0)
    # bins [e_k, e_k+1): a score on an edge goes up; a score of 1 in the last bin
    assert bin_of(np.array([0.0, 0.5, 0.99, 1.0]), bin_edges(sq, 2, "uniform")).tolist() == [
        0,
        1,
        1,
        1,
    ]
    np.testing.assert_array_equal(reliability_bins([1], [1.0], n_bins=2).counts, [0, 1])
    assert len(reliability_bins(yq, sq).counts) == 15  # 15 bins by default
    assert ece(y, s, n_bins=1) == pytest.approx(abs(0.25 - 0.5))  # one bin is allowed
    with pytest.raises(ValueError, match="^n_bins must be at least 1, got 0$"):
        ece(y, s, n_bins=0)
    with pytest.raises(ValueError, match="expected one of uniform, quantile$"):
        ece(y, s, strategy="kmeans")
    # a wrong score of exactly 0 or 1 costs -log(1e-7), not an infinite or other NLL
    assert nll([1], [0.0]) == pytest.approx(-np.log(1e-7))
    assert nll([0], [1.0]) == pytest.approx(-np.log(1e-7))
    with warnings.catch_warnings():  # an empty bin is NaN without a warning
        warnings.simplefilter("error")
        assert np.isnan(reliability_bins(y, s, n_bins=4).mean_score[1])


def test_ece_equals_a_loop_and_torchmetrics():
    rng = np.random.default_rng(0)
    s = rng.random(500)
    y = (rng.random(500) < s**2).astype(int)
    assert ece(y, s) == pytest.approx(ece_by_loop(y, s), abs=1e-12)
    torch = pytest.importorskip("torch")
    tm = pytest.importorskip("torchmetrics.functional.classification")
    ref = tm.binary_calibration_error(torch.tensor(s), torch.tensor(y), n_bins=15, norm="l1")
    assert ece(y, s) == pytest.approx(float(ref), abs=1e-6)
    ref_max = tm.binary_calibration_error(torch.tensor(s), torch.tensor(y), n_bins=15, norm="max")
    assert mce(y, s) == pytest.approx(float(ref_max), abs=1e-6)


def test_equal_mass_bins_hold_equal_counts():
    s = np.linspace(0.01, 0.99, 150)
    y = np.arange(150) % 2
    bins = reliability_bins(y, s, n_bins=15, strategy="quantile")
    assert set(bins.counts.astype(int)) == {10}
    with pytest.raises(ValueError, match="strategy"):
        ece(y, s, strategy="equal")


def over_confident(rng, n_videos, frames, k, tau=0.0):
    """Videos of known calibrated log-odds ``l`` (half real, half fake: the population's mix),
    frames scored ``sigmoid(k (l + e))``: a detector whose logit is k times the log-odds."""
    lo = rng.normal(0, 2.0, 8 * n_videos)
    y = (rng.random(8 * n_videos) < expit(lo)).astype(int)
    keep = np.r_[np.flatnonzero(y == 0)[: n_videos // 2], np.flatnonzero(y == 1)[: n_videos // 2]]
    lo, y = lo[keep], y[keep]
    e = rng.normal(0, tau, (len(lo), frames))
    scores = expit(k * (lo[:, None] + e)).ravel()
    return (
        np.repeat(y, frames),
        scores,
        np.repeat(np.arange(len(lo)), frames),
        np.repeat(lo, frames),
    )


def population_ece(k, tau, n=2_000_000, seed=99):
    """The detector's ECE on the population (15 equal bins), by Monte Carlo of the log-odds."""
    rng = np.random.default_rng(seed)
    lo, e = rng.normal(0, 2.0, n), rng.normal(0, tau, n)
    s, p = expit(k * (lo + e)), expit(lo)
    b = np.clip((s * 15).astype(int), 0, 14)
    return float(np.abs(np.bincount(b, weights=p - s, minlength=15)).sum() / n)


def test_temperature_scaling_repairs_an_over_confident_detector():
    rng = np.random.default_rng(1)
    y, s, videos, lo = over_confident(rng, 400, 4, k=3.0)
    yt, st, _, lot = over_confident(rng, 400, 4, k=3.0)
    cal = fit_calibration(y, s, "temperature", clusters=videos)
    assert cal.params["temperature_low"] < 3.0 < cal.params["temperature_high"]
    after = cal.apply(st)
    floor = ece(yt, expit(lot))  # the true probabilities' ECE on this test set: the floor
    assert ece(yt, st) > 2.5 * floor
    assert ece(yt, after) < 1.25 * floor
    assert roc_auc_score(yt, after) == roc_auc_score(yt, st)
    platt = fit_calibration(y, s, "platt")
    assert platt.params["a"] == pytest.approx(1 / 3.0, rel=0.15)
    assert roc_auc_score(yt, platt.apply(st)) == roc_auc_score(yt, st)


def test_temperature_interval_covers_the_truth():
    """Seeded: 300 sets of 50 videos (8 identical frames each, so frames are not samples); the
    truth is T = k exactly. 95 % nominal; binomial 99.9 % bounds for 300 sets: [0.90, 0.985]."""
    rng = np.random.default_rng(2)
    hits = 0
    for _ in range(300):
        y, s, videos, _ = over_confident(rng, 50, 8, k=2.0)
        p = fit_calibration(y, s, "temperature", clusters=videos).params
        hits += p["temperature_low"] <= 2.0 <= p["temperature_high"]
    assert 0.90 <= hits / 300 <= 0.985


@pytest.mark.parametrize("n_videos, low", [(50, 0.83), (200, 0.87)])
def test_ece_interval_coverage(n_videos, low):
    """Seeded: 200 sets, frames correlated within a video (tau = 0.5), truth by Monte Carlo.
    Measured over 400 sets (scripts/bench_calibration.py): 0.90 at 50 videos and at 200 (below the nominal 0.95: the |.| of
    each bin makes the bootstrap biased where a bin's true gap is near 0; docs/evaluation.md).
    A bootstrap that resamples frames instead of videos fails these bounds."""
    truth = population_ece(2.0, 0.5)
    rng = np.random.default_rng(5)
    hits = 0
    for i in range(200):
        y, s, videos, _ = over_confident(rng, n_videos, 8, k=2.0, tau=0.5)
        _, lo, hi = ece_bootstrap(y, s, videos, n_boot=200, seed=i)
        hits += lo <= truth <= hi
    assert low <= hits / 200 <= 0.99


def test_isotonic_states_its_ties_and_summary_withholds_small_intervals():
    rng = np.random.default_rng(3)
    y, s, videos, _ = over_confident(rng, 60, 2, k=2.0)
    iso = fit_calibration(y, s, "isotonic")
    assert "distinct values" in iso.note and iso.params["distinct_values"] < len(np.unique(s))
    assert np.all(np.diff(iso.apply(np.sort(s))) >= 0)
    few = calibration_summary(y[:8], s[:8], videos[:8])
    assert few["ece_low"] is None and "fewer than 5" in few["note"]
    enough = calibration_summary(y, s, videos, n_boot=200)
    assert enough["ece_low"] <= enough["ece"] <= enough["ece_high"]


def test_refusals(tmp_path):
    with pytest.raises(CalibrationError, match="only fakes"):
        fit_calibration([1, 1, 1], [0.2, 0.5, 0.9], "temperature")
    with pytest.raises(CalibrationError, match="unknown calibration method 'beta'"):
        fit_calibration([0, 1], [0.2, 0.9], "beta")
    for scores in ([0.1, 0.4, 0.6, 0.9], [0.5, 0.4, 0.5, 0.9], [0.5] * 4):  # no finite MLE
        with pytest.raises(CalibrationError, match="separate reals from fakes at 0.5"):
            fit_calibration([0, 0, 1, 1], scores, "temperature")
    cal = fit_calibration([0, 0, 1, 1, 0, 1], [0.1, 0.6, 0.4, 0.9, 0.3, 0.8], "temperature")
    assert np.isfinite([cal.params["temperature_low"], cal.params["temperature"]]).all()
    cal.producer = {"detector": "xception", "weights_sha256": "aa"}
    cal.check_producer({"detector": "xception", "weights_sha256": "aa"}, "x.csv")
    with pytest.raises(CalibrationError, match="fitted for weights_sha256 'aa'"):
        cal.check_producer({"detector": "xception", "weights_sha256": "bb"}, "x.csv")
    path = tmp_path / "cal.json"
    write_calibration(path, cal)
    assert read_calibration(path).apply([0.3]) == pytest.approx(cal.apply([0.3]))
    path.write_text(json.dumps({"format": "fairforensics-calibration/1", "method": "beta"}))
    with pytest.raises(CalibrationError, match="unknown calibration method"):
        read_calibration(path)
    with pytest.raises(CalibrationError, match="not found"):
        read_calibration(tmp_path / "none.json")


def test_calibrate_command(tmp_path):
    rng = np.random.default_rng(4)
    y, s, videos, _ = over_confident(rng, 40, 3, k=3.0)
    n = len(y)
    preds = Predictions(
        dataset=np.full(n, "val"), video_id=videos.astype(str), frame=np.tile(np.arange(3), 40),
        label=y, score=s, method=np.where(y == 1, "fake", "real"),
    )  # fmt: skip
    csv = tmp_path / "val.csv"
    write_predictions(csv, preds)
    (tmp_path / "val.provenance.json").write_text(json.dumps({"detector": "meso4"}))
    out = tmp_path / "cal.json"
    cmd = [sys.executable, "-m", "fairforensics.cli.calibrate", "--predictions", str(csv)]
    done = subprocess.run([*cmd, "--method", "temperature", "--out", str(out)],
                          capture_output=True, text=True)  # fmt: skip
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["validation_after"]["ece"] < report["validation_before"]["ece"]
    cal = read_calibration(out)
    assert cal.producer == {"detector": "meso4"} and cal.fitted_on["videos"] == 40
    bad = subprocess.run(
        [*cmd, "--method", "beta", "--out", str(out)], capture_output=True, text=True
    )
    assert bad.returncode == 2 and "invalid choice: 'beta'" in bad.stderr
    one = tmp_path / "fakes.csv"
    write_predictions(one, preds.subset(y == 1))
    refused = subprocess.run(
        [sys.executable, "-m", "fairforensics.cli.calibrate", "--predictions", str(one),
         "--method", "platt", "--out", str(out)], capture_output=True, text=True,
    )  # fmt: skip
    assert refused.returncode == 2
    assert refused.stderr.strip().splitlines()[-1].startswith("error: ")
    assert "only fakes" in refused.stderr


def test_an_evaluation_writes_calibration_and_threshold_transfer(tmp_path):
    from fairforensics.evaluation.results import evaluate_prediction_files
    from fairforensics.evaluation.settings import load_test_config

    rng = np.random.default_rng(6)
    y, s, videos, _ = over_confident(rng, 40, 3, k=3.0)
    n = len(y)
    preds = Predictions(
        dataset=np.full(n, "demo"), video_id=videos.astype(str), frame=np.tile(np.arange(3), 40),
        label=y, score=s, method=np.where(y == 1, "fake", "real"),
    )  # fmt: skip
    csv = tmp_path / "in.csv"
    write_predictions(csv, preds)
    cfg = load_test_config(overrides=["n_boot=200", "plots=true", "threshold=0.7"])
    evaluate_prediction_files({"demo": csv}, tmp_path / "eval", cfg, "meso4", "demo")
    tables = tmp_path / "eval" / "tables"
    rows = json.loads((tables / "calibration.json").read_text())["rows"]
    assert [r["level"] for r in rows] == ["frame", "video"]
    frame = rows[0]
    assert frame["ece"] == pytest.approx(ece(y, s))
    assert frame["ece_low"] <= frame["ece"] <= frame["ece_high"] and frame["n_bins"] == 15
    assert frame["brier"] == pytest.approx(brier(y, s)) and frame["nll"] == pytest.approx(nll(y, s))
    transfer = json.loads((tables / "threshold_transfer.json").read_text())["rows"][0]
    assert transfer["threshold"] == 0.7
    assert transfer["chosen_by"].startswith("given")
    assert transfer["fpr (given)"] == pytest.approx(np.mean(s[y == 0] >= 0.7))
    assert transfer["fnr (given)"] == pytest.approx(np.mean(s[y == 1] < 0.7))
    own = transfer["eer_threshold"]
    acc_own = np.mean((s >= own) == (y == 1))
    assert transfer["acc lost"] == pytest.approx(acc_own - np.mean((s >= 0.7) == (y == 1)))
    figures = tmp_path / "eval" / "figures"
    assert (figures / "demo_reliability.png").is_file()
    assert (figures / "demo_threshold_transfer.png").is_file()
    assert "Threshold transfer" in (tmp_path / "eval" / "report.html").read_text()


def test_a_runs_validation_record_carries_its_temperature(tmp_path):
    from fairforensics.evaluation.thresholds import (
        run_calibration,
        validation_record,
        write_run_thresholds,
    )

    rng = np.random.default_rng(8)
    y, s, videos, _ = over_confident(rng, 200, 2, k=2.5)
    n = len(y)
    preds = Predictions(
        dataset=np.full(n, "val"), video_id=videos.astype(str), frame=np.tile(np.arange(2), 200),
        label=y, score=s, method=np.where(y == 1, "fake", "real"),
    )  # fmt: skip
    record = validation_record([preds], "frame", step=10, epoch=1)
    direct = fit_calibration(y, s, "temperature", clusters=preds.video_key)
    assert record["calibration"]["params"] == direct.params
    assert record["calibration"]["params"]["temperature"] > 1.5  # over-confident: T > 1
    write_run_thresholds(tmp_path, "frame", ["val"], {"best": record, "last": None})
    assert run_calibration(tmp_path, "best") == record["calibration"]
    assert run_calibration(tmp_path, "last") is None
    inverted = Predictions(
        dataset=preds.dataset, video_id=preds.video_id, frame=preds.frame, label=preds.label,
        score=1 - preds.score, method=preds.method,
    )  # fmt: skip
    assert "calibration" not in validation_record([inverted], "frame", step=10, epoch=1)


def _ece_bootstrap_before(y, s, clusters, n_bins=15, n_boot=1000, confidence=0.95, seed=0):
    """The ECE interval as computed before its draws were shared (issue 47): one set, its own
    generator."""
    from fairforensics.evaluation.calibration.metrics import (
        basic_interval,
        bin_edges,
        bin_of,
        video_bin_sums,
    )
    from fairforensics.evaluation.confidence import stratified_multiplicities

    y, s = np.asarray(y), np.asarray(s, dtype=float)
    _, videos = np.unique(np.asarray(clusters), return_inverse=True)
    diff, rows = video_bin_sums(y, s, videos, bin_of(s, bin_edges(s, n_bins, "uniform")), n_bins)
    point = float(np.abs(diff.sum(0)).sum() / rows.sum())
    video_label = np.zeros(len(diff), dtype=np.int64)
    video_label[videos] = y
    rng = np.random.default_rng(seed)
    replicates = [
        np.abs(counts @ diff).sum(1) / (counts @ rows).sum(1)
        for counts in stratified_multiplicities(rng, video_label, n_boot, minus_one=False)
    ]
    low, high = basic_interval(point, np.concatenate(replicates), confidence)
    return point, max(0.0, low), max(0.0, high)


@pytest.mark.parametrize("seed", [0, 7])
def test_frame_and_video_ece_intervals_share_their_draws_and_numbers(seed, monkeypatch):
    """``calibration_rows`` draws the video weights once for both levels (the same videos with
    the same labels), and every interval is that of a bootstrap of its own, bit for bit."""
    from fairforensics.evaluation import confidence
    from fairforensics.evaluation.calibration import metrics
    from fairforensics.evaluation.calibration.run import LEVELS, calibration_rows, level_codes

    rng = np.random.default_rng(seed)
    y, s, videos, _ = over_confident(rng, 80, 6, k=2.0, tau=0.7)
    pred = Predictions(
        dataset=np.full(len(y), "syn"), video_id=np.char.add("v", videos.astype(str)),
        frame=np.tile(np.arange(6), 80), label=y, score=s, method=np.where(y == 1, "FS", "real"),
    )  # fmt: skip
    calls = []
    draws = confidence.stratified_multiplicities
    monkeypatch.setattr(
        metrics, "stratified_multiplicities", lambda *a, **k: calls.append(1) or draws(*a, **k)
    )
    rows = calibration_rows(pred, "syn", n_boot=300, seed=seed)
    assert len(calls) == 1, "the frame and video levels drew their weights apart"
    for row, level in zip(rows, LEVELS, strict=True):
        want = _ece_bootstrap_before(*level_codes(pred, level), n_boot=300, seed=seed)
        assert (row["ece"], row["ece_low"], row["ece_high"]) == want, level
    # sets whose videos' labels differ draw apart, each as alone
    other = (y[::-1], s, videos)
    got = metrics.ece_bootstraps([(y, s, videos), other], n_boot=300, seed=seed)
    assert got == [
        _ece_bootstrap_before(*t, n_boot=300, seed=seed) for t in ((y, s, videos), other)
    ]
    assert len(calls) == 3
    by_default = metrics.ece_bootstraps([(y, s, videos)])  # 1,000 replicates, seed 0
    assert by_default == [_ece_bootstrap_before(y, s, videos, n_boot=1000, seed=0)]


def test_calibration_summaries_every_field():
    """Every field of a summary against its own computation: enough videos (an interval, equal
    to a bootstrap of its own), too few of one class or of both (the notes, real first; no
    interval), ``n_boot = 0``; the bins and their strategy reach the ECE and the MCE; the
    defaults are 15 uniform bins, 1,000 replicates, seed 0."""
    from fairforensics.evaluation.calibration.metrics import calibration_summaries, mce

    rng = np.random.default_rng(5)
    videos = np.repeat(np.arange(12), 3)
    y = (videos % 2).astype(int)
    s = np.clip(expit(3.0 * (y - 0.5) + rng.normal(0, 1.2, len(y))), 0.02, 0.98)
    few = (y[:12], s[:12], videos[:12])  # 2 real and 2 fake videos
    fakes_few = (
        np.r_[y[y == 0], 1, 1, 1],
        np.r_[s[y == 0], 0.9, 0.8, 0.7],
        np.r_[videos[y == 0], 50, 50, 51],
    )
    enough, none, one_class_few = calibration_summaries(
        [(y, s, videos), few, fakes_few], n_bins=4, n_boot=200, confidence=0.9, seed=3
    )
    (no_boot,) = calibration_summaries([(y, s, videos)], n_bins=4, n_boot=0)
    for got, (yy, ss, _) in ((enough, (y, s, videos)), (none, few), (one_class_few, fakes_few)):
        assert got["mce"] == mce(yy, ss, n_bins=4)
        assert got["brier"] == pytest.approx(np.mean((ss - yy) ** 2), abs=1e-15)
        want_nll = -np.mean(yy * np.log(ss) + (1 - yy) * np.log(1 - ss))
        assert got["nll"] == pytest.approx(want_nll, rel=1e-12)
        assert (got["n_bins"], got["strategy"], got["min_videos"]) == (4, "uniform", 5)
    assert (enough["ece"], enough["ece_low"], enough["ece_high"]) == _ece_bootstrap_before(
        y, s, videos, n_bins=4, n_boot=200, confidence=0.9, seed=3
    )
    assert (enough["n_real_videos"], enough["n_fake_videos"]) == (6, 6)
    assert enough["note"] == "interval: 90% basic bootstrap over videos (200)"
    assert (none["n_real_videos"], none["n_fake_videos"]) == (2, 2)
    assert none["note"] == "fewer than 5 real videos (2); fewer than 5 fake videos (2)"
    assert none["ece"] == ece(*few[:2], n_bins=4) and none["ece_low"] is none["ece_high"] is None
    assert (one_class_few["n_real_videos"], one_class_few["n_fake_videos"]) == (6, 2)
    assert one_class_few["note"] == "fewer than 5 fake videos (2)"
    assert one_class_few["ece_low"] is None
    assert no_boot["note"] == "no interval (n_boot = 0)" and no_boot["ece_low"] is None
    assert no_boot["ece"] == ece(y, s, n_bins=4) == pytest.approx(enough["ece"], rel=1e-12)
    (one_boot,) = calibration_summaries([(y, s, videos)], n_boot=1)  # one replicate: an interval
    assert one_boot["note"].endswith("(1)") and one_boot["ece_low"] == one_boot["ece_high"]
    noise = np.random.default_rng(0).random(len(y))  # unrelated to the labels: bins mix them
    uniform, quantile = (
        calibration_summaries([(y, noise, videos)], n_bins=4, strategy=k, n_boot=50)[0]
        for k in ("uniform", "quantile")
    )
    assert quantile["strategy"] == "quantile" and quantile["ece_low"] is not None
    assert quantile["ece"] == pytest.approx(ece(y, noise, n_bins=4, strategy="quantile"), rel=1e-12)
    assert quantile["ece"] != pytest.approx(uniform["ece"], rel=1e-6)
    (unbooted,) = calibration_summaries(
        [(y, noise, videos)], n_bins=4, strategy="quantile", n_boot=0
    )
    assert unbooted["ece"] == ece(y, noise, n_bins=4, strategy="quantile")
    assert quantile["mce"] == mce(y, noise, n_bins=4, strategy="quantile") != uniform["mce"]
    (default,) = calibration_summaries([(y, s, videos)])
    assert (
        default
        == calibration_summaries(
            [(y, s, videos)], n_bins=15, strategy="uniform", n_boot=1000, confidence=0.95, seed=0
        )[0]
    )
    assert (default["ece"], default["ece_low"], default["ece_high"]) == _ece_bootstrap_before(
        y, s, videos
    )
