"""Issue 47, item 1: the stratified bootstrap with strata of unequal size above 2,097 units
(where each stratum used to get its own block size and the blocks did not line up)."""

from __future__ import annotations

import numpy as np

from fairforensics.evaluation.confidence import stratified_multiplicities
from fairforensics.fairness.leaderboard_metrics import lin_intervals


def test_unequal_strata_above_2100_units_line_up_and_draw_as_documented() -> None:
    sizes = [2500, 2200, 300, 1, 4000]
    strata = np.repeat(np.arange(len(sizes)), sizes)
    n_boot = 1000  # 2^21 // 4000 = 524 replicates a block: two blocks
    got = np.vstack(list(stratified_multiplicities(np.random.default_rng(8), strata, n_boot)))
    assert got.shape == (n_boot, len(strata))
    # expected: one block size for all strata, each stratum's n - 1 draws in stratum order
    rng = np.random.default_rng(8)
    want = []
    for reps in (524, 476):
        block = np.zeros((reps, len(strata)), dtype=np.int64)
        for h, n in enumerate(sizes):
            cols = np.flatnonzero(strata == h)
            drawn = rng.integers(0, n, (reps, max(n - 1, 1)))
            block[:, cols] = (
                [np.bincount(r, minlength=n) for r in drawn] if n > 1 else np.ones((reps, 1))
            )
        want.append(block)
    np.testing.assert_array_equal(got, np.vstack(want))
    per_stratum = np.stack([got[:, strata == h].sum(axis=1) for h in range(len(sizes))], axis=1)
    assert (per_stratum == [n - 1 if n > 1 else 1 for n in sizes]).all()


def test_leaderboard_lin_intervals_on_more_than_2100_videos_a_cell() -> None:
    rng = np.random.default_rng(9)
    n = 6000  # one frame a video; group "a" holds about 2,500 real and 2,500 fake videos
    g = np.where(np.arange(n) < 5000, "a", "b")
    y = rng.integers(0, 2, n)
    s = np.clip(0.4 * y + rng.normal(0.3, 0.2, n), 0, 1)
    out = lin_intervals(y, s, g, np.arange(n), n_boot=1000, seed=1)
    for est in out.values():
        assert est.low <= est.value <= est.high


def test_unit_codes_of_integers_are_factorize_codes() -> None:
    """The C path for integer units gives factorize's codes (string order: 10 before 2)."""
    from fairforensics.evaluation.confidence import unit_codes
    from fairforensics.evaluation.metrics import factorize

    units = np.random.default_rng(3).integers(0, 130, 2000)
    got, want = unit_codes(units), factorize(units)
    np.testing.assert_array_equal(got[0], want[0])
    assert got[1].tolist() == want[1].tolist()
