"""`make demo`'s data in clip mode through a (tiny) video detector, end to end, by the commands:
preprocess (sampling.mode: clips) -> train -> test -> fairness -> metamorphic, then one sweep
with an image detector on per-frame data and the video detector on clips: one leaderboard, and a
killed sweep run redone while the finished one is not (the sweep's end-to-end test)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from fairforensics.benchmarks import sweep as sw
from fairforensics.evaluation.metrics import auc
from fairforensics.evaluation.predictions import read_predictions
from fairforensics.preprocessing.index import read_index

REPO = Path(__file__).resolve().parents[1]
IMPORT = ("--import", "tests.clip_detectors")  # registers _tiny_clip, a video detector


def run(*args: str) -> str:
    done = subprocess.run(
        [sys.executable, *args], cwd=REPO, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, f"{args[0]} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout


def preprocess(raw: Path, out: Path, *sets: str) -> None:
    args = ["scripts/preprocess.py", "--config", "configs/preprocess/demo.yaml"]
    for item in (
        f"dataset.root={raw}",
        f"dataset.attributes.csv={raw / 'attributes.csv'}",
        f"output.root={out}",
        "align.size=64",
        *sets,
    ):
        args += ["--set", item]
    run(*args, "--workers", "1", "--no-progress")


@pytest.mark.e2e
@pytest.mark.slow
def test_demo_clips_end_to_end(tmp_path: Path) -> None:
    raw, clips, frames = tmp_path / "raw", tmp_path / "clips", tmp_path / "frames"
    run(
        "scripts/make_demo_data.py",
        "--out",
        str(raw),
        "--videos",
        "10",
        "--frames",
        "7",
        "--size",
        "256",
    )
    preprocess(raw, clips, "sampling.mode=clips", "sampling.clip_size=3", "sampling.num_clips=2")
    index = read_index(clips / "demo.json", check_files=True)
    assert len(index.videos) == 20
    assert all(
        v.clips == [[0, 3], [3, 3]] and v.frame_indices == [0, 1, 2, 4, 5, 6] for v in index.videos
    )

    sets = ["train.epochs=2", "train.batch_size=4", "train.frame_num=6", "train.test_frame_num=6"]
    sets += [f"data.data_root={clips}", f"output_dir={tmp_path / 'runs'}", "run_name=clip"]
    args = ["scripts/train.py", "--detector", "_tiny_clip", "--config", "configs/train/demo.yaml"]
    run(*args, *IMPORT, *(x for s in sets for x in ("--set", s)))
    run_dir = tmp_path / "runs" / "clip"
    assert (run_dir / "checkpoints" / "best.pt").is_file()

    out = tmp_path / "eval"
    table = run(
        "scripts/test.py", "--run", str(run_dir), "--test-data", "demo", "--data-root",
        str(clips), "--out", str(out), *IMPORT,
    )  # fmt: skip
    assert "clip-level" in table and "video-level" in table
    pred = read_predictions(out / "predictions" / "demo.csv")
    assert len(pred) == 2 * 4 and set(pred.unit) == {"clip"} and set(pred.label) == {0, 1}
    metrics = json.loads((out / "metrics" / "demo.json").read_text())
    assert metrics["frame"]["unit"] == "clip" and metrics["video"]["n_videos"] == 4

    summary = run(
        "scripts/fairness.py", "--predictions", str(out / "predictions" / "demo.csv"),
        "--attributes", "lighting", "--out", str(tmp_path / "fairness"), "--no-figures",
    )  # fmt: skip
    assert "lighting (clip level)" in summary and "bright" in summary and "dim" in summary

    run(
        "scripts/metamorphic.py", "--run", str(run_dir), "--test-data", "demo", "--relations",
        "configs/metamorphic/makeup.yaml", "--out", str(tmp_path / "meta"), "--frame-num", "3",
        "--set", "group_key=lighting", "--set", "groups=[bright, dim]", "--set", "max_yaw=null",
        *IMPORT,
    )  # fmt: skip
    rows = read_predictions(next((tmp_path / "meta").rglob("*benchmark*.csv")))
    assert set(rows.unit) == {"clip"}

    preprocess(raw, frames, "sampling.num_frames=3")
    tiny = ["train.epochs=1", "train.batch_size=4", "train.frame_num=6", "train.test_frame_num=6"]
    tiny += ["train.resolution=32", "data.num_workers=0", "device=cpu"]
    sweep = tmp_path / "sweep"
    bench = (
        "scripts/benchmark.py", "--detectors", "meso4", "_tiny_clip", "--train-data", "demo",
        "--val-data", "demo", "--test-data", "demo", "--data-root", str(frames),
        "--clip-data-root", str(clips), "--out", str(sweep), "--seeds", "0", "1", *IMPORT,
        *(x for s in tiny for x in ("--set", s)),
    )  # fmt: skip
    run(*bench)
    # one leaderboard (issue 38: two detectors, two seeds): each detector's row with its type,
    # its AUC on demo (the mean over its seeds' predictions, frames for meso4, clips for
    # _tiny_clip), its spread across seeds and its interval (undefined here: 2 videos a class)
    board = json.loads((sweep / "leaderboard" / "leaderboard_frame_auc.json").read_text())
    assert board["columns"] == [
        "Type", "Detector", "demo", "Within Avg.", "Within Top3", "Within Tied",
        "Seeds", "Threshold", "Chosen by",
    ]  # fmt: skip
    rows = {row["Detector"]: row for row in board["rows"]}
    assert sorted(rows) == ["_tiny_clip", "constant", "meso4", "random"]  # with the baselines
    assert (rows["meso4"]["Type"], rows["_tiny_clip"]["Type"]) == ("Naive", "Video")
    for name, unit, n in (("meso4", "frame", 3 * 4), ("_tiny_clip", "clip", 2 * 4)):
        aucs = []
        for k in (0, 1):
            pred = read_predictions(sweep / name / f"seed{k}" / "eval" / "predictions" / "demo.csv")
            assert set(pred.unit) == {unit} and len(pred) == n
            aucs.append(auc(pred.label, pred.score))
        assert rows[name]["demo"] == pytest.approx(np.mean(aucs), abs=1e-12)
        assert rows[name]["demo sd"] == pytest.approx(np.std(aucs, ddof=1), abs=1e-12)
        assert "demo low" in rows[name] and "demo tied" in rows[name]
        assert rows[name]["Within Avg."] == rows[name]["demo"]  # trained on demo (issue 46)
        assert rows[name]["Chosen by"] == "run's validation threshold"
    assert rows["constant"]["Type"] == "Baseline" and rows["constant"]["demo"] == 0.5
    board_dir = sweep / "leaderboard"
    fair = json.loads((board_dir / "fairness" / "fairness_demo_lighting.json").read_text())
    assert {"constant", "meso4"} <= {r["Detector"] for r in fair["rows"]}
    assert "xAUC bright>dim" in fair["columns"] and "F_DP" in fair["columns"]
    costs = json.loads((board_dir / "costs.json").read_text())
    assert {r["detector"] for r in costs["rows"]} == {"meso4", "_tiny_clip"}
    assert "class='baseline'" in (board_dir / "index.html").read_text()
    html = (sweep / "leaderboard" / "report.html").read_text()
    assert "AUC (frame/clip level)" in html

    # resume: a run killed before its completion record is redone, a finished one is skipped
    finished = (sweep / "_tiny_clip" / "seed1" / sw.DONE).stat().st_mtime_ns
    (sweep / "meso4" / "seed0" / sw.DONE).unlink()
    run(*bench)
    assert (sweep / "meso4" / "seed0" / sw.DONE).is_file()
    assert (sweep / "_tiny_clip" / "seed1" / sw.DONE).stat().st_mtime_ns == finished
