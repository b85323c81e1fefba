"""Seeded synthetic sets and the numbers the statistics give on them, for
``tests/test_stats_same_answers.py``: the stored JSON (``tests/data/stats_reference.json``) holds
what the implementation before issue 47 gave (written once by ``python -m tests.stats_reference``
in a checkout of commit 4f6bcb8, this file beside it), and the test compares today's numbers with
it."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Any

import numpy as np

REFERENCE = Path(__file__).resolve().parent / "data" / "stats_reference.json"


def synthetic(seed: int, n_videos: int = 160, frames: int = 6, ties: bool = False):
    """Labels, scores, two attributes (3 genders x 2 skins of unequal size), video ids and
    attack species; frames of a video share its label, group and most of its score."""
    rng = np.random.default_rng(seed)
    vy = rng.integers(0, 2, n_videos)
    vg = rng.choice(["female", "male", "other"], n_videos, p=[0.5, 0.35, 0.15])
    vk = rng.choice(["dark", "light"], n_videos, p=[0.3, 0.7])
    vm = np.where(vy == 1, rng.choice(["df", "fs", "nt"], n_videos), "real")
    centre = 0.3 * vy + 0.35 + np.where(vg == "male", 0.08 * (0.5 - vy), 0.0)
    vs = centre + rng.normal(0, 0.15, n_videos)
    ids = np.repeat(np.arange(n_videos), frames)
    s = np.clip(vs[ids] + rng.normal(0, 0.05, len(ids)), 0, 1)
    if ties:
        s = np.round(s, 2)
    units = np.array([f"v{i:04d}" for i in ids], dtype=object)
    return vy[ids], s, vg[ids].astype(object), vk[ids].astype(object), units, vm[ids]


def _num(v: Any) -> Any:
    """JSON-safe: NaN and infinities as strings, numpy scalars as Python numbers."""
    if isinstance(v, dict):
        return {str(k): _num(x) for k, x in v.items()}
    if isinstance(v, list | tuple):
        return [_num(x) for x in v]
    if isinstance(v, np.ndarray):
        return [_num(x) for x in v.tolist()]
    if isinstance(v, np.integer):
        return int(v)
    if isinstance(v, float | np.floating):
        f = float(v)
        return f if math.isfinite(f) else repr(f)
    return v


def multiplicity_digest(blocks) -> list[list[int]]:
    """Per replicate: the multiplicities' sum and their dot product with 1..n (exact
    integers), enough to tell two replicate sequences apart."""
    out = []
    for block in blocks:
        block = np.asarray(block, dtype=np.int64)
        ramp = np.arange(1, block.shape[1] + 1, dtype=np.int64)
        out.extend([[int(r.sum()), int(r @ ramp)] for r in block])
    return out


def compute() -> dict[str, Any]:
    """Every figure the reference holds, from today's code."""
    from fairforensics.evaluation.confidence import (
        bootstrap_ci,
        bootstrap_multiplicities,
        stratified_multiplicities,
    )
    from fairforensics.fairness.abf import DEFAULT_XS, POOLED
    from fairforensics.fairness.gaps import curve_auc_intervals, group_gaps, iso_group_intervals
    from fairforensics.fairness.leaderboard_metrics import lin_intervals

    out: dict[str, Any] = {}
    strata = np.repeat(np.arange(4), [7, 12, 1, 30])
    out["stratified_small"] = {
        str(m): np.concatenate(
            list(stratified_multiplicities(np.random.default_rng(5), strata, 25, m))
        ).tolist()
        for m in (True, False)
    }
    big = np.repeat([0, 1], 2100)  # equal cells: several blocks, the old code's working case
    out["stratified_blocks"] = multiplicity_digest(
        stratified_multiplicities(np.random.default_rng(6), big, 2000)
    )
    out["bootstrap_multiplicities"] = multiplicity_digest(
        bootstrap_multiplicities(np.random.default_rng(7), 300, 40, max_cells=3000)
    )
    for tag, seed, n_videos, ties in (
        ("plain", 11, 160, False),
        ("ties", 12, 160, True),
        ("small", 13, 40, False),
    ):
        y, s, g, k, u, m = synthetic(seed, n_videos, ties=ties)
        for level in ("frame", "video"):
            ci = bootstrap_ci(y, s, u, level=level, n_boot=150, seed=2)
            out[f"bootstrap_ci_{tag}_{level}"] = {
                n: [iv.value, iv.low, iv.high, iv.n_undefined, iv.note] for n, iv in ci.items()
            }
        for attr, grp in (("gender", g), ("skin", k)):
            res = group_gaps(y, s, grp, u, n_boot=120, n_perm=150, seed=3)
            out[f"gaps_{tag}_{attr}"] = {
                "values": res.values,
                "group_ci": res.group_ci,
                "notes": res.notes,
                "gaps": {name: gap.as_dict() for name, gap in res.gaps.items()},
                "class_ratio": res.class_ratio,
            }
        for rule in ("pooled", "worst"):
            ci = curve_auc_intervals(
                y,
                s,
                g,
                u,
                xs=DEFAULT_XS,
                threshold_groups=[POOLED, "female", "male"],
                species=m,
                species_rule=rule,
                n_boot=40,
                seed=4,
            )
            out[f"curve_auc_{tag}_{rule}"] = ci
        sel = g == "female"
        out[f"iso_{tag}"] = iso_group_intervals(
            y[sel], s[sel], m[sel], u[sel], threshold=0.5, species_rule="worst", n_boot=60, seed=5
        )
        lin = lin_intervals(y, s, g, u, threshold=0.5, n_boot=100, seed=6)
        out[f"lin_{tag}"] = {n: [e.value, e.low, e.high, e.note] for n, e in lin.items()}
    out.update(_reports())
    return _num(out)


def _reports() -> dict[str, Any]:
    """:func:`fairness.report.fairness_report` (as JSON) at frame and video level, one attribute
    and an intersection, some rows without a value, under both species rules."""
    from fairforensics.evaluation.predictions import Predictions
    from fairforensics.fairness.report import ReportConfig, fairness_report

    y, s, g, k, u, m = synthetic(14, 60, frames=4, ties=True)
    g = g.copy()
    g[:8] = ""  # the first two videos have no gender
    pred = Predictions(
        dataset=np.full(len(y), "syn", dtype=object),
        video_id=u,
        frame=np.tile(np.arange(4), len(y) // 4),
        label=y,
        score=s,
        method=m.astype(object),
        attributes={"gender": g, "skin": k},
    )
    out = {}
    for level, rule in (("frame", "pooled"), ("video", "worst")):
        cfg = ReportConfig(
            level=level,
            species_rule=rule,
            bootstrap=80,
            curve_bootstrap=20,
            permutations=80,
            figures=False,
            seed=7,
        )
        reports = fairness_report(pred, ["gender", "gender,skin"], cfg)
        out[f"report_{level}_{rule}"] = {a: rep.to_json() for a, rep in reports.items()}
    return out


if __name__ == "__main__":
    data = {"made_at": sys.argv[1] if len(sys.argv) > 1 else "", **compute()}
    REFERENCE.write_text(json.dumps(data, indent=0, sort_keys=True) + "\n")
    print(f"wrote {REFERENCE} ({REFERENCE.stat().st_size} bytes)")
