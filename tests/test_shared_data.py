"""The extended data in ../shared: tests/data is a faithful subset of it, and the larger sets
(all 62 celebrity portraits at full resolution, the 1080p video) go through preprocessing."""

from __future__ import annotations

import csv
import filecmp

import cv2
import pytest

from fairforensics.preprocessing.faces import FaceAnalyzer
from fairforensics.preprocessing.video import count_frames, read_frames
from tests.testdata import DATA, shared

pytestmark = pytest.mark.extended

UNCHANGED = [
    "faces/face_recognition/obama.jpg",
    "faces/face_recognition/obama-240p.jpg",
    "faces/face_recognition/two_people.jpg",
    "faces/dlib/johns/John_Simm/000288_00470387.jpg",
    "pad/silent_face/image_F2.jpg",
    "videos/short_hamilton_clip.mp4",
]


def _rows(path) -> dict[str, dict[str, str]]:
    with path.open(newline="") as fh:
        return {r["file"]: r for r in csv.DictReader(fh)}


@pytest.mark.parametrize("rel", UNCHANGED)
def test_unchanged_files_are_byte_copies(rel: str) -> None:
    assert filecmp.cmp(DATA / rel, shared("data", rel), shallow=False), rel


def test_celebrity_subset_keeps_the_annotations_and_the_aspect_ratio() -> None:
    full = _rows(shared("data", "faces", "celebrities", "attributes.csv"))
    ours = _rows(DATA / "faces" / "celebrities" / "attributes.csv")
    assert ours and all(full[name] == row for name, row in ours.items())
    assert {r["gender"] for r in ours.values()} == {"female", "male"}
    assert {r["identity"] for r in ours.values()} == {r["identity"] for r in full.values()}
    for name in ours:
        small = cv2.imread(str(DATA / "faces" / "celebrities" / name))
        big = cv2.imread(str(shared("data", "faces", "celebrities", name)))
        assert max(small.shape[:2]) in (384, 768), name
        assert abs(small.shape[0] / small.shape[1] - big.shape[0] / big.shape[1]) < 0.01, name


def test_dlib_finds_a_face_in_all_62_full_resolution_portraits() -> None:
    folder = shared("data", "faces", "celebrities")
    names = list(_rows(folder / "attributes.csv"))
    assert len(names) == 62
    analyzer = FaceAnalyzer()
    missing = [
        n for n in names if not analyzer.detect(cv2.imread(str(folder / n))[..., ::-1].copy())
    ]
    assert missing == []


def test_the_1080p_video_decodes_at_full_resolution() -> None:
    path = shared("data", "videos", "facenet_walk_1080p.mp4")
    assert count_frames(path) == 105
    frames = read_frames(path, [0, 52, 104])
    assert sorted(frames) == [0, 52, 104]
    assert all(f.shape == (1080, 1920, 3) for f in frames.values())
