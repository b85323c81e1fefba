"""Extended metrics (issue 8): threshold metrics, TPR@FPR, one-sort summary, video grouping,
bootstrap intervals over videos and DeLong's test, against scikit-learn and hand-computed cases."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn import metrics as skm

from fairforensics.evaluation import metrics as M
from fairforensics.evaluation.confidence import bootstrap_ci, delong_test, delong_variance
from fairforensics.evaluation.predictions import Predictions
from fairforensics.evaluation.scoring import (
    detection_metrics,
    evaluate_levels,
    evaluate_predictions,
    video_codes,
)


def _random_case(rng: np.random.Generator, n: int, ties: bool) -> tuple[np.ndarray, np.ndarray]:
    y = rng.integers(0, 2, n)
    y[:2] = [0, 1]
    s = rng.integers(0, 6, n) / 5.0 if ties else np.clip(rng.normal(0.4 + 0.2 * y, 0.25), 0, 1)
    return y, s


@pytest.mark.parametrize("ties", [False, True])
def test_summarize_equals_sklearn_and_core_metrics(ties: bool) -> None:
    rng = np.random.default_rng(3)
    for _ in range(40):
        y, s = _random_case(rng, int(rng.integers(4, 80)), ties)
        r = M.summarize(y, s, threshold=0.5)
        assert r["auc"] == pytest.approx(M.auc(y, s))
        assert r["ap"] == pytest.approx(M.ap(y, s))
        assert (r["eer"], r["eer_threshold"]) == pytest.approx(M.eer(y, s))
        assert r["acc"] == pytest.approx(M.acc(y, s))
        pred = (s >= 0.5).astype(int)
        assert r["precision"] == pytest.approx(
            skm.precision_score(y, pred, zero_division=np.nan), nan_ok=True
        )
        assert r["recall"] == pytest.approx(skm.recall_score(y, pred))
        assert r["f1"] == pytest.approx(skm.f1_score(y, pred, zero_division=np.nan), nan_ok=True)


def test_weights_equal_repeating_samples() -> None:
    rng = np.random.default_rng(5)
    for _ in range(30):
        y, s = _random_case(rng, 30, ties=True)
        w = rng.integers(0, 4, 30)
        w[:2] = 1
        rep = np.repeat(np.arange(30), w)
        a, b = M.summarize(y, s, sample_weight=w), M.summarize(y[rep], s[rep])
        assert a == pytest.approx(b)
        assert a["auc"] == pytest.approx(skm.roc_auc_score(y, s, sample_weight=w))


def test_confusion_precision_recall_f1_hand_computed() -> None:
    y = [0, 0, 0, 1, 1, 1, 1]
    s = [0.1, 0.6, 0.4, 0.7, 0.5, 0.2, 0.9]
    # predicted fake (>= 0.5): 0.6 (FP), 0.7, 0.5, 0.9 (TP); 0.2 is a FN; 0.1, 0.4 TN
    np.testing.assert_array_equal(M.confusion_matrix(y, s), [[2, 1], [1, 3]])
    np.testing.assert_array_equal(
        M.confusion_matrix(y, s), skm.confusion_matrix(y, np.array(s) >= 0.5)
    )
    assert M.precision(y, s) == pytest.approx(3 / 4)
    assert M.recall(y, s) == pytest.approx(3 / 4)
    assert M.f1(y, s) == pytest.approx(6 / 8)
    assert M.precision(y, s, threshold=0.65) == pytest.approx(1.0)  # 0.7, 0.9
    assert M.recall(y, s, threshold=0.65) == pytest.approx(2 / 4)


def test_undefined_threshold_metrics_are_nan_with_warning() -> None:
    with pytest.warns(M.MetricWarning, match="precision"):
        assert np.isnan(M.precision([0, 1], [0.1, 0.2]))
    with pytest.warns(M.MetricWarning, match="recall"):
        assert np.isnan(M.recall([0, 0], [0.1, 0.7]))
    with pytest.warns(M.MetricWarning, match="F1"):
        assert np.isnan(M.f1([0, 0], [0.1, 0.2]))


def test_tpr_at_fpr_hand_computed() -> None:
    y = [0, 0, 0, 0, 1, 1, 1, 1]
    s = [0.1, 0.2, 0.3, 0.9, 0.4, 0.8, 0.95, 0.85]
    assert M.tpr_at_fpr(y, s, 0.0) == 0.25  # only 0.95 above the highest real score
    assert M.tpr_at_fpr(y, s, 0.1) == 0.25
    assert M.tpr_at_fpr(y, s, 0.25) == 1.0  # threshold 0.4 lets one real (0.9) through
    assert M.tpr_at_fpr(y, s, 1.0) == 1.0
    r = M.summarize(y, s, fpr_targets=(0.0, 0.25))
    assert (r["tpr@fpr=0"], r["tpr@fpr=0.25"]) == (0.25, 1.0)


def test_tpr_at_fpr_matches_sklearn_roc() -> None:
    rng = np.random.default_rng(0)
    y, s = _random_case(rng, 300, ties=False)
    fpr, tpr, _ = skm.roc_curve(y, s, drop_intermediate=False)
    for target in (0.01, 0.05, 0.1, 0.3):
        assert M.tpr_at_fpr(y, s, target) == pytest.approx(tpr[fpr <= target].max())


def test_single_class() -> None:
    with pytest.raises(M.SingleClassError):
        M.tpr_at_fpr([1, 1], [0.2, 0.3])
    with pytest.warns(M.MetricWarning, match="both classes"):
        r = M.summarize([1, 1, 1], [0.2, 0.6, 0.9])
    assert np.isnan(r["auc"]) and np.isnan(r["eer"]) and np.isnan(r["tpr@fpr=0.01"])
    assert r["acc"] == pytest.approx(2 / 3) and r["recall"] == pytest.approx(2 / 3)
    with pytest.raises(M.SingleClassError):
        delong_test([1, 1, 0], [0.1, 0.2, 0.3], [0.3, 0.2, 0.1])


@pytest.mark.parametrize(
    "call",
    [
        lambda: M.confusion_matrix([0, 1], [0.1]),
        lambda: M.summarize([0, 2], [0.1, 0.2]),
        lambda: M.summarize([0, 1], [0.1, np.nan]),
        lambda: M.summarize([0, 1], [0.1, 0.2], sample_weight=[1, -1]),
        lambda: M.tpr_at_fpr([0, 1], [0.1, 0.2], fpr=1.5),
        lambda: M.choose_threshold([0, 1], [0.1, 0.2], rule="median"),
        lambda: M.group_videos([0, 1], [0.1, 0.2], ["a"]),
        lambda: bootstrap_ci([0, 1], [0.1, 0.2], ["a", "b"], level="clip"),
        lambda: bootstrap_ci([0, 1], [0.1, 0.2], ["a", "b"], n_boot=0),
        lambda: bootstrap_ci([0, 1], [0.1, 0.2], ["a", "b"], confidence=1.0),
        lambda: bootstrap_ci([0, 1], [0.1, 0.2], ["a"]),
    ],
)
def test_bad_input_is_a_clear_error(call) -> None:
    with pytest.raises(ValueError):
        call()


def test_choose_threshold() -> None:
    y = [0, 0, 1, 1]
    s = [0.1, 0.6, 0.4, 0.9]
    assert M.choose_threshold(y, s, "eer") == M.eer(y, s)[1]
    # Youden J = TPR - FPR: 0.9 -> .5 - 0; 0.6 -> .5 - .5; 0.4 -> 1 - .5; the first maximum is 0.9
    assert M.choose_threshold(y, s, "youden") == 0.9
    assert M.choose_threshold([0, 0, 1, 1], [0.1, 0.2, 0.7, 0.8], "youden") == 0.7


def test_video_grouping_keeps_repeated_fake_names_apart() -> None:
    # FF++ names a fake after target and source: 000_003 exists for every method
    pred = Predictions(
        dataset=["FF"] * 6,
        video_id=["000_003", "000_003", "000_003", "000_003", "000", "000"],
        frame=[0, 1, 0, 1, 0, 1],
        label=[1, 1, 1, 1, 0, 0],
        score=[0.9, 0.7, 0.2, 0.4, 0.1, 0.3],
        method=["Deepfakes", "Deepfakes", "Face2Face", "Face2Face", "real", "real"],
    )
    codes, keys = video_codes(pred)
    assert list(keys) == ["FF/Deepfakes/000_003", "FF/Face2Face/000_003", "FF/real/000"]
    np.testing.assert_array_equal(codes, [0, 0, 1, 1, 2, 2])
    labels, scores, ids, _ = M.group_videos(pred.label, pred.score, pred.video_key)
    np.testing.assert_allclose(scores, [0.8, 0.3, 0.2])
    np.testing.assert_array_equal(labels, [1, 1, 0])
    res = evaluate_predictions(pred, level="video")
    assert res["n_videos"] == 3 and res["n_fake"] == 2 and res["n_real"] == 1
    assert res["metrics"]["auc"] == 1.0  # both fake videos (0.8, 0.3) above the real one (0.2)
    # grouping by name only would merge the fakes into one video with score 0.55
    assert evaluate_predictions(pred, level="frame")["metrics"]["auc"] == pytest.approx(
        M.auc(pred.label, pred.score)
    )


def test_group_videos_equals_video_scores() -> None:
    rng = np.random.default_rng(2)
    ids = rng.integers(0, 40, 500)
    y = (ids % 2).astype(int)
    s = rng.random(500)
    keys = np.array([f"v{i}" for i in ids], dtype=object)
    for reduce in ("mean", "median", "max"):
        a = M.video_scores(y, s, keys, reduce)
        b = M.group_videos(y, s, keys, reduce)
        for u, v in zip(a, b[:3], strict=True):
            np.testing.assert_array_equal(u, v)
        np.testing.assert_array_equal(b[2][b[3]], keys)


def _frames(n_videos: int, frames: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    yv = np.arange(n_videos) % 2
    vid = np.repeat(np.arange(n_videos), frames)
    y = yv[vid]
    s = np.clip(rng.normal(0.4 + 0.2 * y + rng.normal(0, 0.1, n_videos)[vid], 0.15), 0, 1)
    return y, s, np.array([f"v{i:04d}" for i in vid], dtype=object)


def test_bootstrap_contains_point_and_shrinks_with_more_videos() -> None:
    widths = []
    for n_videos in (20, 400):
        y, s, vid = _frames(n_videos, 4, seed=1)
        ci = bootstrap_ci(y, s, vid, n_boot=200, seed=0)
        for name in ("auc", "ap", "eer", "acc"):
            iv = ci[name]
            assert iv.low <= iv.value <= iv.high, (name, iv)
        assert ci["auc"].value == pytest.approx(M.auc(y, s))
        widths.append(ci["auc"].high - ci["auc"].low)
    assert widths[1] < widths[0] / 2


def test_bootstrap_resamples_videos_exactly_and_is_seeded() -> None:
    y, s, vid = _frames(30, 3, seed=4)
    one = bootstrap_ci(y, s, vid, n_boot=1, seed=7)
    # the single replicate, rebuilt by concatenating the drawn videos' frames
    codes, uniq = M.factorize(vid)
    draw = np.random.default_rng(7).integers(0, len(uniq), len(uniq))
    rows = np.concatenate([np.flatnonzero(codes == v) for v in draw])
    expected = M.summarize(y[rows], s[rows])
    for name in ("auc", "ap", "eer", "f1"):  # acc, precision, recall: Wilson intervals
        assert one[name].low == pytest.approx(expected[name])
        assert one[name].high == pytest.approx(expected[name])
    assert bootstrap_ci(y, s, vid, n_boot=50, seed=3) == bootstrap_ci(y, s, vid, n_boot=50, seed=3)


def test_bootstrap_video_level() -> None:
    y, s, vid = _frames(60, 5, seed=2)
    ci = bootstrap_ci(y, s, vid, level="video", n_boot=100)
    yv, sv, _ = M.video_scores(y, s, vid)
    assert ci["auc"].value == pytest.approx(M.auc(yv, sv))
    assert ci["auc"].low <= ci["auc"].value <= ci["auc"].high


def test_bootstrap_single_class_replicates_are_skipped() -> None:
    y, s, vid = (
        np.array([0, 1, 1]),
        np.array([0.2, 0.7, 0.8]),
        np.array(["a", "b", "c"], dtype=object),
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no MetricWarning leaks out
        ci = bootstrap_ci(y, s, vid, n_boot=100, seed=0, min_units=1)
    auc = ci["auc"]
    assert auc.low <= auc.high and np.isfinite(auc.low)
    assert (
        0 < auc.n_undefined < 50
        and auc.note == f"{auc.n_undefined} of 100 bootstrap replicates undefined, left out"
    )


def test_bootstrap_interval_undefined_when_too_small_or_mostly_undefined() -> None:
    """The issue's case: 1 real and 1 fake video gave AUC 0 [0, 0] after 477 of 1000 replicates
    drew one class. Now too few videos of a class make the interval undefined, saying why, and
    so do mostly undefined replicates."""
    y, s, vid = np.array([0, 0, 1, 1]), np.array([0.6, 0.7, 0.2, 0.3]), np.array([0, 0, 1, 1])
    ci = bootstrap_ci(y, s, vid, level="video", n_boot=1000, seed=0)
    assert ci["auc"].value == 0.0 and np.isnan(ci["auc"].low) and np.isnan(ci["auc"].high)
    assert ci["auc"].note == "fewer than 5 real videos (1); fewer than 5 fake videos (1)"
    assert ci["acc"].note == "fewer than 5 videos (2)"
    loose = bootstrap_ci(y, s, vid, level="video", n_boot=1000, seed=0, min_units=1)
    assert 430 < loose["auc"].n_undefined < 570  # half the replicates draw one class
    # more than half of the replicates undefined: no interval
    from fairforensics.evaluation.confidence import bootstrap_interval

    reps = np.r_[np.full(6, np.nan), np.linspace(0.6, 0.9, 4)]
    assert bootstrap_interval(reps)[2] == "6 of 10 replicates undefined"
    assert np.isnan(bootstrap_interval(reps)[0])
    low, high, note = bootstrap_interval(reps[3:])
    assert 0.6 <= low < high <= 0.9 and note == "3 of 7 replicates undefined, left out"


def _delong_reference(y: np.ndarray, a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    """DeLong et al. 1988 from the definition: kernel psi, O(m n) placement values."""
    comps = []
    for s in (a, b):
        x, z = s[y == 1], s[y == 0]
        psi = (x[:, None] > z[None, :]) + 0.5 * (x[:, None] == z[None, :])
        comps.append((psi.mean(), psi.mean(1), psi.mean(0)))
    m, n = (y == 1).sum(), (y == 0).sum()
    s10 = np.cov(np.vstack([comps[0][1], comps[1][1]]))
    s01 = np.cov(np.vstack([comps[0][2], comps[1][2]]))
    cov = s10 / m + s01 / n
    var = cov[0, 0] + cov[1, 1] - 2 * cov[0, 1]
    return comps[0][0] - comps[1][0], (comps[0][0] - comps[1][0]) / np.sqrt(var)


def test_delong_matches_definition_and_sklearn() -> None:
    rng = np.random.default_rng(11)
    y = rng.integers(0, 2, 120)
    a = np.round(np.clip(rng.normal(0.4 + 0.3 * y, 0.2), 0, 1), 1)  # with ties
    b = np.clip(a + rng.normal(0, 0.2, 120), 0, 1)
    res = delong_test(y, a, b)
    diff, z = _delong_reference(y, a, b)
    assert res.auc_a == pytest.approx(skm.roc_auc_score(y, a))
    assert res.auc_b == pytest.approx(skm.roc_auc_score(y, b))
    assert res.diff == pytest.approx(diff) and res.z == pytest.approx(z)
    assert 0 < res.p_value < 1
    swapped = delong_test(y, b, a)
    assert swapped.z == pytest.approx(-res.z) and swapped.p_value == pytest.approx(res.p_value)
    auc_a, var_a = delong_variance(y, a)
    assert auc_a == pytest.approx(res.auc_a) and var_a > 0


def test_delong_identical_and_clearly_different() -> None:
    rng = np.random.default_rng(1)
    y = np.r_[np.zeros(200, int), np.ones(200, int)]
    good = y + rng.normal(0, 0.3, 400)
    noise = rng.normal(0, 1, 400)
    same = delong_test(y, good, good)
    assert same.z == 0 and same.p_value == 1.0
    assert delong_test(y, good, noise).p_value < 1e-6


def test_evaluate_levels_reports_both_levels_with_ci() -> None:
    y, s, vid = _frames(40, 3, seed=9)
    pred = Predictions(
        dataset=["D"] * len(y),
        video_id=vid,
        frame=np.zeros(len(y)),
        label=y,
        score=s,
        method=np.where(y, "F", "real"),
    )
    res = evaluate_levels(pred, n_boot=30)
    assert set(res) == {"frame", "video"}
    assert res["frame"]["n_real"] + res["frame"]["n_fake"] == len(y)
    assert res["video"]["n_real"] + res["video"]["n_fake"] == 40
    lo, hi = res["video"]["ci"]["auc"]
    assert lo <= res["video"]["metrics"]["auc"] <= hi
    with pytest.raises(ValueError, match="level"):
        evaluate_predictions(pred, level="clip")


def test_reduce_by_code_equals_video_scores_and_checks_input() -> None:
    rng = np.random.default_rng(8)
    codes = rng.integers(0, 25, 300)
    codes[:25] = np.arange(25)
    y = (codes % 3 == 0).astype(int)
    s = rng.random(300)
    for reduce in ("mean", "median", "max"):
        labels, scores = M.reduce_by_code(y, s, codes, reduce)
        ref = M.video_scores(y, s, codes, reduce)
        np.testing.assert_array_equal(labels, ref[0])
        np.testing.assert_allclose(scores, ref[1])
    with pytest.raises(ValueError, match="dense"):
        M.reduce_by_code(y[:2], s[:2], np.array([0, 2]))
    with pytest.raises(ValueError, match="different labels"):
        M.reduce_by_code(np.array([0, 1]), s[:2], np.array([0, 0]))


def test_compare_auc_aligns_two_predictions_files() -> None:
    from fairforensics.evaluation.scoring import compare_auc

    y, s, vid = _frames(40, 3, seed=12)
    frame = np.tile(np.arange(3), 40)
    rng = np.random.default_rng(0)
    method = np.where(y, "DF", "real")

    def pred(rows, score):
        return Predictions(
            dataset=["D"] * len(rows),
            video_id=vid[rows],
            frame=frame[rows],
            label=y[rows],
            score=score[rows],
            method=method[rows],
        )

    other = np.clip(s + rng.normal(0, 0.3, len(s)), 0, 1)
    perm = rng.permutation(len(y))
    a = pred(np.arange(len(y)), s)
    b = pred(perm[:-5], other)  # shuffled, 5 frames missing
    res = compare_auc(a, b)
    shared = np.sort(perm[:-5])  # reference: DeLong on the frames both files have
    ref = delong_test(y[shared], s[shared], other[shared])
    assert res.auc_a == pytest.approx(ref.auc_a) and res.auc_b == pytest.approx(ref.auc_b)
    assert res.z == pytest.approx(ref.z) and res.p_value == pytest.approx(ref.p_value)
    video = compare_auc(a, b, level="video")
    assert video.auc_a == pytest.approx(M.auc(*M.video_scores(y, s, vid)[:2]))
    bad = pred(np.arange(len(y)), s)
    bad.label = 1 - bad.label
    with pytest.raises(ValueError, match="disagree"):
        compare_auc(a, bad)


def _two_methods(labels: list[int]) -> Predictions:
    return Predictions(
        dataset=["FF"] * 6,
        video_id=["000_003", "000_003", "000_003", "000_003", "000", "000"],
        frame=[0, 1, 0, 1, 0, 1],
        label=labels,
        score=[0.9, 0.7, 0.2, 0.4, 0.1, 0.3],
        method=["Deepfakes", "Deepfakes", "Face2Face", "Face2Face", "real", "real"],
    )


def test_detection_metrics_equal_the_core_functions_at_both_levels() -> None:
    pred = _two_methods([1, 1, 1, 1, 0, 0])
    out = detection_metrics(pred)
    assert out["n_frames"] == 6 and out["n_videos"] == 3
    y, s = pred.label, pred.score
    assert out["frame/auc"] == pytest.approx(M.auc(y, s)) == pytest.approx(7 / 8)
    assert out["frame/ap"] == pytest.approx(M.ap(y, s))
    assert out["frame/eer"] == pytest.approx(M.eer(y, s)[0])
    assert out["frame/acc"] == pytest.approx(M.acc(y, s, threshold=0.5)) == pytest.approx(4 / 6)
    assert out["video/auc"] == 1.0 and out["video/acc"] == pytest.approx(2 / 3)
    assert detection_metrics(pred.subset(np.zeros(6, bool))) == {"n_frames": 0.0}


def test_detection_metrics_single_class_is_nan_and_logged(caplog) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the warning is logged, not re-emitted
        out = detection_metrics(_two_methods([1] * 6))
    for level in ("frame", "video"):
        assert all(np.isnan(out[f"{level}/{k}"]) for k in ("auc", "ap", "eer"))
    assert out["frame/acc"] == pytest.approx(2 / 6) and out["video/acc"] == pytest.approx(1 / 3)
    assert "need both classes" in caplog.text and "0 real, 6 fake" in caplog.text
    assert len(caplog.records) == 1


def test_bootstrap_ci_gives_proportions_wilson_intervals() -> None:
    """Issue 29, item 7: accuracy, precision and recall get Wilson intervals (never zero-width
    at 30 of 30); the other metrics keep the bootstrap; under 5 videos of a class, none."""
    from scipy import stats

    rng = np.random.default_rng(0)
    y = np.repeat([0, 1], 15)
    s = np.where(y == 1, rng.uniform(0.6, 1, 30), rng.uniform(0, 0.4, 30))  # all right
    ci = bootstrap_ci(y, s, np.arange(30), n_boot=200)
    z2 = stats.norm.ppf(0.975) ** 2
    assert (ci["acc"].low, ci["acc"].high) == pytest.approx((30 / (30 + z2), 1.0))
    assert ci["recall"].low == pytest.approx(15 / (15 + z2))
    s[:4] = 0.7  # 4 reals called fake: precision 15/19, accuracy 26/30
    ci = bootstrap_ci(y, s, np.arange(30), n_boot=200)
    for name, k, n in (("acc", 26, 30), ("precision", 15, 19), ("recall", 15, 15)):
        ref = stats.binomtest(k, n).proportion_ci(0.95, method="wilson")
        assert (ci[name].low, ci[name].high) == pytest.approx((ref.low, ref.high)), name
    assert ci["auc"].high <= 1 and ci["auc"].n_undefined == 0
    few = bootstrap_ci(y[11:], s[11:], np.arange(19), n_boot=50)  # 4 real videos
    assert (
        np.isnan(few["precision"].low) and few["precision"].note == "fewer than 5 real videos (4)"
    )
    assert np.isfinite(few["recall"].low) and np.isfinite(few["acc"].low)
