"""``fairforensics perturb`` (issue 33): images and videos, lossless video outputs, VC through
PyAV's libx264, audio kept, one-line errors; the reference's check (extended)."""

from __future__ import annotations

import os
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import av
import cv2
import numpy as np
import pytest

from fairforensics.cli.errors import run_cli
from fairforensics.cli.perturb import main as perturb_main
from fairforensics.preprocessing.perturb_files import perturb_file
from fairforensics.preprocessing.perturbations import Perturbation, perturb_frame
from fairforensics.preprocessing.video import read_frames, read_image
from tests.testdata import CELEBRITIES, REPO, shared

N_FRAMES = 12


def _write_video(path: Path, audio: bool = True) -> list[np.ndarray]:
    """A 64x48 video of moving stripes (H.264, 10 fps) with a short AAC tone; its RGB frames."""
    yy, xx = np.mgrid[0:48, 0:64]
    frames = []
    with av.open(str(path), "w") as out:
        video = out.add_stream("libx264", rate=10, options={"crf": "18"})
        video.width, video.height, video.pix_fmt = 64, 48, "yuv420p"
        sound = out.add_stream("aac", rate=8000) if audio else None
        for i in range(N_FRAMES):
            rgb = np.stack([(xx * 4 + i * 9) % 256, (yy * 5) % 256, (xx + yy + i * 20) % 256], 2)
            frames.append(rgb.astype(np.uint8))
            out.mux(video.encode(av.VideoFrame.from_ndarray(frames[-1], format="rgb24")))
        out.mux(video.encode(None))
        if sound is not None:
            t = np.arange(9600) / 8000
            tone = (0.3 * np.sin(2 * np.pi * 440 * t)).astype(np.float32)[None]
            frame = av.AudioFrame.from_ndarray(tone, format="fltp", layout="mono")
            frame.sample_rate, frame.pts, frame.time_base = 8000, 0, Fraction(1, 8000)
            out.mux(sound.encode(frame))
            out.mux(sound.encode(None))
    return frames


def _decoded(path: Path) -> list[np.ndarray]:
    frames = read_frames(path, None)
    return [frames[i] for i in sorted(frames)]


def _has_audio(path: Path) -> bool:
    with av.open(str(path)) as c:
        return bool(c.streams.audio) and any(p.size for p in c.demux(c.streams.audio[0]))


@pytest.fixture(scope="module")
def video(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("perturb") / "stripes.mp4"
    _write_video(path)
    return path


@pytest.mark.parametrize("suffix", [".mkv", ".mp4"])
def test_video_frames_are_written_losslessly(video, tmp_path, suffix) -> None:
    out = tmp_path / f"gb{suffix}"
    chain = perturb_file(video, out, "GB:2")
    assert chain == [Perturbation("GB", 2)]
    got, source = _decoded(out), _decoded(video)
    assert len(got) == N_FRAMES
    for a, b in zip(source, got, strict=True):
        assert np.array_equal(perturb_frame(a, chain[0]), b)
    assert _has_audio(out)


def test_random_perturbations_repeat_with_the_seed(video, tmp_path) -> None:
    a, b, c = tmp_path / "a.mkv", tmp_path / "b.mkv", tmp_path / "c.mkv"
    perturb_file(video, a, "GNC:3+BW:1", seed=5)
    perturb_file(video, b, "GNC:3+BW:1", seed=5)
    perturb_file(video, c, "GNC:3+BW:1", seed=6)
    assert a.read_bytes() == b.read_bytes() != c.read_bytes()


def test_video_compression_reencodes_the_video(video, tmp_path) -> None:
    mild, hard = tmp_path / "vc1.mp4", tmp_path / "vc5.mp4"
    perturb_file(video, mild, "VC", level=1)
    perturb_file(video, hard, "VC", level=5)
    source = _decoded(video)

    def psnr(path: Path) -> float:
        got = _decoded(path)
        assert len(got) == N_FRAMES
        mse = [np.mean((a.astype(float) - b) ** 2) for a, b in zip(source, got, strict=True)]
        return float(10 * np.log10(255**2 / np.mean(mse)))

    assert 20 < psnr(hard) < psnr(mild) < 60
    assert hard.stat().st_size < mild.stat().st_size
    with av.open(str(hard)) as c:
        stream = c.streams.video[0]
        assert stream.codec_context.name == "h264" and stream.codec_context.pix_fmt == "yuv420p"
        assert c.streams.audio[0].codec_context.name == "aac"
    chained = tmp_path / "chain.mkv"
    assert [str(p) for p in perturb_file(video, chained, "GB:2+VC:3")] == ["GB:2", "VC:3"]
    assert len(_decoded(chained)) == N_FRAMES


def test_image_output_equals_the_frame_function(tmp_path) -> None:
    src = CELEBRITIES / "img1.jpg"
    out = tmp_path / "cs.png"
    perturb_file(src, out, "CS", level=2)
    want = perturb_frame(read_image(src), Perturbation("CS", 2))
    assert np.array_equal(cv2.cvtColor(cv2.imread(str(out)), cv2.COLOR_BGR2RGB), want)


def _run(argv: list[str], capsys) -> tuple[int, str]:
    with pytest.raises(SystemExit) as info:
        run_cli(perturb_main, argv)
    return info.value.code, capsys.readouterr().err.strip()


def test_bad_input_is_one_line_with_exit_2(video, tmp_path, capsys) -> None:
    image = str(CELEBRITIES / "img1.jpg")
    corrupt = tmp_path / "corrupt.mp4"
    corrupt.write_bytes(b"\x00\x00\x00\x18ftypmp42" + os.urandom(2000))
    cases = [
        (
            ["--type", "XX", "--level", "1", image, str(tmp_path / "o.png")],
            "unknown perturbation type",
        ),
        (["--type", "GB", "--level", "7", image, str(tmp_path / "o.png")], "level '7'"),
        (["--type", "VC", "--level", "1", image, str(tmp_path / "o.png")], "video"),
        (["--type", "VC", "--level", "1", str(corrupt), str(tmp_path / "o.mp4")], "corrupt.mp4"),
        (["--type", "GB", "--level", "1", str(video), str(tmp_path / "o.png")], "a video"),
        (["--type", "GB", "--level", "1", str(video), str(tmp_path / "o.webm")], ".webm"),
        (
            ["--type", "GB", "--level", "1", str(tmp_path / "none.png"), str(tmp_path / "o.png")],
            "none.png",
        ),
    ]
    for argv, needle in cases:
        code, err = _run(argv, capsys)
        assert code == 2, argv
        assert err.startswith("error: ") and needle in err and len(err.splitlines()) == 1, err
    assert not list(tmp_path.glob("o.*")) and not list(tmp_path.glob(".o*"))


def test_command_writes_meta_and_loads_no_torch(tmp_path) -> None:
    meta, out = tmp_path / "meta.txt", tmp_path / "o.png"
    code = (
        "import sys\n"
        "from fairforensics.cli import main\n"
        "try:\n"
        "    main(sys.argv[1:])\n"
        "finally:\n"
        "    assert 'torch' not in sys.modules, 'perturb imported torch'\n"
    )
    argv = ["perturb", "--type", "random", "--level", "random", "--meta", str(meta)]
    argv += [str(CELEBRITIES / "img1.jpg"), str(out)]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-c", code, *argv], capture_output=True, text=True, env=env
    )
    assert done.returncode == 0, done.stderr
    name, step = meta.read_text().split()
    assert name == str(out) and step in done.stdout and out.is_file()


@pytest.mark.extended
@pytest.mark.slow
def test_reference_check_passes_95_of_95() -> None:
    """check.py runs the command on every type and level of DeeperForensics-1.0's outputs."""
    check = shared("parity", "deeperforensics", "check.py")
    cmd = f"{sys.executable} -m fairforensics.cli perturb"
    done = subprocess.run(
        [sys.executable, str(check), "--project", str(REPO), "--cmd", cmd],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=1800,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1].startswith("95/95 ")
