"""The PyAV reader: kept frames pixel-identical to a full sequential decode, and its fallback."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import av
import numpy as np
import pytest
from skimage import data

from fairforensics.configs.loader import ConfigError
from fairforensics.preprocessing import pyav_reader
from fairforensics.preprocessing.config import load_preprocess_config
from fairforensics.preprocessing.pyav_reader import _ranges, read_frames_pyav
from fairforensics.preprocessing.video import (
    MediaReadError,
    count_frames,
    read_frames,
    sample_clips,
    sample_indices,
)
from tests.testdata import VIDEOS, shared


def _frames(n: int, w: int = 128, h: int = 96) -> list[np.ndarray]:
    """A camera panning over a real photo (scikit-image's astronaut), with a zoom drift."""
    img = data.astronaut()
    out = []
    for i in range(n):
        step = 2 + (i // 40) % 2
        y = int(60 + 50 * np.sin(i / 15))
        x = (7 * i) % (img.shape[1] - w * step)
        out.append(np.ascontiguousarray(img[y : y + h * step : step, x : x + w * step : step]))
    return out


def _encode(path: Path, frames: list[np.ndarray], pts: list[int] | None = None, **opts) -> Path:
    """x264 (default GOP and B-frames unless ``opts``) into mp4; ``pts`` in 1/1000 s."""
    with av.open(str(path), "w") as c:
        s = c.add_stream("libx264", rate=25, options=opts)
        s.height, s.width = frames[0].shape[:2]
        s.pix_fmt = "yuv420p"
        if pts is not None:
            s.codec_context.time_base = Fraction(1, 1000)
        for i, rgb in enumerate(frames):
            frame = av.VideoFrame.from_ndarray(rgb, format="rgb24")
            if pts is not None:
                frame.pts, frame.time_base = pts[i], Fraction(1, 1000)
            for packet in s.encode(frame):
                c.mux(packet)
        for packet in s.encode():
            c.mux(packet)
    return path


def _sequential(path: Path) -> list[np.ndarray]:
    with av.open(str(path)) as c:
        return [f.to_ndarray(format="rgb24") for f in c.decode(c.streams.video[0])]


def _packet_info(path: Path) -> tuple[bool, int]:
    """(has B-frames, number of keyframes)."""
    with av.open(str(path)) as c:
        s = c.streams.video[0]
        packets = [(p.pts, p.dts, p.is_keyframe) for p in c.demux(s) if p.size]
    return any(pts != dts for pts, dts, _ in packets), sum(k for _, _, k in packets)


@pytest.fixture(scope="module")
def videos(tmp_path_factory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("decode")
    frames = _frames(220)
    rng = np.random.default_rng(0)
    vfr_pts = np.cumsum(rng.integers(15, 90, size=len(frames))).tolist()
    return {
        "default_gop": _encode(tmp / "default.mp4", frames),
        "short_gop": _encode(tmp / "gop.mp4", frames, g="20", keyint_min="20"),
        "vfr": _encode(tmp / "vfr.mp4", frames, pts=vfr_pts, g="30"),
    }


def _check(path: Path, keep: list[int], threads: int = 1) -> None:
    full = _sequential(path)
    got = read_frames_pyav(path, keep, threads=threads)
    assert sorted(got) == [i for i in keep if i < len(full)]
    for i in got:
        assert np.array_equal(got[i], full[i]), f"frame {i} differs"


@pytest.mark.parametrize("name", ["default_gop", "short_gop", "vfr"])
@pytest.mark.parametrize("num", [1, 7, 32, 220])
def test_kept_frames_equal_sequential_decode(videos, name, num, monkeypatch):
    path = videos[name]
    keep = sample_indices(count_frames(path), "fixed_num_frames", num)
    for gap in (0, 10**9):  # always seek / never seek
        monkeypatch.setattr(pyav_reader, "SEEK_GAP", gap)
        _check(path, keep)


@pytest.mark.parametrize("name", ["default_gop", "short_gop"])
def test_clip_runs_equal_sequential_decode(videos, name, monkeypatch):
    keep = [i for clip in sample_clips(count_frames(videos[name]), 16, 4) for i in clip]
    assert len(keep) == 64 and pyav_reader._ranges(list(range(220)), [True] * 220, keep[:16]) == [
        (keep[0], keep[15])
    ]  # one run: one decoder range
    for gap in (0, 10**9):
        monkeypatch.setattr(pyav_reader, "SEEK_GAP", gap)
        _check(videos[name], keep)


def test_generated_videos_have_b_frames_and_keyframes(videos):
    has_b, default_keys = _packet_info(videos["default_gop"])  # keyint 250, scene cuts
    assert has_b and default_keys < 10
    has_b, keys = _packet_info(videos["short_gop"])
    assert has_b and keys >= 11
    assert _packet_info(videos["vfr"])[0]
    with av.open(str(videos["vfr"])) as c:
        pts = sorted(p.pts for p in c.demux(c.streams.video[0]) if p.size)
    assert len(set(np.diff(pts).tolist())) > 10  # irregular frame durations


def test_irregular_and_edge_indices(videos, monkeypatch):
    monkeypatch.setattr(pyav_reader, "SEEK_GAP", 5)
    for keep in ([0], [219], [3, 4, 5, 100, 101, 180], [0, 219, 500], [250]):
        for name in ("short_gop", "vfr"):
            _check(videos[name], keep)


def test_decoder_threads_give_the_same_frames(videos):
    keep = sample_indices(220, "fixed_num_frames", 16)
    _check(videos["short_gop"], keep, threads=2)


def test_every_frame_and_opencv_agree(videos):
    path = videos["short_gop"]
    keep = [0, 19, 20, 21, 77, 219]
    full = read_frames(path, None)
    assert len(full) == 220 == count_frames(path)
    cv = read_frames(path, keep, backend="opencv")
    pyav = read_frames(path, keep, backend="pyav")
    gray = read_frames(path, keep, gray=True)
    for i in keep:
        assert np.array_equal(full[i], pyav[i])
        # the same frame numbers; the colour conversion of both is FFmpeg's swscale
        assert np.abs(cv[i].astype(int) - pyav[i].astype(int)).mean() < 1.0
        assert gray[i].shape == pyav[i].shape[:2]


def test_real_clip(monkeypatch):
    monkeypatch.setattr(pyav_reader, "SEEK_GAP", 8)
    path = VIDEOS / "short_hamilton_clip.mp4"
    _check(path, sample_indices(count_frames(path), "fixed_num_frames", 32))


@pytest.mark.extended
def test_real_1080p_clip(monkeypatch):
    path = shared("data", "videos", "facenet_walk_1080p.mp4")
    monkeypatch.setattr(pyav_reader, "SEEK_GAP", 8)
    _check(path, sample_indices(count_frames(path), "fixed_num_frames", 32))


def test_real_frames_reencoded_with_b_frames(tmp_path):
    path = VIDEOS / "short_hamilton_clip.mp4"
    frames = [f[::2, ::2].copy() for f in _sequential(path)[:150]]
    out = _encode(tmp_path / "hamilton_b.mp4", frames)
    assert _packet_info(out)[0]
    _check(out, sample_indices(150, "fixed_num_frames", 32))


def test_fallback_to_opencv_is_logged(videos, monkeypatch, caplog):
    def broken(*args, **kwargs):
        raise av.error.InvalidDataError(1094995529, "Invalid data found")

    monkeypatch.setattr(pyav_reader, "read_frames_pyav", broken)
    notes: list[str] = []
    got = read_frames(videos["short_gop"], [0, 50], notes=notes)
    assert sorted(got) == [0, 50] and got[0].shape == (96, 128, 3)
    assert len(notes) == 1 and "read with OpenCV" in notes[0]
    assert "PyAV (cpu) could not decode" in caplog.text


def test_unreadable_file_fails_with_both_readers(tmp_path):
    bad = tmp_path / "bad.mp4"
    bad.write_bytes(b"not a video" * 100)
    notes: list[str] = []
    with pytest.raises(MediaReadError, match="cannot open video"):
        read_frames(bad, [0], notes=notes)
    assert notes and "PyAV" in notes[0]


def test_unknown_backend(videos):
    with pytest.raises(ValueError, match="allowed: pyav, opencv"):
        read_frames(videos["short_gop"], [0], backend="ffmpeg")


def test_ranges_hand_computed():
    # decode order I0 P3 B1 B2 | I4 P7 B5 B6 (pts), keyframes at positions 0 and 4
    pts = [0, 3, 1, 2, 4, 7, 5, 6]
    key = [True, False, False, False, True, False, False, False]
    assert _ranges(pts, key, [2]) == [(0, 3)]
    assert _ranges(pts, key, [5]) == [(4, 6)]
    assert _ranges(pts, key, [1, 6]) == [(0, 2), (4, 7)]
    assert _ranges(pts, key, [3, 4]) == [(0, 1), (4, 4)]  # B1, B2 need no decoding
    assert _ranges(pts, key, [2, 4]) == [(0, 4)]  # adjacent ranges merge
    # an open GOP: B frames 2, 3 after keyframe 4 in decode order belong to the GOP before
    pts = [0, 1, 4, 2, 3]
    key = [True, False, True, False, False]
    assert _ranges(pts, key, [3]) == [(0, 4)]


def test_decode_config_validated():
    cfg = load_preprocess_config(
        overrides=["dataset.name=x", "dataset.type=generic", "dataset.root=."]
    )
    assert (cfg.decode.backend, cfg.decode.threads) == ("pyav", 1)
    base = ["dataset.name=x", "dataset.type=generic", "dataset.root=."]
    with pytest.raises(ConfigError, match="decode"):
        load_preprocess_config(overrides=[*base, "decode.backend=gstreamer"])
    with pytest.raises(ConfigError, match="decode.threads"):
        load_preprocess_config(overrides=[*base, "decode.threads=0"])


def _cuda_decoder_works(path: Path) -> bool:
    from av.codec.hwaccel import HWAccel

    try:
        with av.open(str(path), hwaccel=HWAccel("cuda", allow_software_fallback=False)) as c:
            next(c.decode(c.streams.video[0]))
    except Exception:  # no GPU, no driver, or an FFmpeg without NVDEC
        return False
    return True


def test_cuda_decode_or_logged_fallback(videos, caplog):
    path = videos["short_gop"]
    keep = sample_indices(220, "fixed_num_frames", 16)
    notes: list[str] = []
    got = read_frames(path, keep, device="cuda", notes=notes)
    cpu = read_frames(path, keep)
    assert sorted(got) == keep
    if _cuda_decoder_works(path):  # NVDEC: same frames; RGB from NV12 may round differently
        assert not notes
        for i in keep:
            assert np.abs(got[i].astype(int) - cpu[i].astype(int)).mean() < 1.0
    else:  # this machine: the CPU reader took over, and said so
        assert len(notes) == 1 and "PyAV (cuda)" in notes[0] and "OpenCV" in notes[0]
        assert "PyAV (cuda) could not decode" in caplog.text
        for i in keep:
            assert np.abs(got[i].astype(int) - cpu[i].astype(int)).mean() < 1.0


def test_cuda_device_needs_pyav():
    base = ["dataset.name=x", "dataset.type=generic", "dataset.root=."]
    cfg = load_preprocess_config(overrides=[*base, "decode.device=cuda"])
    assert cfg.decode.device == "cuda"
    with pytest.raises(ConfigError, match="decode.backend: pyav"):
        load_preprocess_config(overrides=[*base, "decode.device=cuda", "decode.backend=opencv"])


def _unopenable(folder: Path) -> dict[str, Path]:
    """A text file named .mp4, an mp4 cut off before its index, an empty file, audio only."""
    files = {name: folder / name for name in ("text.mp4", "cut.mp4", "empty.mp4", "audio.mkv")}
    files["text.mp4"].write_text("hello, not a video\n")
    files["cut.mp4"].write_bytes((VIDEOS / "short_hamilton_clip.mp4").read_bytes()[:20000])
    files["empty.mp4"].write_bytes(b"")
    with av.open(str(files["audio.mkv"]), "w") as container:
        stream = container.add_stream("pcm_s16le", rate=8000)
        frame = av.AudioFrame.from_ndarray(
            np.zeros((1, 800), np.int16), format="s16", layout="mono"
        )
        frame.sample_rate = 8000
        for packet in [*stream.encode(frame), *stream.encode(None)]:
            container.mux(packet)
    return files


def test_why_a_video_does_not_open(tmp_path: Path) -> None:
    """Issue 40, item 9: the reason, not only "cannot open video"."""
    from fairforensics.preprocessing.video import MediaReadError, count_frames

    files = _unopenable(tmp_path)
    want = {
        "text.mp4": "no video container",
        "cut.mp4": "truncated or damaged MP4/QuickTime file",
        "empty.mp4": "empty file",
        "audio.mkv": "no video stream (the container holds: audio)",
    }
    for name, reason in want.items():
        with pytest.raises(MediaReadError, match=r"cannot open video: .*") as info:
            count_frames(files[name])
        assert reason in str(info.value), (name, str(info.value))


def test_libav_lines_stay_off_the_terminal_unless_verbose(tmp_path: Path) -> None:
    """OpenCV's FFmpeg prints ``moov atom not found`` for a cut-off mp4 on stderr, unless kept
    quiet (the default); ``libav_messages(True)`` (--verbose) lets it through."""
    import os
    import subprocess
    import sys

    cut = _unopenable(tmp_path)["cut.mp4"]
    repo = Path(__file__).resolve().parents[1]
    env = {k: v for k, v in os.environ.items() if k != "OPENCV_FFMPEG_LOGLEVEL"}
    env["PYTHONPATH"] = str(repo)
    stderr = {}
    for verbose in (False, True):
        loud = "from fairforensics.preprocessing.video_problems import libav_messages\n"
        code = (
            "from fairforensics.preprocessing.video import MediaReadError, count_frames\n"
            + (loud + "libav_messages(True)\n" if verbose else "")  # not verbose: the default
            + f"try:\n    count_frames({str(cut)!r})\nexcept MediaReadError as e:\n    print(e)\n"
        )
        done = subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
        )
        assert "truncated or damaged" in done.stdout, done.stdout + done.stderr
        stderr[verbose] = done.stderr
    assert "moov atom not found" not in stderr[False], stderr[False]
    assert "moov atom not found" in stderr[True], stderr[True]
