"""The predictions file: round trip, attribute columns and malformed files."""

from __future__ import annotations

import numpy as np
import pytest

from evaluation.predictions import (
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
        path.read_text().splitlines()[0] == "dataset,video_id,frame,label,score,method,beard,gender"
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
