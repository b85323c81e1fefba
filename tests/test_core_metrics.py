"""The public metric functions of DESIGN.md against scikit-learn, SciPy and hand-computed cases."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.interpolate import interp1d
from scipy.optimize import brentq
from sklearn import metrics as skm

from fairforensics.evaluation.metrics import SingleClassError, acc, ap, auc, eer, video_scores


@pytest.fixture
def scores():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 500)
    s = np.clip(rng.normal(0.35 + 0.3 * y, 0.2), 0, 1)
    return y, s


def test_auc_ap_match_sklearn(scores) -> None:
    y, s = scores
    assert auc(y, s) == pytest.approx(skm.roc_auc_score(y, s))
    assert ap(y, s) == pytest.approx(skm.average_precision_score(y, s))


def test_ties_count_one_half() -> None:
    assert auc([0, 1], [0.5, 0.5]) == 0.5
    assert auc([0, 0, 1, 1], [0.1, 0.5, 0.5, 0.9]) == pytest.approx(0.875)


def test_eer_hand_computed() -> None:
    assert eer([0, 0, 1, 1], [0.1, 0.2, 0.8, 0.9]) == (0.0, 0.8)
    assert eer([0, 0, 1, 1], [0.1, 0.6, 0.4, 0.9]) == (0.5, 0.6)


def test_eer_matches_roc_interpolation_reference(scores) -> None:
    y, s = scores
    fpr, tpr, _ = skm.roc_curve(y, s)
    reference = brentq(lambda x: 1.0 - x - interp1d(fpr, tpr)(x), 0.0, 1.0)
    rate, threshold = eer(y, s)
    assert rate == pytest.approx(reference, abs=1e-9)
    far = np.mean(s[y == 0] >= threshold)
    frr = np.mean(s[y == 1] < threshold)
    assert abs(far - rate) < 0.02 and abs(frr - rate) < 0.02


def test_acc_threshold() -> None:
    assert acc([0, 1, 1], [0.2, 0.5, 0.4]) == pytest.approx(2 / 3)
    assert acc([0, 1, 1], [0.2, 0.5, 0.4], threshold=0.3) == 1.0


def test_single_class_and_bad_input() -> None:
    with pytest.raises(SingleClassError, match="only class 1"):
        auc([1, 1], [0.2, 0.3])
    with pytest.raises(SingleClassError):
        eer([0, 0], [0.2, 0.3])
    assert acc([1, 1], [0.7, 0.2]) == 0.5
    with pytest.raises(ValueError, match="equal length"):
        auc([0, 1], [0.1])
    with pytest.raises(ValueError, match="NaN"):
        auc([0, 1], [0.1, np.nan])
    with pytest.raises(ValueError, match="only"):
        auc([0, 2], [0.1, 0.2])


def test_video_scores_group_by_full_key() -> None:
    # FF++ fake "000_003" exists for two methods: grouping by folder name would merge them.
    keys = ["FF/Deepfakes/000_003"] * 2 + ["FF/FaceSwap/000_003"] * 3 + ["FF/real/000"] * 2
    y = [1, 1, 1, 1, 1, 0, 0]
    s = [0.2, 0.4, 0.9, 0.1, 0.5, 0.3, 0.1]
    labels, mean, ids = video_scores(y, s, keys)
    assert list(ids) == ["FF/Deepfakes/000_003", "FF/FaceSwap/000_003", "FF/real/000"]
    np.testing.assert_allclose(mean, [0.3, 0.5, 0.2])
    np.testing.assert_array_equal(labels, [1, 1, 0])
    _, med, _ = video_scores(y, s, keys, reduce="median")
    np.testing.assert_allclose(med, [0.3, 0.5, 0.2])
    _, mx, _ = video_scores(y, s, keys, reduce="max")
    np.testing.assert_allclose(mx, [0.4, 0.9, 0.3])
    with pytest.raises(ValueError, match="different labels"):
        video_scores([0, 1], [0.1, 0.2], ["a", "a"])
    with pytest.raises(ValueError, match="reduce"):
        video_scores(y, s, keys, reduce="mode")
