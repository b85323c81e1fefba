"""The demo data maker: real photos in, one-line errors for bad input. The demo path end to end
(``make demo``: make data -> preprocess -> train -> test -> fairness) is checked, output by output,
in ``tests/test_docs_commands.py::test_make_demo_writes_every_output``."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from pathlib import Path

import cv2
import numpy as np
import pytest

from fairforensics.preprocessing.demo_dataset import (
    DemoDataError,
    load_face_photos,
    make_demo_dataset,
)
from tests.testdata import CELEBRITIES

REPO = Path(__file__).resolve().parents[1]


def test_photo_without_face_is_skipped_and_named(tmp_path: Path, caplog) -> None:
    faces = tmp_path / "faces"
    faces.mkdir()
    cv2.imwrite(str(faces / "wall.png"), np.full((200, 200, 3), 128, np.uint8))
    (faces / "broken.jpg").write_bytes(b"not an image")
    with pytest.raises(DemoDataError, match="no photo with a detectable face"):
        load_face_photos(faces)
    assert "wall.png: no face found" in caplog.text
    assert "broken.jpg" in caplog.text and "not a readable image" in caplog.text


def test_demo_from_photos_carries_their_attributes(tmp_path: Path, caplog) -> None:
    faces = tmp_path / "faces"
    faces.mkdir()
    for name in ("img1.jpg", "img13.jpg"):
        (faces / name).write_bytes((CELEBRITIES / name).read_bytes())
    cv2.imwrite(str(faces / "wall.png"), np.full((200, 200, 3), 128, np.uint8))
    with caplog.at_level(logging.WARNING):
        out = make_demo_dataset(
            tmp_path / "raw",
            n_videos=10,
            n_frames=2,
            size=192,
            faces_dir=faces,
            attributes_csv=CELEBRITIES / "attributes.csv",
        )
    assert "wall.png: no face found" in caplog.text
    rows = (out / "attributes.csv").read_text().splitlines()
    assert rows[0] == "identity,beard,eyeglasses,gender,lighting,photo,subject"
    genders = {line.split(",")[3] for line in rows[1:]}
    assert genders == {"female", "male"}
    splits = {
        k: json.loads((out / "splits" / f"{k}.json").read_text()) for k in ("train", "val", "test")
    }
    ids = [i for pairs in splits.values() for pair in pairs for i in pair]
    assert sorted(ids) == [f"{i:03d}" for i in range(10)]


def test_bad_arguments(tmp_path: Path) -> None:
    with pytest.raises(DemoDataError, match="even number"):
        make_demo_dataset(tmp_path, n_videos=7)
    with pytest.raises(DemoDataError, match="faces folder not found"):
        load_face_photos(tmp_path / "none")


def _make_demo_data(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "scripts/make_demo_data.py", *args],
        cwd=REPO, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--videos", "7"], "even number"),
        (["--faces", "/nonexistent"], "faces folder not found"),
        (["--out", "{file}/raw"], "{file}/raw"),  # a file where a folder is needed
    ],
)
def test_make_demo_data_errors_are_one_line(tmp_path: Path, args: list[str], message: str) -> None:
    file = tmp_path / "file"
    file.write_text("x")
    done = _make_demo_data("--out", str(tmp_path / "raw"), *(a.format(file=file) for a in args))
    assert done.returncode == 2 and done.stderr.startswith("error: ")
    assert "Traceback" not in done.stderr and message.format(file=file) in done.stderr
