"""The predictions file: round trip, attribute columns and malformed files."""

from __future__ import annotations

import numpy as np
import pytest

from fairforensics.evaluation.predictions import (
    Predictions,
    PredictionsError,
    read_predictions,
    write_predictions,
)


def sample() -> Predictions:
    return Predictions(
        dataset=["FF", "FF", "FF"],
        video_id=["000", "000_003", "000_003"],
        frame=[0, 0, 4],
        label=[0, 1, 1],
        score=[0.1, 0.123456789012345, 1.0],
        method=["real", "Deepfakes", "FaceSwap"],
        attributes={"gender": ["female", "female", ""], "beard": ["no", "no", "yes,long"]},
    )


def test_round_trip_is_exact(tmp_path) -> None:
    path = tmp_path / "p.csv"
    write_predictions(path, sample())
    assert (
        path.read_text().splitlines()[0]
        == "dataset,video_id,frame,label,score,method,unit,beard,gender"
    )
    back = read_predictions(path)
    ref = sample()
    for col in ("dataset", "video_id", "frame", "label", "score", "method"):
        np.testing.assert_array_equal(getattr(back, col), getattr(ref, col))
    assert back.attributes["beard"][2] == "yes,long"
    assert back.attributes["gender"][2] == ""
    assert list(back.video_key) == ["FF/real/000", "FF/Deepfakes/000_003", "FF/FaceSwap/000_003"]


def test_subset_and_concat() -> None:
    p = sample()
    both = Predictions.concat(
        [p.subset(np.array([0])), Predictions(["X"], ["v"], [0], [1], [0.5], ["m"])]
    )
    assert len(both) == 2 and list(both.attributes["gender"]) == ["female", ""]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "empty file"),
        ("a,b,c\n", "header must start with"),
        ("dataset,video_id,frame,label,score,method\nFF,1,0,0\n", "line 2 has a different number"),
        ("dataset,video_id,frame,label,score,method\nFF,1,0,0,high,real\n", "not a number"),
        ("dataset,video_id,frame,label,score,method\nFF,1,0,3,0.5,real\n", "'label' must be 0"),
        ("dataset,video_id,frame,label,score,method\nFF,1,0,1,nan,real\n", "NaN"),
    ],
)
def test_malformed_files(tmp_path, text: str, message: str) -> None:
    path = tmp_path / "p.csv"
    path.write_text(text)
    with pytest.raises(PredictionsError, match=message):
        read_predictions(path)


def test_missing_file(tmp_path) -> None:
    with pytest.raises(PredictionsError, match="not found"):
        read_predictions(tmp_path / "none.csv")


@pytest.mark.parametrize("bad", ["-2.5", "3.0", "1.0000001"])
def test_scores_outside_0_1_are_refused_with_the_sigmoid_hint(tmp_path, bad: str) -> None:
    path = tmp_path / "p.csv"
    path.write_text(
        f"dataset,video_id,frame,label,score,method\nFF,1,0,0,0.5,real\nFF,2,0,1,{bad},fake\n"
    )
    with pytest.raises(PredictionsError, match=r"p\.csv: column 'score' .*\[0, 1\].*sigmoid"):
        read_predictions(path)


def test_logits_are_read_through_the_sigmoid(tmp_path) -> None:
    path = tmp_path / "p.csv"
    path.write_text(
        "dataset,video_id,frame,label,score,method\nFF,1,0,0,-2.0,real\nFF,2,0,1,0.0,fake\n"
        "FF,3,0,1,3.5,fake\n"
    )
    pred = read_predictions(path, scores="logits")
    np.testing.assert_allclose(pred.score, 1 / (1 + np.exp(-np.array([-2.0, 0.0, 3.5]))))
    with pytest.raises(PredictionsError, match="scores='probs'"):
        read_predictions(path, scores="probs")  # type: ignore[arg-type]


@pytest.mark.slow
def test_fairness_cli_names_the_file_and_offers_scores_logits(tmp_path) -> None:
    import subprocess
    import sys
    from pathlib import Path

    rows = "".join(f"FF,{k},0,{k % 2},{3 * (k % 2) - 1.5 + k / 10},m,{'ab'[k % 2 ^ k // 4 % 2]}\n"
                   for k in range(16))  # fmt: skip
    path = tmp_path / "logits.csv"
    path.write_text("dataset,video_id,frame,label,score,method,gender\n" + rows)
    script = Path(__file__).resolve().parents[1] / "scripts" / "fairness.py"
    cmd = [sys.executable, str(script), "--predictions", str(path), "--out", str(tmp_path / "r"),
           "--no-figures"]  # fmt: skip
    bad = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "logits.csv: column 'score'" in bad.stderr
    assert "--scores logits" in bad.stderr
    good = subprocess.run(cmd + ["--scores", "logits"], capture_output=True, text=True, timeout=120)
    assert good.returncode == 0, good.stderr


def test_rows_say_frame_or_clip_and_old_files_read_as_frames(tmp_path) -> None:
    old = tmp_path / "old.csv"
    old.write_text("dataset,video_id,frame,label,score,method,gender\nFF,1,0,0,0.5,real,m\n")
    pred = read_predictions(old)
    assert list(pred.unit) == ["frame"] and pred.row_unit == "frame"
    assert list(pred.attributes) == ["gender"]
    clips = sample()
    clips.unit = np.array(["clip"] * len(clips), dtype=object)
    path = tmp_path / "clips.csv"
    write_predictions(path, clips)
    back = read_predictions(path)
    assert list(back.unit) == ["clip"] * len(clips) and back.row_unit == "clip"
    assert set(back.attributes) == {"beard", "gender"}
    both = Predictions.concat([pred, back])
    assert both.row_unit == "frame+clip" and both.subset(np.array([0])).row_unit == "frame"
    bad = tmp_path / "bad.csv"
    bad.write_text("dataset,video_id,frame,label,score,method,unit\nFF,1,0,0,0.5,real,video\n")
    with pytest.raises(PredictionsError, match="'unit' must hold frame or clip, got 'video'"):
        read_predictions(bad)
    with pytest.raises(PredictionsError, match="column of its own"):
        Predictions(["FF"], ["1"], [0], [0], [0.5], ["real"], attributes={"unit": ["x"]})
