"""The run summary's ``warnings`` counts the warnings the run logged (issue 46, item 8: it said
0 after two warnings): an unreadable video and a truncated one are two warnings."""

from __future__ import annotations

import logging

from fairforensics.preprocessing.pipeline import run_preprocess
from tests.test_preprocess_pipeline import config, make_ff_tree


def test_the_summary_counts_every_warning_it_logged(tmp_path, caplog) -> None:
    raw = make_ff_tree(tmp_path / "raw")
    videos = raw / "original_sequences" / "youtube" / "c23" / "videos"
    (videos / "000.mp4").write_bytes(b"not a video")  # skipped, with a warning
    data = (videos / "001.mp4").read_bytes()
    (videos / "001.mp4").write_bytes(data[: len(data) // 2])  # cut: fewer frames, or skipped
    cfg = config(raw, tmp_path / "out")
    with caplog.at_level(logging.WARNING, logger="fairforensics.preprocessing"):
        summary = run_preprocess(cfg, workers=1, progress=False)
    logged = [
        r
        for r in caplog.records
        if r.levelno >= logging.WARNING and r.name.startswith("fairforensics.preprocessing")
    ]
    assert len(logged) >= 2, [r.getMessage() for r in logged]
    assert summary.warnings == len(logged), [r.getMessage() for r in logged]
