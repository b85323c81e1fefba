"""``fairforensics verify`` (issue 46, item 9): absent, unlisted and unreadable files of a raw
dataset or a processed tree, per-method counts against the published ones, SHA-256 manifests."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import cv2
import numpy as np
import pytest

from fairforensics.cli import main as cli_main
from fairforensics.preprocessing.index import DatasetIndex, VideoEntry, write_index
from fairforensics.preprocessing.verify import read_manifest, scan_tree
from tests.testdata import CELEBRITIES, VIDEOS

CLIP = VIDEOS / "short_hamilton_clip.mp4"


def _verify(argv: list[str], capsys) -> tuple[int, str]:
    with pytest.raises(SystemExit) as stop:
        cli_main(["verify", "--no-progress", *argv])
    captured = capsys.readouterr()
    return stop.value.code, captured.out + captured.err


def _processed(root: Path, name: str = "tiny", n: int = 3) -> Path:
    """An index of ``n`` real faces with 2 frames and 2 landmark files each."""
    faces = sorted(CELEBRITIES.glob("img*.jpg"))
    videos = []
    for v in range(n):
        img = cv2.resize(cv2.imread(str(faces[v])), (32, 32), interpolation=cv2.INTER_AREA)
        frames = [f"{name}/real/{v:03d}/frames/{f:03d}.png" for f in range(2)]
        marks = [f"{name}/real/{v:03d}/landmarks/{f:03d}.npy" for f in range(2)]
        for rel in frames:
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            cv2.imwrite(str(root / rel), img)
        for rel in marks:
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            np.save(root / rel, np.zeros((68, 2), np.float32))
        videos.append(VideoEntry(f"{v:03d}", 0, "real", "test", frames, landmarks=marks))
    write_index(DatasetIndex(name, "deepfake", videos, root=root), root / f"{name}.json")
    return root / f"{name}.json"


def test_a_whole_processed_tree_verifies(tmp_path, capsys) -> None:
    index = _processed(tmp_path)
    code, out = _verify([str(index)], capsys)
    assert code == 0, out
    assert "OK: nothing differs" in out and "| files decoded | 12 |" in out


def test_a_missing_an_extra_and_a_corrupt_file_are_each_named(tmp_path, capsys) -> None:
    index = _processed(tmp_path)
    missing = "tiny/real/000/frames/001.png"
    corrupt = "tiny/real/001/frames/000.png"
    broken_marks = "tiny/real/002/landmarks/000.npy"
    extra = "tiny/real/002/frames/999.png"
    (tmp_path / missing).unlink()
    (tmp_path / corrupt).write_bytes(b"\x89PNG\r\n\x1a\n but not an image")
    (tmp_path / broken_marks).write_bytes(b"not numpy")
    shutil.copy(tmp_path / "tiny/real/002/frames/000.png", tmp_path / extra)
    (tmp_path / "tiny" / "real" / "002" / "_done.json").write_text("{}")  # not a listed kind
    report = tmp_path / "report.json"
    code, out = _verify([str(index), "--json", str(report)], capsys)
    assert code == 1, out
    assert "| **listed, absent** | 1 |" in out and f"  {missing}" in out
    assert "| **present, unlisted** | 1 |" in out and f"  {extra}" in out
    assert "| **unreadable** | 2 |" in out
    assert f"  {corrupt}: the image does not decode" in out and f"  {broken_marks}: " in out
    assert "_done.json" not in out
    found = {(f["kind"], f["path"]) for f in json.loads(report.read_text())["findings"]}
    assert found == {
        ("absent", missing),
        ("unlisted", extra),
        ("unreadable", corrupt),
        ("unreadable", broken_marks),
    }


def test_a_raw_dataset_listed_by_a_csv(tmp_path, capsys) -> None:
    """Through its preprocess config: a listed video absent, one present but unlisted, one that
    does not decode (and one whose end is cut off), each named."""
    raw = tmp_path / "raw"
    raw.mkdir()
    shutil.copy(CLIP, raw / "good.mp4")
    shutil.copy(CLIP, raw / "unlisted.mp4")
    (raw / "corrupt.mp4").write_bytes(b"\x00\x00\x00\x18ftypmp42" + b"\x00" * 500)
    _avi(raw / "whole.avi")
    data = (raw / "whole.avi").read_bytes()
    (raw / "cut.avi").write_bytes(data[: len(data) * 7 // 10])  # opens; its end is gone
    rows = ["good.mp4,0", "absent.mp4,1", "corrupt.mp4,1", "cut.avi,1", "whole.avi,0"]
    (raw / "list.csv").write_text("path,label\n" + "\n".join(rows) + "\n")
    argv = ["--config", "generic", "--set", f"dataset.root={raw}"]
    code, out = _verify([*argv, "--set", "dataset.options.csv=list.csv"], capsys)
    assert code == 1, out
    assert "  absent.mp4" in out and "  unlisted.mp4" in out and "  corrupt.mp4: " in out
    assert "  cut.avi: its last frame (39) does not decode (truncated?)" in out
    assert "| **unreadable** | 2 |" in out  # corrupt.mp4 and cut.avi; good.mp4 and whole.avi read
    assert "| videos listed | 5 |" in out and "| videos present | 4 |" in out


def _avi(path: Path, n: int = 40) -> None:
    """``n`` frames of the real clip as a Motion-JPEG AVI (its frame count is in the header)."""
    src = cv2.VideoCapture(str(CLIP))
    out = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"MJPG"), 10, (160, 90))
    for _ in range(n):
        ok, frame = src.read()
        assert ok
        out.write(cv2.resize(frame, (160, 90)))
    out.release()
    src.release()


def test_counts_are_checked_against_the_published_ones(tmp_path, capsys) -> None:
    index = _processed(tmp_path, name="FF-c23", n=2)
    code, out = _verify([str(index), "--no-decode"], capsys)
    assert code == 1, out
    assert "| real | 2 | 1,000 |" in out and "  real: 2 videos, published 1,000" in out
    assert "| real (test split) | 2 | 140 |" in out
    assert "  real (test split): 2 videos, published 140" in out


def test_celebdfpp_test_split_counts_are_checked(tmp_path, capsys) -> None:
    index = _processed(tmp_path, name="Celeb-DF-pp", n=2)
    code, out = _verify([str(index), "--no-decode"], capsys)
    assert code == 1, out
    assert "| real (test split) | 2 | 178 |" in out and "| real | 2 | - |" in out
    assert "the totals are shown unchecked (the test split's are checked)" in out


def test_manifest_round_trip_and_a_tampered_file(tmp_path, capsys) -> None:
    tree = tmp_path / "tree"
    _processed(tree)
    manifest = tmp_path / "tree.sha256"
    code, out = _verify([str(tree), "--write-manifest", str(manifest)], capsys)
    assert code == 0, out
    listed = read_manifest(manifest)
    assert sorted(listed) == scan_tree(tree) and len(listed) == 13  # 12 files and the JSON
    if shutil.which("sha256sum"):  # the format of sha256sum, which checks it too
        check = subprocess.run(["sha256sum", "--quiet", "-c", str(manifest)], cwd=tree)
        assert check.returncode == 0
    code, out = _verify([str(tree), "--manifest", str(manifest)], capsys)
    assert code == 0 and "| files hashed against the manifest | 13 |" in out, out
    tampered = "tiny/real/001/frames/000.png"
    raw = bytearray((tree / tampered).read_bytes())
    raw[-1] ^= 1
    (tree / tampered).write_bytes(bytes(raw))
    (tree / "tiny/real/000/landmarks/000.npy").unlink()
    (tree / "new.txt").write_text("x")
    code, out = _verify([str(tree), "--manifest", str(manifest)], capsys)
    assert code == 1, out
    assert f"SHA-256 differs from the manifest (1):\n  {tampered}" in out
    assert "in the manifest, absent (1):\n  tiny/real/000/landmarks/000.npy" in out
    assert "present, not in the manifest (1):\n  new.txt" in out


def test_the_source_videos_are_found_through_the_index_source_root(tmp_path, capsys) -> None:
    raw = tmp_path / "raw"
    raw.mkdir()
    shutil.copy(CLIP, raw / "a.mp4")
    root = tmp_path / "processed"
    index_path = _processed(root, n=2)
    data = json.loads(index_path.read_text())
    data["schema_version"] = 4
    data["source_root"] = raw.as_posix()
    data["videos"][0]["source"] = "a.mp4"
    data["videos"][1]["source"] = "b.mp4"  # not there
    index_path.write_text(json.dumps(data))
    code, out = _verify([str(index_path)], capsys)
    assert code == 1, out
    assert f"listed, absent (1):\n  {raw.resolve()}/b.mp4: source video" in out
    assert f"| source videos under {raw.resolve()} | 2 |" in out


def test_argument_errors_are_one_line_and_fast(tmp_path) -> None:
    cases = [
        [str(tmp_path / "none.json")],
        [],
        [str(tmp_path), "--manifest", str(tmp_path / "none.sha256")],
    ]
    for argv in cases:
        done = subprocess.run(
            [sys.executable, "-m", "fairforensics.cli", "verify", *argv],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
        assert "torch" not in done.stderr
