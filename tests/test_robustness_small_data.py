"""Robustness tables on small data say so (issue 46, item 6): per-class video counts in every
table, a note with the reason of each withheld interval (the small-group rule,
:func:`evaluation.confidence.too_few_units`), and the threshold said once in the header."""

from __future__ import annotations

import numpy as np
import pytest

from fairforensics.evaluation.confidence import MIN_INTERVAL_UNITS
from fairforensics.evaluation.predictions import Predictions
from fairforensics.evaluation.robustness import (
    _SetResult,
    levels_table,
    papers_table,
    robustness_rows,
    threshold_text,
)
from fairforensics.evaluation.settings import load_test_config


def _predictions(n_real: int, n_fake: int, frames: int = 4, seed: int = 0) -> Predictions:
    rng = np.random.default_rng(seed)
    labels = np.repeat([0] * n_real + [1] * n_fake, frames)
    videos = np.repeat([f"v{i}" for i in range(n_real + n_fake)], frames)
    return Predictions(
        dataset=np.full(len(labels), "tiny", dtype=object),
        video_id=videos,
        frame=np.tile(np.arange(frames), n_real + n_fake),
        label=labels,
        score=np.clip(0.3 + 0.4 * labels + rng.normal(0, 0.2, len(labels)), 0, 1),
        method=np.where(labels == 1, "Fake", "real"),
    )


def _rows(n_real: int, n_fake: int) -> list[dict]:
    cases = {"clean": _predictions(n_real, n_fake), "GB:3": _predictions(n_real, n_fake, seed=1)}
    result = _SetResult("tiny", "frames", cases, {}, [], {}, n_real + n_fake)
    cfg = load_test_config(overrides=["n_boot=50", "levels=[frame,video]"])
    return robustness_rows("meso4", "tiny", result, cfg)


def test_one_video_a_class_is_counted_and_each_withheld_interval_says_why() -> None:
    rows = _rows(1, 1)
    assert [(r["real_videos"], r["fake_videos"]) for r in rows] == [(1, 1), (1, 1)]
    for row in rows:
        assert np.isnan(row["video_auc_low"])  # withheld: one video a class
        assert f"fewer than {MIN_INTERVAL_UNITS} real videos (1)" in row["note"], row["note"]
        assert f"fewer than {MIN_INTERVAL_UNITS} fake videos (1)" in row["note"], row["note"]
    for table in (papers_table(rows, "video"), levels_table(rows, "video")):
        records = table.records()
        assert all((r["real"], r["fake"]) == (1, 1) for r in records), records
        assert "too few videos for an interval" in table.title, table.title
        assert f"meso4 on tiny: fewer than {MIN_INTERVAL_UNITS} real videos (1)" in table.title


def test_enough_videos_give_intervals_and_no_note() -> None:
    rows = _rows(6, 7)
    assert [(r["real_videos"], r["fake_videos"]) for r in rows] == [(6, 7), (6, 7)]
    assert all(np.isfinite(r["video_auc_low"]) and r["note"] == "" for r in rows)
    table = papers_table(rows, "video")
    assert table.records()[0]["real"] == 6 and "too few" not in table.title


@pytest.mark.parametrize(
    ("value", "source", "shown"),
    [
        (0.5, "0.5 (default)", "0.5 (default)"),
        (0.6397, "validation threshold of run r", "0.6397 (validation threshold of run r)"),
        (0.5, "the test settings (key threshold; default 0.5)",
         "0.5 (the test settings (key threshold; default 0.5))"),
    ],
)  # fmt: skip
def test_the_threshold_is_said_once(value: float, source: str, shown: str) -> None:
    assert threshold_text(value, source) == shown
