"""Public per-frame demographic CSVs (Lin et al. CVPR 2024 / AI-Face CVPR 2025) onto our indexes."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest

from fairforensics.preprocessing.demographics import (
    DemographicsError,
    frame_keys,
    import_demographics,
    normalise_id,
    read_demographics_csv,
)
from fairforensics.preprocessing.index import DatasetIndex, VideoEntry, read_index, write_index

REPO = Path(__file__).resolve().parents[1]
HEADER = [
    "Image Path",
    "Ground Truth Gender",
    "Ground Truth Age",
    "Ground Truth Race",
    "Intersection",
    "Target",
]
UNCERTAINTY = ["Uncertainty Score Gender", "Uncertainty Score Age", "Uncertainty Score Race"]


def _write(path: Path, rows: list[list], header: list[str] = HEADER) -> Path:
    with path.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(header)
        w.writerows(rows)
    return path


def _ff_index(methods: tuple[str, str] = ("Deepfakes", "Face2Face")) -> DatasetIndex:
    """FF++-like: reals 000, 003, 546; fakes 000_003 of two methods; 300_304 of the first."""
    videos = [VideoEntry(i, 0, "real", "test", [f"r/{i}/0.png"]) for i in ("000", "003", "546")]
    for m in methods:
        videos.append(VideoEntry("000_003", 1, m, "test", [f"{m}/000_003/0.png"]))
    videos.append(VideoEntry("300_304", 1, methods[0], "test", [f"{methods[0]}/300_304/0.png"]))
    return DatasetIndex("FF", "deepfake", videos, root=".")


def _rows_ff() -> list[list]:
    return [
        # real 546: 3 of 4 frames female, age young; race White
        ["ff++/0_youtube_546_131.png", 0, 0, 1, 2, 0],
        ["ff++/0_youtube_546_132.png", 0, 0, 1, 2, 0],
        ["ff++/0_youtube_546_133.png", 0, 1, 1, 2, 0],
        ["ff++/0_youtube_546_134.png", 1, 0, 1, 3, 0],
        # real 000 (unpadded in the CSV): male, senior, Asian
        ["0_youtube_0_5.png", 1, 2, 0, 0, 0],
        # fake 300_304 of Deepfakes: male Black, two frames
        ["0_Deepfakes_300_304_151.png", 1, 1, 2, 6, 1],
        ["0_Deepfakes_300_304_152.png", 1, 1, 2, 6, 1],
        # fake 000_003 of Face2Face only (Deepfakes' 000_003 stays unlabelled)
        ["0_Face2Face_000_003_7.png", 0, 3, 3, 3, 1],
        # no such video
        ["0_youtube_999_1.png", 1, 1, 1, 5, 0],
    ]


def test_codes_map_to_readable_values_and_majority_with_agreement(tmp_path: Path) -> None:
    rows = read_demographics_csv(_write(tmp_path / "ff.csv", _rows_ff()))
    assert rows[0].labels == {"gender": "female", "age": "young", "race": "White"}
    assert rows[0].target == 0 and rows[0].uncertainty == {}
    out, report = import_demographics(_ff_index(), rows)
    by = {v.key: v.attributes for v in out.videos}
    assert by[("real", "546")] == {
        "gender": "female",
        "gender_agreement": "0.750",
        "age": "young",
        "age_agreement": "0.750",
        "race": "White",
        "race_agreement": "1.000",
    }
    assert by[("real", "000")]["gender"] == "male" and by[("real", "000")]["age"] == "senior"
    assert by[("real", "000")]["race"] == "Asian"
    assert by[("Deepfakes", "300_304")]["race"] == "Black"
    assert by[("Face2Face", "000_003")] == {
        "gender": "female",
        "gender_agreement": "1.000",
        "age": "others",
        "age_agreement": "1.000",
        "race": "others",
        "race_agreement": "1.000",
    }
    assert by[("Deepfakes", "000_003")] == {} and by[("real", "003")] == {}
    assert report.to_json() == {
        "videos": 6,
        "videos_matched": 4,
        "rows": 9,
        "rows_matched": 8,
        "rows_unmatched": 1,
        "unmatched_examples": ["0_youtube_999_1.png"],
    }


def test_uncertainty_columns_and_ties(tmp_path: Path) -> None:
    header = ["Image Path", *UNCERTAINTY, *HEADER[1:]]
    rows = [
        ["0_youtube_546_1.png", 0.1, 0.2, 0.3, 1, 0, 1, 2, 0],
        ["0_youtube_546_2.png", 0.3, 0.4, 0.5, 0, 1, 1, 2, 0],
    ]
    frames = read_demographics_csv(_write(tmp_path / "u.csv", rows, header))
    assert frames[0].uncertainty == pytest.approx({"gender": 0.1, "age": 0.2, "race": 0.3})
    out, _ = import_demographics(_ff_index(), frames, ["gender", "age"])
    attrs = next(v.attributes for v in out.videos if v.id == "546")
    # a 1:1 tie goes to the lower code: gender 0 = female, age 0 = young
    assert attrs == {
        "gender": "female",
        "gender_agreement": "0.500",
        "gender_uncertainty": "0.200",
        "age": "young",
        "age_agreement": "0.500",
        "age_uncertainty": "0.300",
    }


def test_deepfakebench_method_names_and_generic_paths() -> None:
    dfb = _ff_index(("FF-DF", "FF-F2F"))
    from fairforensics.preprocessing.demographics import FrameLabels

    def frame(path: str, target: int | None, gender: str = "male") -> FrameLabels:
        return FrameLabels(path, target, {"gender": gender})

    out, report = import_demographics(
        dfb, [frame("0_Deepfakes_000_003_1.png", 1), frame("0_Face2Face_0_3_1.png", 1, "female")],
        ["gender"],
    )  # fmt: skip
    by = {v.key: v.attributes.get("gender") for v in out.videos}
    assert by[("FF-DF", "000_003")] == "male" and by[("FF-F2F", "000_003")] == "female"
    # Celeb-DF / DFDC style: the video is a folder, or the stem minus its frame number
    celeb = DatasetIndex(
        "Celeb-DF",
        "deepfake",
        [
            VideoEntry("id0_0000", 0, "real", "test", ["a.png"]),
            VideoEntry("id0_id1_0000", 1, "Celeb-synthesis", "test", ["b.png"]),
            VideoEntry("aabbccddee", 1, "DFDC", "test", ["c.png"]),
        ],
        root=".",
    )
    frames = [
        frame("Celeb-real/id0_0000/frame_12.png", None, "female"),
        frame("Celeb-synthesis/id0_id1_0000_3.png", 1),
        frame("dfdc/test/aabbccddee.mp4/004.png", 1),
        frame("Celeb-real/id0_0000_7.png", 1),  # Target 1: not the real id0_0000
    ]
    out, report = import_demographics(celeb, frames, ["gender"])
    assert [v.attributes.get("gender") for v in out.videos] == ["female", "male", "male"]
    assert report.rows_matched == 3
    assert normalise_id("000_003") == normalise_id("0_3") == "0_3"
    assert frame_keys("x/0_youtube_546_131.png") == (None, ["546"])


def test_bad_csvs_and_zero_matches_are_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(DemographicsError, match="not found"):
        read_demographics_csv(tmp_path / "none.csv")
    bad = _write(tmp_path / "b.csv", [["a.png", 1, 0]], ["Image Path", "Ground Truth Gender", "x"])
    with pytest.raises(DemographicsError, match=r"b\.csv: no column.*Ground Truth Age"):
        read_demographics_csv(bad)
    read_demographics_csv(bad, ["gender"])
    code = _write(tmp_path / "c.csv", [["a.png", 5, 0, 0, 0, 0]])
    with pytest.raises(DemographicsError, match=r"c\.csv line 2: Ground Truth Gender = '5'"):
        read_demographics_csv(code)
    header = ["Image Path", *UNCERTAINTY, *HEADER[1:]]
    bad_u = _write(tmp_path / "u.csv", [["a.png", "low", 0, 0, 1, 0, 0, 0, 0]], header)
    with pytest.raises(DemographicsError, match=r"u\.csv line 2: Uncertainty Score Gender = 'low'"):
        read_demographics_csv(bad_u)
    with pytest.raises(DemographicsError, match="unknown attributes"):
        read_demographics_csv(code, ["height"])
    other = read_demographics_csv(_write(tmp_path / "o.csv", [["zz_1.png", 1, 0, 0, 0, 0]]))
    with pytest.raises(DemographicsError, match="none of 1 demographic rows matches"):
        import_demographics(_ff_index(), other)


def test_script_reports_matches_and_fails_on_zero(tmp_path: Path) -> None:
    index = _ff_index()
    index.root = tmp_path
    write_index(index, tmp_path / "FF.json")
    csv_path = _write(tmp_path / "ff.csv", _rows_ff())
    script = [sys.executable, str(REPO / "scripts" / "import_demographics.py")]
    run = subprocess.run(
        [*script, "--index", tmp_path / "FF.json", "--csv", csv_path, "--out", tmp_path / "FF.json"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert json.loads(run.stdout)["videos_matched"] == 4
    labelled = read_index(tmp_path / "FF.json")
    assert {v.attributes.get("gender") for v in labelled.videos} == {"female", "male", None}
    empty = _write(tmp_path / "other.csv", [["zz_1.png", 1, 0, 0, 0, 0]])
    run = subprocess.run(
        [*script, "--index", tmp_path / "FF.json", "--csv", empty, "--out", tmp_path / "x.json"],
        capture_output=True, text=True,
    )  # fmt: skip
    assert run.returncode == 2 and "matches a video" in run.stderr
    assert not (tmp_path / "x.json").exists()
