"""The leaderboard's significance (issue 38, item 1): clustered paired DeLong, Holm, ties."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from fairforensics.evaluation.confidence import (
    delong_test,
    stratified_multiplicities,
    weighted_ranking_metrics,
)
from fairforensics.evaluation.metrics import auc
from fairforensics.evaluation.predictions import Predictions
from fairforensics.evaluation.significance import (
    align,
    clustered_delong_test,
    compare_with_best,
    holm,
    seed_average,
    seed_rows,
)

# a hand case: 6 fakes and 6 reals, detector a ranks better than b
Y = np.array([1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0])
A = np.array([0.9, 0.8, 0.75, 0.7, 0.4, 0.65, 0.3, 0.2, 0.5, 0.1, 0.35, 0.6])
B = np.array([0.6, 0.5, 0.9, 0.3, 0.2, 0.55, 0.4, 0.7, 0.1, 0.35, 0.45, 0.25])


def test_one_item_per_cluster_is_delong_and_matches_a_paired_bootstrap() -> None:
    ours = clustered_delong_test(Y, A, B)
    ref = delong_test(Y, A, B)
    assert ours.diff == pytest.approx(auc(Y, A) - auc(Y, B))
    assert ours.se == pytest.approx(ref.se) and ours.z == pytest.approx(ref.z)
    # the reference is t with (6 - 1) + (6 - 1) degrees of freedom, not the normal one
    assert ours.df == 10 and ours.p_value == pytest.approx(2 * stats.t.sf(abs(ref.z), 10))
    assert ours.p_value > ref.p_value
    # independent: the bootstrap of the paired AUC difference on the same items (resampling
    # the items of each class, as DeLong's variance treats them)
    # (weighted ROC areas, not placement values)
    weights = np.vstack(list(stratified_multiplicities(np.random.default_rng(0), Y, 4000, False)))
    diffs = (
        weighted_ranking_metrics(Y, A, weights)["auc"]
        - weighted_ranking_metrics(Y, B, weights)["auc"]
    )
    boot_se = np.std(diffs, ddof=1)
    # DeLong's is the unbiased (n - 1) form of the bootstrap's plug-in variance
    assert ours.se == pytest.approx(boot_se, rel=0.12)
    boot_p = 2 * stats.norm.sf(abs(ours.diff) / boot_se)
    assert ref.p_value == pytest.approx(boot_p, abs=0.05)


def test_clusters_sum_placements_per_video() -> None:
    # every item duplicated (two identical frames per video): the clustered test equals the
    # test of one item per video, while the unclustered one would claim twice the evidence
    y2, a2, b2 = np.repeat(Y, 2), np.repeat(A, 2), np.repeat(B, 2)
    videos = np.repeat(np.arange(len(Y)), 2)
    per_video = clustered_delong_test(Y, A, B)
    clustered = clustered_delong_test(y2, a2, b2, videos)
    assert clustered.se == pytest.approx(per_video.se)
    assert clustered_delong_test(y2, a2, b2).se < 0.8 * per_video.se
    with pytest.raises(ValueError, match="two videos of each class"):
        clustered_delong_test(Y, A, B, np.where(Y == 1, "f", "r"))


def test_level_under_the_null_with_clustered_frames() -> None:
    """Null: both detectors have the same AUC (their scores are exchangeable given the class
    and the video). The 5 % test rejects about 5 % of the time: within the binomial 99 %
    interval of 400 replicates."""
    rng = np.random.default_rng(1)
    n_rep, rejected = 400, 0
    for _ in range(n_rep):
        y_video = np.repeat([0, 1], 15)
        video = np.repeat(np.arange(30), 4)
        y = y_video[video]
        shared = rng.normal(size=30)[video] + 0.8 * y  # the video's look, both detectors see it
        a = shared + rng.normal(size=30)[video] + rng.normal(size=120)
        b = shared + rng.normal(size=30)[video] + rng.normal(size=120)
        rejected += clustered_delong_test(y, a, b, video).p_value < 0.05
    low, high = stats.binomtest(rejected, n_rep, 0.05).proportion_ci(0.99)
    assert low <= 0.05 <= high, rejected / n_rep


def test_holm_step_down() -> None:
    np.testing.assert_allclose(holm([0.01, 0.04, 0.03, np.nan]), [0.03, 0.06, 0.06, np.nan])
    np.testing.assert_allclose(holm([0.5, 0.9]), [1.0, 1.0])


def test_ties_with_the_best_and_seed_averages() -> None:
    rng = np.random.default_rng(2)
    y = np.repeat([0, 1], 40)
    good = y + rng.normal(0, 0.5, 80)
    close = good + rng.normal(0, 0.05, 80)  # nearly the same ranking
    bad = rng.normal(size=80)
    preds = {
        name: Predictions(
            dataset=["d"] * 80,
            video_id=[f"v{i}" for i in range(80)],
            frame=[0] * 80,
            label=y,
            score=s,
            method=["m"] * 80,
        )  # fmt: skip
        for name, s in (("good", good), ("close", close), ("bad", bad))
    }
    out = compare_with_best(preds, level="video")
    best = max(out, key=lambda n: out[n].auc)
    assert out[best].best and out[best].tied and best in {"good", "close"}
    assert all(out[n].tied for n in ("good", "close")) and not out["bad"].tied
    assert out["bad"].p_adjusted < 0.05

    def pred(scores: np.ndarray, order: np.ndarray) -> Predictions:
        return Predictions(
            dataset=["d"] * 80, video_id=[f"v{i}" for i in order], frame=[0] * 80,
            label=y[order], score=scores[order], method=["m"] * 80,
        )  # fmt: skip

    shuffled = rng.permutation(80)
    two_seeds = seed_average([pred(good, np.arange(80)), pred(close, shuffled)])
    np.testing.assert_allclose(two_seeds.score, (good + close) / 2)
    aligned = align({"x": [pred(good, shuffled), pred(close, np.arange(80))]}, "video")
    np.testing.assert_allclose(np.sort(aligned.scores["x"]), np.sort((good + close) / 2))


def _messy(rows: np.ndarray, score: np.ndarray) -> Predictions:
    """Frame rows of two datasets and two methods sharing video ids, frames and clips."""
    video = rows // 12
    y = (video % 2).astype(int)
    return Predictions(
        dataset=np.where(video % 3 == 0, "A", "B").astype(object),
        video_id=(video // 2).astype(str).astype(object),  # a real and a fake video share an id
        frame=rows % 6,
        label=y,
        score=score[rows],
        method=np.where(y == 1, np.where(video % 4 < 2, "DF", "FS"), "real").astype(object),
        unit=np.where(rows % 12 < 6, "frame", "clip").astype(object),
    )  # fmt: skip


def _string_keys(p: Predictions) -> np.ndarray:
    return np.array([f"{d}/{m}/{v}#{u}#{f}" for d, m, v, u, f in zip(p.dataset, p.method, p.video_id, p.unit, p.frame, strict=True)])  # fmt: skip


def test_integer_keys_give_the_string_keys_answers() -> None:
    """Items matched by integer codes are those the old string keys matched (dataset/method/
    video, unit, frame): same aligned scores, AUCs, p-values, seed rows (to 1e-12)."""
    rng = np.random.default_rng(11)
    total = 28 * 12
    base = rng.normal(size=total) + (np.arange(total) // 12 % 2)
    sa, sb = base + rng.normal(size=total), base + rng.normal(size=total)
    pa = _messy(rng.permutation(total), sa)
    pb = _messy(rng.permutation(total)[: total - 40], sb)  # scored fewer rows
    ka, kb = _string_keys(pa), _string_keys(pb)
    common = np.intersect1d(ka, kb)
    ia, ib = (np.argsort(k)[np.searchsorted(np.sort(k), common)] for k in (ka, kb))
    videos = np.array([c.rsplit("#", 2)[0] for c in common])
    ref = clustered_delong_test(pa.label[ia], pa.score[ia], pb.score[ib], videos)
    items = align({"a": [pa], "b": [pb]})
    assert len(items.y) == len(common) and len(np.unique(items.clusters)) == len(set(videos))
    got = np.sort(items.scores["a"] * 1000 + items.scores["b"])
    np.testing.assert_allclose(got, np.sort(pa.score[ia] * 1000 + pb.score[ib]), rtol=1e-12)
    res = clustered_delong_test(items.y, items.scores["a"], items.scores["b"], items.clusters)
    assert res.z == pytest.approx(ref.z, rel=1e-12) and res.se == pytest.approx(ref.se, rel=1e-12)
    out = compare_with_best({"a": pa, "b": pb})
    other = next(c for c in out.values() if not c.best)
    assert other.p_value == pytest.approx(ref.p_value, rel=1e-12)
    assert out["a"].auc == pytest.approx(auc(pa.label, pa.score), abs=1e-12)
    first, scores = seed_rows([pa, pb])
    keep = np.isin(ka, common)
    np.testing.assert_array_equal(first.score, pa.score[keep])
    np.testing.assert_allclose(
        scores[1], pb.score[np.argsort(kb)[np.searchsorted(np.sort(kb), ka[keep])]]
    )
    with pytest.raises(ValueError, match="same video and frame twice"):
        align({"a": [Predictions.concat([pa, pa.subset(np.arange(3))])]})


def test_baselines_are_never_best_nor_tied() -> None:
    """A baseline with the highest AUC is not the column's best, is outside the tie family
    (no adjusted p, no mark) and keeps its unadjusted p against the best for information."""
    rng = np.random.default_rng(4)
    y = np.repeat([0, 1], 40)

    def pred(s: np.ndarray) -> Predictions:
        return Predictions(
            dataset=["d"] * 80, video_id=[f"v{i}" for i in range(80)], frame=[0] * 80,
            label=y, score=s, method=["m"] * 80,
        )  # fmt: skip

    good = y + rng.normal(0, 0.7, 80)
    preds = {"oracle": pred(y + rng.normal(0, 0.1, 80)), "a": pred(good), "b": pred(good + 0.01)}
    out = compare_with_best(preds, level="video", baselines={"oracle"})
    assert out["a"].best and not out["oracle"].best and out["oracle"].baseline
    assert not out["oracle"].tied and np.isnan(out["oracle"].p_adjusted)
    assert out["oracle"].p_value < 0.05 and out["b"].tied
    plain = compare_with_best(preds, level="video")
    assert plain["oracle"].best and not plain["a"].tied
    only = compare_with_best(preds, level="video", baselines=set(preds))
    assert not any(c.best or c.tied for c in only.values())


def test_detectors_without_common_items_fall_back_to_bonferroni_over_all_pairs() -> None:
    """b and c share frames with a but not with each other (an image and a video detector at
    frame level): no joint covariance, so each p is multiplied by the 3 pairs of the family."""
    rng = np.random.default_rng(5)
    video = np.repeat(np.arange(40), 6)
    frame = np.tile(np.arange(6), 40)
    y = (video % 2).astype(int)
    base = rng.normal(size=40)[video] + y

    def pred(rows: np.ndarray, noise: float) -> Predictions:
        return Predictions(
            dataset=["d"] * len(rows), video_id=video[rows].astype(str), frame=frame[rows],
            label=y[rows], score=base[rows] + noise * rng.normal(size=len(rows)),
            method=["m"] * len(rows),
        )  # fmt: skip

    preds = {"a": pred(np.arange(240), 0.2), "b": pred(np.flatnonzero(frame < 3), 1.5)}
    preds["c"] = pred(np.flatnonzero(frame >= 3), 1.5)
    out = compare_with_best(preds)
    assert out["a"].best
    for n in "bc":
        assert "Bonferroni over 3 pairs" in out[n].note
        assert out[n].p_adjusted == pytest.approx(min(1.0, 3 * out[n].p_value))


def test_max_abs_z_of_one_free_contrast_is_normal_or_t() -> None:
    """Detectors 0 and 1 identical (their contrast has no variance; the covariance carries a
    round-off negative eigenvalue): the largest |z| over the pairs is the one of (0, 2), so its
    tail is the normal one, or Student's t with the given degrees of freedom."""
    from fairforensics.evaluation.significance import _max_abs_z_p

    u = np.array([1.0, -1.0, 0.0]) / np.sqrt(2)
    cov = np.array([[0.5, 0.5, 0.6], [0.5, 0.5, 0.6], [0.6, 0.6, 2.0]]) - 1e-16 * np.outer(u, u)
    rng = np.random.default_rng(0)
    p = _max_abs_z_p(cov, np.array([1.96, 0.0, np.inf]), np.inf, 200_000, rng)
    assert p[0] == pytest.approx(0.05, abs=0.003) and p[1] == 1.0 and p[2] == 0.0
    p4 = _max_abs_z_p(cov, np.array([1.96]), 4.0, 200_000, rng)
    assert p4[0] == pytest.approx(2 * stats.t.sf(1.96, 4), abs=0.004)
    # no contrast with a variance (every detector ranks alike): any difference is decisive
    none = _max_abs_z_p(np.ones((3, 3)), np.array([0.5, 0.0, -2.0]), np.inf, 100, rng)
    assert none.dtype == np.float64 and none.tolist() == [0.0, 1.0, 0.0]
