"""Benchmark helpers: FF++-like rendered videos, process-tree CPU, per-stage CPU report."""

from __future__ import annotations

import multiprocessing
import time

import av
import pytest

from fairforensics.benchmarks.preprocess import TreeCPU, bench_pipeline
from fairforensics.benchmarks.videos import VideoSpec, ff_like_videos
from fairforensics.preprocessing import worker
from fairforensics.preprocessing.faces import FaceAnalyzer
from fairforensics.preprocessing.video import read_frames


def _burn(seconds: float) -> None:
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass


def _burn_then_wait(seconds: float, burned, release) -> None:
    _burn(seconds)
    burned.set()
    release.wait(60)


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    return ff_like_videos(
        tmp_path_factory.mktemp("cache"), (VideoSpec(40, 144), VideoSpec(30, 180))
    )


def test_rendered_videos_are_x264_with_b_frames_and_a_face(rendered):
    assert [p.name for p in rendered] == ["000_144p_40.mp4", "001_180p_30.mp4"]
    for path, (w, h, n) in zip(rendered, [(256, 144, 40), (320, 180, 30)], strict=True):
        with av.open(str(path)) as c:
            s = c.streams.video[0]
            assert (s.codec_context.name, s.width, s.height) == ("h264", w, h)
            packets = [p for p in c.demux(s) if p.size]
        assert len(packets) == n
        assert any(p.pts != p.dts for p in packets)  # B-frames (x264 default)
    frame = read_frames(rendered[1], [15])[15]
    assert FaceAnalyzer(upsample=1).detect(frame)


def test_rendered_videos_are_cached(rendered, tmp_path_factory):
    mtimes = [p.stat().st_mtime_ns for p in rendered]
    again = ff_like_videos(rendered[0].parents[1], (VideoSpec(40, 144), VideoSpec(30, 180)))
    assert again == rendered and [p.stat().st_mtime_ns for p in again] == mtimes


def test_tree_cpu_counts_child_processes():
    ctx = multiprocessing.get_context("spawn")
    with TreeCPU(interval=0.05) as tree:
        child = ctx.Process(target=_burn, args=(0.6,))
        child.start()
        child.join()
    assert child.exitcode == 0
    assert tree.seconds >= 0.5


def test_tree_cpu_ignores_what_a_child_used_before_the_block():
    ctx = multiprocessing.get_context("spawn")
    burned, release = ctx.Event(), ctx.Event()
    child = ctx.Process(target=_burn_then_wait, args=(0.6, burned, release))
    child.start()
    assert burned.wait(60)
    with TreeCPU(interval=0.05) as tree:  # the child lives on, as a forkserver does
        time.sleep(0.3)
    release.set()
    child.join()
    assert tree.seconds < 0.3


def test_bench_pipeline_reports_cpu_per_stage(rendered):
    report = bench_pipeline(rendered[:1], num_frames=4, workers=1, size=64)
    assert (report["videos"], report["frames"]) == (1, 4)
    assert report["faces_found"] == 4
    assert set(report["stage_cpu_s_per_frame"]) == set(worker.STAGES)
    assert report["cpu_s_per_frame"] >= report["cpu_s_per_frame_in_items"] > 0
    assert report["decode"] == {"backend": "pyav", "threads": 1, "device": "cpu"}
    assert report["decode_fallbacks"] == 0
