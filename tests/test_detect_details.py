"""Small truths of ``detect`` and the model package (issue 46, item 8): one crop named in the
face-crop line, the frames the card says are the frames scored, the weights file as readable as
the other outputs, text left-aligned in the report's table, a warning for a demo-trained model."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from fairforensics.configs.crop import CropSpec
from fairforensics.detectors import build_detector, save_checkpoint
from fairforensics.evaluation.detection import DetectResult, FileResult, terminal_table
from fairforensics.evaluation.detection.outputs import write_detect_report
from fairforensics.evaluation.detection.source import default_face_settings
from fairforensics.evaluation.model_package.card import frames_per_video, model_card
from fairforensics.evaluation.model_package.export import export_weights
from fairforensics.preprocessing.config import FaceSettings


def test_the_crop_line_names_one_crop() -> None:
    _, line = default_face_settings(CropSpec("mesonet", 1.5, 256), "meso4's paper config")
    assert len(re.findall(r"\d+ px", line)) == 1 and "margin 1.3" not in line, line
    assert "the MesoNet authors' crop" in line and "32 frames per video" in line


def test_the_card_says_the_frames_detect_scores() -> None:
    settings = FaceSettings().to_json()  # DeepfakeBench's sampling: 32 frames a video
    config = {"detector": "meso4", "frame_num": None, "face_settings": settings}
    assert frames_per_video(config) == "32 sampled evenly"
    assert frames_per_video({**config, "frame_num": 8}) == "8 of the 32 sampled evenly"
    card = model_card(config, {}, [])
    assert "frames per video: 32 sampled evenly" in card and "frames per video: all" not in card


def test_the_weights_file_respects_the_umask(tmp_path: Path) -> None:
    weights = tmp_path / "w.pt"
    save_checkpoint(weights, {"model": build_detector("meso4").state_dict(), "meta": {}})
    before = os.umask(0o022)
    try:
        out = export_weights("meso4", weights, tmp_path / "pkg")
    finally:
        os.umask(before)
    modes = {p.name: p.stat().st_mode & 0o777 for p in out.iterdir()}
    assert modes == {"model.safetensors": 0o644, "config.json": 0o644, "README.md": 0o644}


def _result(train_data: str) -> DetectResult:
    files = [
        FileResult(Path("clips/a long/path.mp4"), "video", "scored", 0.9, "fake", faces=[]),
        FileResult(Path("b.txt"), "other", "failed", reason="not an image or a video"),
    ]
    return DetectResult(files, "meso4", "best", 0.5, "0.5 (default)", None, "crops", None,
                        "mean", "cpu", train_data=train_data)  # fmt: skip


@pytest.mark.parametrize(("train_data", "warned"), [("demo", True), ("FF-c23+demo", True),
                                                    ("FF-c23", False), ("", False)])  # fmt: skip
def test_a_demo_trained_model_is_said_so(train_data: str, warned: bool, tmp_path: Path) -> None:
    result = _result(train_data)
    text = terminal_table(result)
    assert ("warning: the detector was trained on the demo data" in text) is warned, text
    assert bool(result.to_json()["warnings"]) is warned
    report = write_detect_report(result, tmp_path).read_text(encoding="utf-8")
    assert ("trained on the demo data" in report) is warned


def test_the_reports_table_left_aligns_text(tmp_path: Path) -> None:
    report = write_detect_report(_result(""), tmp_path).read_text(encoding="utf-8")
    table = report[report.index("<table><tr><th") :]
    table = table[: table.index("</table>")]
    left = " style='text-align:left'"
    for column in ("file", "status", "verdict", "reason"):
        assert f"<th{left}>{column}</th>" in table
    assert "<th>faces</th>" in table and "<th>score</th>" in table  # numbers stay right
    assert f"<td{left}>clips/a long/path.mp4</td>" in table
    assert f"<td{left}>not an image or a video</td>" in table
