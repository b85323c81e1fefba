"""The installed package works alone (issue 23, item 6): a wheel installed in a fresh virtual
environment runs ``ff-preprocess --config FF-c23`` from a folder outside the checkout, with the
configs, the FF++ split files and the guides it ships.

The fresh environment gets the wheel through pip and finds the dependencies (torch, dlib, ...) in
this interpreter's site-packages through a ``.pth`` line: nothing is downloaded, and neither the
checkout nor this environment's editable install of the project is on its path.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from fairforensics.preprocessing.demo_dataset import make_demo_dataset

REPO = Path(__file__).resolve().parents[1]
#: demo real video -> FF++ id: an official test pair (000, 003) and a train pair (870, 001)
IDS = {"000": "000", "001": "003", "002": "870", "003": "001"}


def fresh_venv(tmp_path: Path, wheel: Path) -> Path:
    """A new virtual environment with the wheel installed by pip; returns its ``bin/``."""
    venv = tmp_path / "venv"
    done = _run([sys.executable, "-m", "venv", "--without-pip", str(venv)], tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    (site,) = venv.glob("lib/python*/site-packages")
    (site / "_dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    python = venv / "bin" / "python"
    done = _run([sys.executable, "-m", "pip", "--python", str(python), "install", "-q"]
                + ["--no-deps", "--no-index", str(wheel)], tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    return venv / "bin"


def ff_download(tmp_path: Path) -> Path:
    """An FF++ download of 4 real videos and their Deepfakes fakes (no split files, no masks),
    rendered from a real photo by the demo data maker."""
    demo = make_demo_dataset(tmp_path / "demo", n_videos=10, n_frames=3, size=192)
    root = tmp_path / "work" / "raw_data" / "FaceForensics++"
    real = root / "original_sequences" / "youtube" / "c23" / "videos"
    fake = root / "manipulated_sequences" / "Deepfakes" / "c23" / "videos"
    real.mkdir(parents=True)
    fake.mkdir(parents=True)
    for a, b in (("000", "001"), ("002", "003")):
        for src, dst in ((a, b), (b, a)):
            shutil.copy2(demo / "original_sequences/youtube/c23/videos" / f"{src}.mp4", real / f"{IDS[src]}.mp4")  # fmt: skip
            shutil.copy2(demo / "manipulated_sequences/SelfBlended/c23/videos" / f"{src}_{dst}.mp4", fake / f"{IDS[src]}_{IDS[dst]}.mp4")  # fmt: skip
    return tmp_path / "work"


def _run(cmd: list[str], cwd: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


@pytest.mark.slow
def test_wheel_in_a_fresh_venv_preprocesses_ff_from_another_folder(
    tmp_path: Path, wheel: Path
) -> None:
    bin_dir = fresh_venv(tmp_path, wheel)
    site = str(next((tmp_path / "venv").glob("lib/python*/site-packages")))
    work = ff_download(tmp_path)

    # the top-level help lists the verbs and points to the installed guides
    done = _run([str(bin_dir / "fairforensics"), "--help"], work)
    assert done.returncode == 0, done.stderr[-2000:]
    assert all(f"  {verb} " in done.stdout for verb in ("preprocess", "train", "fairness"))
    (guides,) = [line.split(": ", 1)[1] for line in done.stdout.splitlines() if line.startswith("guides: ")]  # fmt: skip
    assert guides.startswith(site) and (Path(guides) / "preprocessing.md").is_file()

    # the checkout's path form finds the shipped config; the partial download is one error
    # naming dataset.options.methods (before anything is preprocessed)
    preprocess = [str(bin_dir / "ff-preprocess"), "--workers", "1", "--no-progress"]
    done = _run([*preprocess, "--config", "configs/preprocess/FF-c23.yaml"], work)
    assert done.returncode == 2, done.stderr[-2000:]
    assert f"{site}/fairforensics/configs/preprocess/FF-c23.yaml, shipped" in done.stderr
    assert "Face2Face, FaceSwap, NeuralTextures, FaceShifter" in done.stderr
    assert '--set "dataset.options.methods=[Deepfakes]"' in done.stderr
    assert not (work / "datasets" / "FF-c23.json").exists()  # nothing preprocessed
    assert not (work / "datasets" / "FF-c23").exists()

    # a download of 8 of the 2,000 videos FF++'s lists name is partial: an error unless intended
    sets = ["dataset.options.methods=[Deepfakes]", "dataset.options.masks=false",
            "sampling.num_frames=2"]  # fmt: skip
    args = [*preprocess, "--config", "FF-c23", *(a for s in sets for a in ("--set", s))]
    done = _run(args, work)
    assert done.returncode == 2, done.stderr[-2000:]
    assert "only 8 found" in done.stderr and "dataset.options.allow_partial" in done.stderr
    assert not (work / "datasets" / "FF-c23.json").exists()

    done = _run([*args, "--set", "dataset.options.allow_partial=true"], work)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "the official ones shipped with fairforensics are used" in done.stderr
    index = json.loads((work / "datasets" / "FF-c23.json").read_text())
    assert (index["videos_found"], index["videos_listed"]) == (8, 2000)
    splits = {v["id"]: v["split"] for v in index["videos"]}
    assert splits == {"000": "test", "003": "test", "000_003": "test", "003_000": "test",
                      "870": "train", "001": "train", "870_001": "train", "001_870": "train"}  # fmt: skip
    assert all(len(v["frames"]) == 2 for v in index["videos"])  # a face in every sampled frame
    for video in index["videos"]:
        assert all((work / "datasets" / f).is_file() for f in video["frames"])
