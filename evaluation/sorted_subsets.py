"""AUC and EER of many subsets of one set of rows sorted once by descending score (the
permutation test of the fairness gaps: each permutation's groups), in a few passes over integer
arrays whose buffers every call reuses (at 1e6 rows a fresh array per pass costs more than the
pass: its pages are faulted in anew each time).

A row's key is its tie block (blocks of equal scores, numbered down the sorted rows) times 4
plus its class, so one gather gives a subset's classes and tie structure: two neighbours of a
subset share a score when their keys differ by at most 1 (same block), and differ by 3 or more
otherwise. The figures are bit for bit those of
:func:`evaluation.confidence.weighted_ranking_metrics` with weight 1 on the subset's rows and 0
elsewhere: the EER by :func:`evaluation.confidence.eer_of_counts` on the same integer counts, the
AUC as the trapezoids summed in integers and divided once."""

from __future__ import annotations

import numpy as np

from fairforensics.evaluation.confidence import eer_of_counts


class SortedSubsets:
    """Rows sorted by descending score (``positive``: 1 for fakes), and the AUC and EER of any
    subset of them (:meth:`auc_eer`)."""

    def __init__(self, scores: np.ndarray, positive: np.ndarray) -> None:
        scores = np.asarray(scores)
        n = len(scores)
        if len(positive) != n:
            raise ValueError("scores and positive must have one entry per row")
        if n > 1 and np.any(scores[1:] > scores[:-1]):
            raise ValueError("scores must be sorted in descending order")
        new_block = np.ones(n, dtype=bool)
        np.not_equal(scores[1:], scores[:-1], out=new_block[1:])
        self.key = np.cumsum(new_block, dtype=np.int64) * 4 + np.asarray(positive, np.int64)
        self._member = np.empty(n, dtype=bool)
        self._ints = [np.empty(n, dtype=np.int64) for _ in range(5)]
        self._flag = np.empty(n, dtype=bool)

    def __len__(self) -> int:
        return len(self.key)

    def auc_eer(self, row_group: np.ndarray, group: int) -> tuple[float, float]:
        """AUC and EER of the rows whose ``row_group`` (one entry per sorted row) is ``group``;
        NaN for both when the subset lacks a class."""
        np.equal(row_group, group, out=self._member)
        rows = np.flatnonzero(self._member)
        m = len(rows)
        if not m:
            return float("nan"), float("nan")
        key, cum, a, b, c = (buf[:m] for buf in self._ints)
        np.take(self.key, rows, out=key, mode="clip")  # rows are in range: no buffered check
        np.bitwise_and(key, 1, out=a)
        np.cumsum(a, out=cum)
        np.subtract(key[1:], key[:-1], out=b[: m - 1])
        flag = self._flag[:m]
        np.greater(b[: m - 1], 1, out=flag[: m - 1])
        flag[m - 1] = True
        last = np.flatnonzero(flag)  # the last row of each tie block: the curve's points
        n_tp = int(cum[m - 1])
        n_fp = m - n_tp
        if n_tp <= 0 or n_fp <= 0:
            return float("nan"), float("nan")
        k = len(last)
        tps, fps, step, pair = a[:k], b[:k], key[:k], c[:k]
        np.take(cum, last, out=tps, mode="clip")
        np.subtract(last, tps, out=fps)
        fps += 1
        # trapezoids: sum of (fps[i] - fps[i-1]) * (tps[i] + tps[i-1]), from the origin
        step[0], pair[0] = fps[0], tps[0]
        np.subtract(fps[1:], fps[:-1], out=step[1:])
        np.add(tps[1:], tps[:-1], out=pair[1:])
        auc = float(int(np.dot(step, pair)) / (2 * n_tp * n_fp))
        return auc, eer_of_counts(cum, None, last)
