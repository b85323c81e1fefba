"""Fairness under perturbation (issue 33): the paired change of a gap between the clean and the
perturbed scores of the same videos (:mod:`fairness.paired`, issue 36), the robustness rows and
tables with Holm-adjusted p-values, and the vectorised weighted AUC/EER it rests on."""

from __future__ import annotations

import json

import numpy as np
import pytest

from fairforensics.evaluation.confidence import weighted_ranking_matrix, weighted_ranking_metrics
from fairforensics.evaluation.predictions import Predictions
from fairforensics.fairness.paired import paired_change
from fairforensics.fairness.report import ReportConfig
from fairforensics.fairness.robustness import case_gaps, write_robustness_fairness


def _videos(n_per_cell: int = 12, frames: int = 2, seed: int = 0):
    """Clean scores of videos in groups a/b x real/fake, a few frames each."""
    rng = np.random.default_rng(seed)
    rows = []
    for group in ("a", "b"):
        for label in (0, 1):
            for v in range(n_per_cell):
                base = 0.75 if label else 0.25
                for f in range(frames):
                    score = float(np.clip(base + rng.normal(0, 0.08), 0.01, 0.99))
                    rows.append((f"{group}{label}_{v}", f, label, score, group))
    return rows


def _pred(rows) -> Predictions:
    return Predictions(
        dataset=["x"] * len(rows),
        video_id=[r[0] for r in rows],
        frame=[r[1] for r in rows],
        label=[r[2] for r in rows],
        score=[r[3] for r in rows],
        method=["m" if r[2] else "real" for r in rows],
        attributes={"group": [r[4] for r in rows]},
    )


def _arrays(rows):
    return {
        "y": np.array([r[2] for r in rows]),
        "s": np.array([r[3] for r in rows]),
        "g": np.array([r[4] for r in rows], dtype=object),
        "u": np.array([r[0] for r in rows], dtype=object),
    }


def test_no_change_when_nothing_changes() -> None:
    rows = _arrays(_videos())
    for metric in ("acc", "auc", "eer", "fnr"):
        out = paired_change(rows, rows, metric=metric, pair=("a", "b"))
        assert out["change"] == 0 and out["change_p"] == 1.0
        assert out["change_low"] <= 0 <= out["change_high"]


def test_a_perturbation_that_hurts_one_group_changes_its_gap() -> None:
    clean = _videos()
    # the perturbation pushes most of group a's fakes under the threshold, group b is untouched
    hurt = [(v, f, y, s - 0.3 if (g == "a" and y == 1) else s, g) for v, f, y, s, g in clean]
    c, p = _arrays(clean), _arrays(hurt)
    fnr = paired_change(c, p, metric="fnr", pair=("a", "b"))
    assert fnr["change"] > 0.5 and fnr["change_p"] < 0.01 and fnr["change_low"] > 0.3
    acc = paired_change(c, p, metric="acc", pair=("a", "b"))
    assert acc["change"] < -0.2 and acc["change_high"] < 0
    # shifting both groups alike changes no gap: not significant
    both = [(v, f, y, s - 0.3 if y == 1 else s, g) for v, f, y, s, g in clean]
    same = paired_change(c, _arrays(both), metric="fnr", pair=("a", "b"))
    assert abs(same["change"]) < 0.2 and same["change_p"] > 0.05
    # every unit of a stratum changed alike: no variation to measure the uncertainty on
    flip = [(v, f, y, s - 0.6 if (g == "a" and y == 1) else s, g) for v, f, y, s, g in clean]
    out = paired_change(c, _arrays(flip), metric="fnr", pair=("a", "b"))
    assert out["change"] == 1.0 and np.isnan(out["change_p"]) and "alike" in out["change_note"]


def test_too_few_units_give_no_interval() -> None:
    rows = _arrays(_videos(n_per_cell=3))
    out = paired_change(rows, rows, metric="acc", pair=("a", "b"), min_units=5)
    assert np.isnan(out["change_low"]) and "a: fewer than 5 real videos (3)" in out["change_note"]


def test_case_gaps_rows_per_case_and_metric() -> None:
    clean = _videos(n_per_cell=6)
    hurt = [(v, f, y, s - 0.4 if (g == "a" and y == 1) else s, g) for v, f, y, s, g in clean]
    cfg = ReportConfig(threshold=0.5, bootstrap=50, permutations=50)
    rows = case_gaps({"clean": _pred(clean), "GB:5": _pred(hurt)}, ["group"], cfg, ["acc", "fnr"])
    assert [(r["type"], r["level"], r["metric"]) for r in rows] == [
        ("clean", 0, "acc"), ("clean", 0, "fnr"), ("GB", 5, "acc"), ("GB", 5, "fnr"),
    ]  # fmt: skip
    gb_fnr = rows[3]
    assert gb_fnr["change_pair"] == "a - b" and gb_fnr["change"] > 0.8
    assert "change" not in rows[0]
    with pytest.raises(ValueError, match="clean"):
        case_gaps({"GB:5": _pred(hurt)}, ["group"], cfg)


def test_tables_add_holm_adjusted_p_values(tmp_path) -> None:
    clean = _videos(n_per_cell=6)
    cases = {"clean": _pred(clean)}
    for k, shift in enumerate((0.1, 0.2, 0.3), start=1):
        cases[f"GB:{k}"] = _pred(
            [(v, f, y, s - shift if (g == "a" and y == 1) else s, g) for v, f, y, s, g in clean]
        )
    cfg = ReportConfig(threshold=0.5, bootstrap=50, permutations=50)
    rows = case_gaps(cases, ["group"], cfg, ["acc", "fnr"])
    write_robustness_fairness(rows, tmp_path, figures=False)
    written = json.loads((tmp_path / "robustness_fairness.json").read_text())
    tested = [r for r in written if r.get("change_p") is not None]
    assert len(tested) == 6
    p = np.array([r["change_p"] for r in tested])
    adjusted = np.array([r["change_p_adjusted"] for r in tested])
    assert np.all(adjusted >= p) and np.isclose(adjusted[np.argmin(p)], min(1, 6 * p.min()))
    assert all(r["gap_p_adjusted"] >= r["gap_p"] for r in written)
    table = (tmp_path / "robustness_fairness_table.md").read_text()
    assert "the metric changes by the same amount" in table and "(Holm " in table


def test_vectorised_weighted_auc_and_eer_equal_the_loop() -> None:
    rng = np.random.default_rng(0)
    for n in (6, 50, 400):
        y = rng.integers(0, 2, n)
        y[:2] = (0, 1)
        s = np.round(rng.random(n), 2)  # ties
        w = rng.integers(0, 3, (40, n)).astype(float)
        w[0], w[1] = (y == 0), 1.0  # one class only: NaN; all ones: the plain metrics
        a, b = weighted_ranking_metrics(y, s, w), weighted_ranking_matrix(y, s, w, block=16)
        for key in ("auc", "eer"):
            assert np.array_equal(np.isnan(a[key]), np.isnan(b[key]))
            assert np.allclose(a[key], b[key], atol=1e-12, equal_nan=True)
