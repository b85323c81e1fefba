"""Preprocessing fails loudly: too many failed videos is exit 1 with a summary; a cached re-run
reports the faces its index holds."""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path

import pytest

import fairforensics.cli.preprocess as cli
from fairforensics.configs import ConfigError
from fairforensics.preprocessing.config import load_preprocess_config
from fairforensics.preprocessing.index import read_index
from fairforensics.preprocessing.pipeline import (
    PartialDataset,
    RunSummary,
    TooManyFailures,
    check_failures,
)
from tests.testdata import CELEBRITIES, REPO


def csv_dataset(root: Path) -> Path:
    """Two real photos, one corrupt image and one missing video, listed in a CSV."""
    root.mkdir(parents=True)
    for name in ("img1.jpg", "img2.jpg"):
        shutil.copy(CELEBRITIES / name, root / name)
    (root / "broken.jpg").write_bytes(b"not an image")
    (root / "list.csv").write_text(
        "path,label,split\nimg1.jpg,0,train\nimg2.jpg,1,test\nbroken.jpg,0,train\ngone.mp4,1,test\n"
    )
    return root


def argv(raw: Path, out: Path, *extra: str) -> list[str]:
    sets = [
        f"dataset.root={raw}",
        "dataset.options.csv=list.csv",
        f"output.root={out}",
        "sampling.num_frames=1",
        "align.size=64",
        *extra,
    ]
    return [
        "--config",
        str(REPO / "configs" / "preprocess" / "generic.yaml"),
        *[a for s in sets for a in ("--set", s)],
        "--workers",
        "1",
        "--no-progress",
    ]


def test_half_the_videos_failing_exits_1_then_a_cached_run_counts_its_faces(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture
) -> None:
    raw, out = csv_dataset(tmp_path / "raw"), tmp_path / "out"
    # the CSV names a file that is not on disk: a listed video missing, as in every layout, so
    # more than max_failed_share of them stops the run before processing (issue 46, item 5)
    with pytest.raises(PartialDataset, match="1 of the 4 videos the dataset lists are not on"):
        cli.main(argv(raw, out))
    assert not (out / "generic.json").exists()
    partial = "dataset.options.allow_partial=true"  # the subset is intended: not a failure
    with caplog.at_level(logging.INFO):
        assert cli.main(argv(raw, out, partial)) == 1
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 1
    assert errors[0].startswith(
        "1 of 3 listed videos failed (33%, more than max_failed_share 0.05)"
    )
    assert "1 unreadable image" in errors[0]
    assert str(out / "generic.manifest.json") in errors[0]
    assert "--set max_failed_share=0.34" in errors[0]
    # the index and the manifest of what worked are written all the same
    index = read_index(out / "generic.json", check_files=True)
    assert len(index.videos) == 2 and index.partial == "3 of 4 listed videos"
    manifest = json.loads((out / "generic.manifest.json").read_text())
    assert manifest["skipped_reasons"] == {"unreadable image": 1}
    capsys.readouterr()

    caplog.clear()
    with caplog.at_level(logging.INFO):
        assert cli.main(argv(raw, out, partial, "max_failed_share=0.34")) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["videos_cached"] == 2 and summary["faces"] == 0
    assert summary["face_crops"] == 2  # not "0 frames with a face"
    assert any("2 face crops in the index" in r.getMessage() for r in caplog.records)


def test_failure_share_check_and_key() -> None:
    summary = RunSummary(Path("d.json"), Path("d.manifest.json"), videos_total=100)
    summary.videos_skipped, summary.skipped_reasons = 5, {"no face in any frame": 5}
    check_failures(summary, 0.05)  # exactly the share: accepted
    summary.videos_skipped = 6
    with pytest.raises(TooManyFailures, match=r"6 of 100 listed videos failed \(6%"):
        check_failures(summary, 0.05)
    check_failures(summary, 0.06)
    with pytest.raises(ConfigError, match="max_failed_share must be in"):
        load_preprocess_config(
            overrides=[
                "dataset.name=x",
                "dataset.type=generic",
                "dataset.root=.",
                "max_failed_share=2",
            ]
        )
