"""The cross-group AUC's fast placement sums (issue 49, item 5) give the answers of the float
cumsum they replaced, kept here as the reference: the same ``below`` for every block size,
with ties, and in int64 when the weights are large; the same estimates and intervals for a
seed on data with ties and groups of unequal size; and each group's classes sorted once for
all their pairs give the sides and intervals of the pair-by-pair loop they replaced."""

from __future__ import annotations

import numpy as np
import pytest

from fairforensics.fairness import leaderboard_metrics as lm


def reference_below(side: lm._Side, w_other: np.ndarray) -> np.ndarray:
    """The placement sums as computed before: a float64 cumsum over the other class's sorted
    items per replicate, at each item's ``lo``/``hi``, summed per unit."""
    cum = np.zeros((len(w_other), len(side.other_units) + 1))
    np.cumsum(w_other.astype(np.float64)[:, side.other_units], axis=1, out=cum[:, 1:])
    at = cum[:, side.lo] if side.no_ties else (cum[:, side.lo] + cum[:, side.hi]) * 0.5
    return np.add.reduceat(at, side.starts, axis=1, dtype=np.float64)


def tied_data(seed: int, n_videos: int = 60) -> tuple[np.ndarray, ...]:
    """Labels, scores rounded to 0.05 (ties within and across classes), three groups of
    unequal size and video ids; 3-20 frames a video."""
    rng = np.random.default_rng(seed)
    frames = rng.integers(3, 21, n_videos)
    video = np.repeat(np.arange(n_videos), frames)
    label = (rng.random(n_videos) < 0.55).astype(int)[video]
    group = np.array(["a", "b", "c"])[rng.choice(3, n_videos, p=[0.6, 0.3, 0.1])][video]
    logit = label + rng.normal(0, 1, n_videos)[video] + rng.normal(0, 1, len(video))
    score = 1 / (1 + np.exp(-logit))
    return label, np.round(score * 20) / 20, group, video


def sides(seed: int) -> tuple[lm._Side, lm._Side]:
    y, s, _, video = tied_data(seed)
    fake_u = np.unique(video[y == 1], return_inverse=True)[1]
    real_u = np.unique(video[y == 0], return_inverse=True)[1]
    return lm._Side.of(s[y == 1], fake_u, s[y == 0], real_u), lm._Side.of(
        s[y == 0], real_u, s[y == 1], fake_u
    )


@pytest.mark.parametrize("cells", [1, 97, 1 << 18])
def test_below_equals_the_float_cumsum(monkeypatch: pytest.MonkeyPatch, cells: int) -> None:
    """Bootstrap multiplicities, one replicate a block up to all in one: exactly equal, ties
    counting one half (there are ties: ``hi`` differs from ``lo``)."""
    monkeypatch.setattr(lm, "_BELOW_CELLS", cells)
    fake, real = sides(1)
    assert not fake.no_ties and not real.no_ties
    rng = np.random.default_rng(5)
    for side in (fake, real):
        n_other = len(side.other_sizes)
        w = rng.multinomial(n_other, np.full(n_other, 1 / n_other), size=23)
        np.testing.assert_array_equal(side.below(w), reference_below(side, w))
        ones = np.ones((1, n_other))
        np.testing.assert_array_equal(side.below(ones), reference_below(side, ones))


def test_below_goes_wide_when_int32_would_overflow() -> None:
    """Weights whose weighted item count passes 2^30 are summed in int64, still exactly."""
    fake, _ = sides(2)
    w = np.full((3, len(fake.other_sizes)), 2**27, dtype=np.int64)
    w[1, ::2] = 1
    assert (w @ fake.other_sizes).max() * 2 >= 2**31
    np.testing.assert_array_equal(fake.below(w), reference_below(fake, w))


def test_cross_group_aucs_same_as_reference(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every ordered pair's estimate, interval and note for a seed are those of the reference
    placement sums (identical floats), here over several small blocks of replicates."""
    y, s, g, video = tied_data(3, n_videos=90)
    monkeypatch.setattr(lm, "_BELOW_CELLS", 301)
    fast = lm.cross_group_aucs(y, s, g, video, n_boot=120, seed=7, min_units=2)
    monkeypatch.setattr(lm._Side, "below", reference_below)
    slow = lm.cross_group_aucs(y, s, g, video, n_boot=120, seed=7, min_units=2)
    assert set(fast) == set(slow) and len(fast) == 9
    finite = 0
    for pair, est in fast.items():
        ref = slow[pair]
        assert est.note == ref.note
        np.testing.assert_array_equal(
            [est.value, est.low, est.high], [ref.value, ref.low, ref.high]
        )
        finite += bool(np.isfinite(est.low))
    assert finite >= 6  # most pairs have an interval: the bootstrap path is compared


def test_known_rows_tests_each_row_as_is_missing() -> None:
    """The fairness rows' known-group mask, from each distinct value, is the per-row test."""
    from fairforensics.benchmarks.fairness_board import known_rows
    from fairforensics.fairness.abf import is_missing

    values = np.array(["a", None, "", " ", float("nan"), "b", "a", None, 3], dtype=object)
    expected = [not is_missing(v) for v in values]
    np.testing.assert_array_equal(known_rows(values), expected)
    assert known_rows(values).tolist() == [
        True,
        False,
        False,
        False,
        False,
        True,
        True,
        False,
        True,
    ]


def test_pooled_auc_computed_once_per_known_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    """With one memo for an entry's attributes, a second attribute with the same known rows
    reuses the pooled AUC (one call fewer) and its row is the row computed without the memo;
    an attribute with other known rows computes its own."""
    from fairforensics.benchmarks import fairness_board as fb
    from fairforensics.evaluation.leaderboard import Entry
    from fairforensics.evaluation.predictions import Predictions

    y, s, g, video = tied_data(4, n_videos=40)
    other = np.where(video % 7 == 0, None, np.where(video % 2 == 0, "x", "y")).astype(object)
    pred = Predictions(
        dataset=["syn"] * len(y), video_id=[f"{v:03d}" for v in video], frame=np.zeros(len(y)),
        label=y, score=s, method=np.where(y == 1, "DF", "real"),
        attributes={"g": g.astype(object), "h": g.astype(object), "o": other},
    )  # fmt: skip
    entry = Entry("det", "syn", "syn", [pred], thresholds=[0.5], chosen_by=["default"])
    calls = []
    real = fb.cross_group_aucs
    monkeypatch.setattr(fb, "cross_group_aucs", lambda *a, **k: calls.append(1) or real(*a, **k))
    settings = {"n_boot": 30, "confidence": 0.95, "seed": 1, "min_units": 2}
    alone = {a: fb.fairness_row(entry, a, **settings) for a in ("g", "h", "o")}
    assert len(calls) == 6  # pooled and per group, each attribute
    memo: dict = {}
    shared = {a: fb.fairness_row(entry, a, **settings, pooled_memo=memo) for a in ("g", "h", "o")}
    assert len(calls) == 6 + 5 and len(memo) == 2  # h reuses g's pooled AUC; o has its own
    for a in alone:
        assert str(shared[a]) == str(alone[a])  # NaN-safe: every value, interval and note
    assert shared["o"][6]["AUC"] != shared["g"][6]["AUC"]


def reference_side(s: np.ndarray, units: np.ndarray, s_other: np.ndarray, u_other: np.ndarray):
    """A side as built before each class was sorted once for all its pairs: both classes
    sorted again for every pair."""
    order = np.lexsort((s, units))
    sorted_units = units[order]
    other = np.argsort(s_other, kind="stable")
    lo = np.searchsorted(s_other[other], s[order], "left")
    hi = np.searchsorted(s_other[other], s[order], "right")
    return lm._Side(np.r_[0, np.flatnonzero(np.diff(sorted_units)) + 1], lo, hi,
                    u_other[other], np.bincount(units), np.bincount(u_other),
                    bool(np.array_equal(lo, hi)))  # fmt: skip


def reference_cross_group_aucs(y, s, g, video, *, n_boot, seed, min_units):
    """The pair loop as it was: each pair's rows selected, renumbered and sorted afresh, and
    :func:`lm.xauc_interval` called on them (the draws of one generator, pair by pair)."""
    y, s, g, names, u = lm._clean(y, s, g, video)
    codes = lm.factorize(u)[0]
    rng = np.random.default_rng(seed)
    out = {}
    for i, a in enumerate(names):
        fakes = (g == i) & (y == 1)
        for j, b in enumerate(names):
            reals = (g == j) & (y == 0)
            if not fakes.any() or not reals.any():
                out[(a, b)] = lm.Estimate(float("nan"), note=f"no fakes of {a} or no reals of {b}")
                continue
            fu, ru = lm._dense(codes[fakes]), lm._dense(codes[reals])
            note = "; ".join(filter(None, (
                lm.few_units_note(fu.max() + 1, f"fake videos of {a}", min_units),
                lm.few_units_note(ru.max() + 1, f"real videos of {b}", min_units))))  # fmt: skip
            value, low, high, why = lm.xauc_interval(
                s[fakes], fu, s[reals], ru, n_boot=0 if note else n_boot, confidence=0.95, rng=rng
            )
            out[(a, b)] = lm.Estimate(value, low, high, note or why)
    return out


def test_sides_of_classes_sorted_once_are_the_per_pair_sides() -> None:
    """:meth:`lm._Side.pair` of classes sorted once (:class:`lm._Class`) is, field by field,
    the side sorted for the pair alone, with ties and without."""
    for seed, tie in ((1, True), (2, False)):
        tied = []
        y, s, g, video = tied_data(seed, n_videos=80)
        if not tie:
            s = s + np.random.default_rng(seed).random(len(s)) * 1e-3
        for a in ("a", "b", "c"):
            for b in ("a", "b", "c"):
                f, r = (g == a) & (y == 1), (g == b) & (y == 0)
                fu, ru = lm._dense(video[f]), lm._dense(video[r])
                fakes, reals = lm._Class.of(s, video, f), lm._Class.of(s, video, r)
                for got, want in (
                    (lm._Side.pair(fakes, reals), reference_side(s[f], fu, s[r], ru)),
                    (lm._Side.pair(reals, fakes), reference_side(s[r], ru, s[f], fu)),
                ):
                    assert got.no_ties == want.no_ties
                    for field in ("starts", "lo", "hi", "other_units", "sizes", "other_sizes"):
                        np.testing.assert_array_equal(getattr(got, field), getattr(want, field))
                    tied.append(not got.no_ties)
        assert any(tied) == tie


def test_cross_group_aucs_same_as_pair_by_pair() -> None:
    """Sorting each group's classes once gives every pair's estimate, interval and note of
    the pair-by-pair loop, identical floats for a seed: three groups of unequal size, ties,
    a group without fakes, a group too small for an interval."""
    y, s, g, video = tied_data(6, n_videos=120)
    g = g.astype(object)
    g[(g == "c") & (y == 1)] = "b"  # c: reals only
    g[video % 23 == 0] = "d"  # d: a few videos
    for n_boot, seed in ((150, 2), (0, 0)):
        fast = lm.cross_group_aucs(y, s, g, video, n_boot=n_boot, seed=seed, min_units=3)
        slow = reference_cross_group_aucs(y, s, g, video, n_boot=n_boot, seed=seed, min_units=3)
        assert list(fast) == list(slow) and len(fast) == 16
        for pair, est in fast.items():
            ref = slow[pair]
            assert est.note == ref.note, pair
            np.testing.assert_array_equal(
                [est.value, est.low, est.high], [ref.value, ref.low, ref.high]
            )
    assert np.isnan(fast[("c", "a")].value) and "few" in fast[("d", "d")].note
    assert sum(np.isfinite(e.low) for e in lm.cross_group_aucs(
        y, s, g, video, n_boot=150, seed=2, min_units=3).values()) >= 6  # fmt: skip


def test_unit_sums_go_wide_when_int32_would_overflow() -> None:
    """Cum values that fit int32 but whose sums over a unit's items do not: summed in int64,
    still exactly the float reference (a unit of 3-20 items)."""
    fake, _ = sides(2)
    w = np.full((2, len(fake.other_sizes)), 2**30 // (2 * fake.other_sizes.sum()), dtype=np.int64)
    w[1, ::3] = 2
    most = (w @ fake.other_sizes).max() * 2
    assert most < 2**31 <= most * fake.sizes.max()
    np.testing.assert_array_equal(fake.below(w), reference_below(fake, w))
