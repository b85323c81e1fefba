"""Ctrl-C / SIGTERM stop preprocessing: pending videos cancelled, index written, resume (#14)."""

from __future__ import annotations

import functools
import json
import multiprocessing
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from fairforensics.preprocessing.index import read_index
from fairforensics.preprocessing.pipeline import run_preprocess
from tests.test_preprocess_pipeline import PHOTO, config, make_ff_tree, snapshot

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def clean_run(tmp_path_factory):
    if not PHOTO.is_file():
        pytest.skip(f"needs ../shared/data (the face photo {PHOTO.name})")
    raw = make_ff_tree(tmp_path_factory.mktemp("ff") / "raw", n_frames=12)
    out = tmp_path_factory.mktemp("clean")
    run_preprocess(config(raw, out), workers=1, progress=False)
    return raw, out


def command(raw: Path, out: Path, workers: int) -> list[str]:
    sets = [
        f"dataset.root={raw}",
        f"output.root={out}",
        f"dataset.attributes.csv={raw / 'attributes.csv'}",
        "sampling.num_frames=4",
        "align.size=64",
        "dataset.options.methods=[Deepfakes]",
        "dataset.options.masks=true",
        "max_failed_share=1",  # 2 of the 10 videos fail on purpose (make_ff_tree)
    ]
    return [sys.executable, str(ROOT / "scripts" / "preprocess.py"),
            "--config", str(ROOT / "configs" / "preprocess" / "demo.yaml"),
            "--workers", str(workers), "--no-progress"] + [a for s in sets for a in ("--set", s)]  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize(
    ("sig", "workers", "code"), [(signal.SIGINT, 2, 130), (signal.SIGTERM, 1, 143)]
)
def test_a_signal_stops_writes_the_index_and_the_rerun_resumes(
    clean_run, tmp_path, sig, workers, code
):
    raw, clean = clean_run
    out = tmp_path / "out"
    cmd = command(raw, out, workers)
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 120
    while time.time() < deadline and proc.poll() is None:
        if any((out / "demo").rglob("_done.json")):  # deterministic: after the first video
            proc.send_signal(sig)
            break
        time.sleep(0.01)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == code, stderr
    # the last error line (only the summary of repeated warnings may follow it)
    errors = [line for line in stderr.splitlines() if " ERROR " in line]
    found = re.search(
        r"interrupted: (\d+) of (\d+) videos done; re-run the same command", errors[-1]
    )
    assert found, stderr
    done, total = int(found[1]), int(found[2])
    assert total == 10 and 1 <= done < 8  # pending videos were cancelled, not drained
    assert "Traceback" not in stderr
    # the index lists exactly the finished videos; the manifest says what is pending
    index = read_index(out / "demo.json", check_files=True)
    assert len(index.videos) == done
    # ... and is marked incomplete, with the true count of what is not done (issue 46, item 5)
    assert index.videos_pending and "not yet (interrupted run)" in index.partial
    assert "is marked incomplete" in errors[-1]
    manifest = json.loads((out / "demo.manifest.json").read_text())
    assert manifest["interrupted"] is True and manifest["pending"]
    # no half video counted as done: every video folder is whole or hidden
    for folder in (out / "demo").rglob("frames"):
        assert (folder.parent / "_done.json").is_file() or folder.parent.name.startswith(".")
    rerun = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert rerun.returncode == 0, rerun.stderr
    summary = json.loads(rerun.stdout)
    assert summary["videos_cached"] >= done and summary["videos_done"] == 8
    assert not list((out / "demo").rglob(".*.tmp-*"))
    assert snapshot(out) == snapshot(clean)
    assert read_index(out / "demo.json").videos_pending is None
    manifest = json.loads((out / "demo.manifest.json").read_text())
    assert manifest["interrupted"] is False and manifest["pending"] == []


def slow_work(flag_dir, seconds, item):
    """Mark the item as started, then work for ``seconds``."""
    from fairforensics.preprocessing.worker import VideoResult

    (Path(flag_dir) / item.id).touch()
    time.sleep(seconds)
    return VideoResult(key=item.key, frames_sampled=1)


def signal_when_started(flag_dir: Path, count: int, signals: int) -> threading.Thread:
    """A thread that sends SIGINT ``signals`` times (0.5 s apart) once ``count`` items started."""

    def run() -> None:
        deadline = time.time() + 60
        while len(list(flag_dir.iterdir())) < count and time.time() < deadline:
            time.sleep(0.01)
        for _ in range(signals):
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.5)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


@pytest.mark.slow
@pytest.mark.parametrize("signals", [1, 2])
def test_the_pool_finishes_running_videos_then_stops_or_abandons_them(tmp_path, signals):
    """One signal: started videos finish, queued ones never start. Two: running ones abandoned."""
    from fairforensics.preprocessing.datasets.base import SourceItem
    from fairforensics.preprocessing.pipeline import StopRequested, _run_pool, stop_on_signals

    flags = tmp_path / "started"
    flags.mkdir()
    items = [SourceItem(f"{k:03d}", 0, "real", "train", Path("x"), f"r/{k}") for k in range(6)]
    seconds = 2.0 if signals == 1 else 60.0
    results = []
    thread = signal_when_started(flags, 2, signals)
    start = time.time()
    with pytest.raises(StopRequested) as info, stop_on_signals():
        _run_pool(items, functools.partial(slow_work, str(flags), seconds), 2, results.append)
    thread.join()
    assert info.value.signum == signal.SIGINT
    started = sorted(p.name for p in flags.iterdir())
    assert len(started) == 2  # nothing queued started after the signal
    if signals == 1:
        assert sorted(r.key[1] for r in results) == started
    else:
        assert results == [] and time.time() - start < 30  # did not wait for the 60 s videos
        assert not multiprocessing.active_children()  # the workers were killed


def test_a_signal_before_any_video_stops_and_restores_the_handlers(tmp_path, monkeypatch):
    from fairforensics.preprocessing import pipeline
    from fairforensics.preprocessing.config import load_preprocess_config

    def listing_that_gets_sigterm(cfg):
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(30)  # the handler raises here
        raise AssertionError("SIGTERM did not stop the run")

    monkeypatch.setattr(pipeline, "list_items", listing_that_gets_sigterm)
    demo = ROOT / "configs" / "preprocess" / "demo.yaml"
    cfg = load_preprocess_config(demo, overrides=[f"output.root={tmp_path}"])
    before = signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)
    with pytest.raises(pipeline.StopRequested) as info:
        run_preprocess(cfg, workers=1, progress=False)
    assert info.value.signum == signal.SIGTERM
    assert (signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)) == before
    assert not (tmp_path / "demo.json").exists()
