"""Public per-frame demographic CSVs (AI-Face, Lin et al. CVPR 2024, Xu et al. A-*.csv) onto our
indexes, matched by video from the dataset's folder layout."""

from __future__ import annotations

import csv
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from fairforensics.preprocessing.demographic_formats import (
    AI_FACE,
    LIN,
    XU,
    DemographicsError,
    FrameLabels,
    read_demographics_csv,
)
from fairforensics.preprocessing.demographics import import_demographics, index_layout
from fairforensics.preprocessing.frame_paths import parse_frame_path
from fairforensics.preprocessing.index import DatasetIndex, VideoEntry, read_index, write_index
from tests.testdata import shared

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
LIN_HEADER = ["img_path", "label", "ismale", "isasian", "iswhite", "isblack", "intersec_label"]
FF_RAW = "../raw/FF"


def _write(path: Path, rows: list[list], header: list[str] = HEADER) -> Path:
    with path.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(header)
        w.writerows(rows)
    return path


def _video(vid: str, label: int, method: str, source: str | None = None) -> VideoEntry:
    return VideoEntry(
        vid, label, method, "test", [f"{method}/{vid}/frames/{i:03d}.png" for i in range(2)],
        source=source,
    )  # fmt: skip


def _ff_index(methods: tuple[str, str] = ("Deepfakes", "Face2Face")) -> DatasetIndex:
    """FF++ as our lister writes it: reals 000, 003, 546; fakes 000_003 of two methods and
    300_304 of the first; ``source`` = the official layout."""
    real = f"{FF_RAW}/original_sequences/youtube/c23/videos"
    fake = f"{FF_RAW}/manipulated_sequences/{{}}/c23/videos"
    videos = [_video(i, 0, "real", f"{real}/{i}.mp4") for i in ("000", "003", "546")]
    for m in methods:
        videos.append(_video("000_003", 1, m, f"{fake.format(m)}/000_003.mp4"))
    videos.append(_video("300_304", 1, methods[0], f"{fake.format(methods[0])}/300_304.mp4"))
    return DatasetIndex("FF", "deepfake", videos, root=".")


def _labels(path: str, target: int | None, gender: str = "male", method: str | None = None):
    return FrameLabels(path, target, {"gender": gender}, method=method)


def _gender(index: DatasetIndex) -> dict[tuple[str, str], str | None]:
    return {v.key: v.attributes.get("gender") for v in index.videos}


# ----------------------------------------------------------------------------------- formats


def _rows_ff() -> list[list]:
    return [
        # real 546: 3 of 4 frames female, age young; race White
        ["ff++/0_youtube_546_131.png", 0, 0, 1, 2, 0],
        ["ff++/0_youtube_546_132.png", 0, 0, 1, 2, 0],
        ["ff++/0_youtube_546_133.png", 0, 1, 1, 2, 0],
        ["ff++/0_youtube_546_134.png", 1, 0, 1, 3, 0],
        # real 000 (unpadded in the file name): male, senior, Asian
        ["0_youtube_0_5.png", 1, 2, 0, 0, 0],
        # fake 300_304 of Deepfakes: male Black, two frames
        ["0_Deepfakes_300_304_151.png", 1, 1, 2, 6, 1],
        ["0_Deepfakes_300_304_152.png", 1, 1, 2, 6, 1],
        # fake 000_003 of Face2Face only (Deepfakes' 000_003 stays unlabelled)
        ["0_Face2Face_000_003_7.png", 0, 3, 3, 3, 1],
        # no such video
        ["0_youtube_999_1.png", 1, 1, 1, 5, 0],
    ]


def test_ai_face_codes_majority_and_agreement(tmp_path: Path) -> None:
    read = read_demographics_csv(_write(tmp_path / "ff.csv", _rows_ff()))
    assert read.format == AI_FACE and read.attributes == ["gender", "age", "race"]
    assert read.rows[0].labels == {"gender": "female", "age": "young", "race": "White"}
    assert read.rows[0].target == 0 and read.rows[0].uncertainty == {}
    out, report = import_demographics(_ff_index(), read.rows)
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
    assert by[("Deepfakes", "300_304")]["race"] == "Black"
    assert by[("Face2Face", "000_003")]["age"] == "others"
    assert by[("Deepfakes", "000_003")] == {} and by[("real", "003")] == {}
    assert report.to_json() == {
        "videos": 6,
        "videos_matched": 4,
        "rows": 9,
        "rows_matched": 8,
        "rows_unmatched": 1,
        "unmatched_by_layout": {"FF++": 1},
        "unmatched_examples": ["0_youtube_999_1.png"],
        "index_looks_like": "FF++",
    }


def test_ai_face_uncertainty_columns_and_ties(tmp_path: Path) -> None:
    header = ["Image Path", *UNCERTAINTY, *HEADER[1:]]
    rows = [
        ["0_youtube_546_1.png", 0.1, 0.2, 0.3, 1, 0, 1, 2, 0],
        ["0_youtube_546_2.png", 0.3, 0.4, 0.5, 0, 1, 1, 2, 0],
    ]
    read = read_demographics_csv(_write(tmp_path / "u.csv", rows, header), ["gender", "age"])
    assert read.rows[0].uncertainty == pytest.approx({"gender": 0.1, "age": 0.2})
    out, _ = import_demographics(_ff_index(), read.rows, ["gender", "age"], max_unmatched=0)
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


def test_lin_cvpr2024_format(tmp_path: Path) -> None:
    """+-1 codes; race from the one is* column that is 1; spe_label names the FF++ method."""
    crops = "/data/cropped_images"
    fake = _write(
        tmp_path / "faketrain.csv",
        [
            [f"{crops}/000_003/0001.png", 1, 1, -1, 1, -1, 1, 2],  # male White, Face2Face
            [f"{crops}/000_003/0002.png", 1, 1, -1, -1, -1, 3, 2],  # all -1: race others
            [f"{crops}/000_003/0003.png", 1, -1, 1, 1, -1, 4, 2],  # two races: undefined
            [f"{crops}/300_304/0001.png", 1, -1, -1, -1, 1, 6, 1],  # female Black, Deepfakes
        ],
        [*LIN_HEADER, "spe_label"],
    )
    real = _write(
        tmp_path / "realtrain.csv",
        [[f"{crops}/546/0001.png", 0, -1, 1, -1, -1, 4]],
        LIN_HEADER,
    )
    read = read_demographics_csv(fake)
    assert read.format == LIN and read.attributes == ["gender", "race"]
    assert [r.labels["race"] for r in read.rows] == ["White", "others", None, "Black"]
    assert [r.method for r in read.rows] == ["Face2Face"] * 3 + ["Deepfakes"]
    rows = read.rows + read_demographics_csv(real).rows
    out, report = import_demographics(_ff_index(), rows, ["gender", "race"], max_unmatched=0)
    by = {v.key: v.attributes for v in out.videos}
    # the two frames with a race: White and others, a tie -> the lower code (White)
    assert by[("Face2Face", "000_003")] == {
        "gender": "male",
        "gender_agreement": "0.667",
        "race": "White",
        "race_agreement": "0.500",
    }
    assert by[("Deepfakes", "000_003")] == {}
    assert by[("Deepfakes", "300_304")]["race"] == "Black"
    assert by[("real", "546")] == {
        "gender": "female",
        "gender_agreement": "1.000",
        "race": "Asian",
        "race_agreement": "1.000",
    }
    # Celeb-DF / DFD files have no isasian; age is not in the format
    celeb = _write(
        tmp_path / "celeb.csv",
        [["Celeb-real/id0_0000/000.png", 0, 1, -1, -1, 2]],
        ["img_path", "label", "ismale", "iswhite", "isblack", "intersec_label"],
    )
    assert read_demographics_csv(celeb).rows[0].labels == {"gender": "male", "race": "others"}
    with pytest.raises(DemographicsError, match=r"Lin et al\. CVPR 2024 file has no age"):
        read_demographics_csv(celeb, ["gender", "age"])
    bad = _write(tmp_path / "bad.csv", [["a/0.png", 0, 0, 1, -1, -1, 0]], LIN_HEADER)
    with pytest.raises(DemographicsError, match=r"bad\.csv line 2: ismale = '0'"):
        read_demographics_csv(bad)


def test_xu_a_csv_format(tmp_path: Path) -> None:
    """A-*.csv: an unnamed index column, path, path_folder, label, MAAD-Face attributes 1/-1/0."""
    header = ["", "path", "path_folder", "label", "male", "young", "middle_aged", "senior"]
    header += ["asian", "white", "black", "smiling"]
    base = "FaceForensics++/manipulated_sequences/Deepfakes/c23/frames/000_003"
    a_ff = _write(
        tmp_path / "A-FF++.csv",
        [
            [0, f"{base}/000.png", base, 1, 1, 1, -1, -1, -1, 1, -1, 1],
            [1, f"{base}/001.png", base, 1, 0, -1, 1, -1, -1, -1, -1, 0],  # gender undefined
            [2, f"{base}/002.png", base, 1, 1, 0, 0, 0, 0, 0, 0, -1],  # age, race undefined
        ],
        header,
    )
    read = read_demographics_csv(a_ff)
    assert read.format == XU and read.attributes == ["gender", "age", "race"]
    assert [r.labels for r in read.rows] == [
        {"gender": "male", "age": "young", "race": "White"},
        {"gender": None, "age": "middle-aged", "race": "others"},
        {"gender": "male", "age": None, "race": None},
    ]
    assert read.rows[0].target is None  # the label column's coding is not documented
    out, _ = import_demographics(_ff_index(), read.rows, read.attributes, max_unmatched=0)
    assert {v.key: v.attributes for v in out.videos}[("Deepfakes", "000_003")] == {
        "gender": "male",
        "gender_agreement": "1.000",
        "age": "young",
        "age_agreement": "0.500",
        "race": "White",
        "race_agreement": "0.500",
    }
    bad = _write(tmp_path / "A-bad.csv", [[0, "a/0.png", "a", 1, 2, 1, 1, 1, 1, 1, 1, 1]], header)
    with pytest.raises(DemographicsError, match=r"A-bad\.csv line 2: male = '2'"):
        read_demographics_csv(bad)


def test_bad_csvs_are_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(DemographicsError, match="not found"):
        read_demographics_csv(tmp_path / "none.csv")
    bad = _write(tmp_path / "b.csv", [["a.png", 1, 0]], ["Image Path", "Ground Truth Gender", "x"])
    with pytest.raises(DemographicsError, match=r"b\.csv: this AI-Face file has no age, race"):
        read_demographics_csv(bad, ["gender", "age", "race"])
    assert read_demographics_csv(bad).attributes == ["gender"]
    code = _write(tmp_path / "c.csv", [["a.png", 5, 0, 0, 0, 0]])
    with pytest.raises(DemographicsError, match=r"c\.csv line 2: Ground Truth Gender = '5'"):
        read_demographics_csv(code)
    header = ["Image Path", *UNCERTAINTY, *HEADER[1:]]
    bad_u = _write(tmp_path / "u.csv", [["a.png", "low", 0, 0, 1, 0, 0, 0, 0]], header)
    with pytest.raises(DemographicsError, match=r"u\.csv line 2: Uncertainty Score Gender = 'low'"):
        read_demographics_csv(bad_u)
    with pytest.raises(DemographicsError, match="unknown attributes"):
        read_demographics_csv(code, ["height"])
    other = _write(tmp_path / "o.csv", [["a.png", 1]], ["file", "sex"])
    with pytest.raises(DemographicsError, match=r"o\.csv: header .* none of the known formats"):
        read_demographics_csv(other)


def test_the_docs_samples_parse(tmp_path: Path) -> None:
    """docs/fairness.md shows one sample per format; each reads as its format."""
    text = (REPO / "docs" / "fairness.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```text\n(.*?)```", text, flags=re.S)
    formats = {}
    for n, block in enumerate(b for b in blocks if b.count(",") > 5 and not b.startswith("error:")):
        read = read_demographics_csv(_write_text(tmp_path / f"{n}.csv", block))
        formats[read.format] = [r.labels for r in read.rows]
    assert formats == {
        AI_FACE: [{"gender": "female", "age": "middle-aged", "race": "White"}] * 2,
        LIN: [{"gender": "male", "race": "White"}, {"gender": "female", "race": "Black"}],
        XU: [{"gender": "male", "age": "young", "race": "White"}],
    }


def _write_text(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


# ----------------------------------------------------------------------------------- layouts


def test_ff_official_layout_never_matches_a_frame_number() -> None:
    """Frames of videos 999 and 998 (not in the index) stay unmatched: before, they were given
    to videos 003 and 015 by their frame numbers."""
    index = _ff_index()
    index.videos.append(_video("015", 0, "real", f"{FF_RAW}/original_sequences/youtube/c23/videos/015.mp4"))  # fmt: skip
    real = "FaceForensics++/original_sequences/youtube/c23/frames"
    fake = "FaceForensics++/manipulated_sequences/{}/c23/frames/000_003/010.png"
    rows = [
        _labels(f"{real}/000/000.png", 0, "female"),
        _labels(f"{real}/999/003.png", 0),
        _labels(f"{real}/998/015.png", 0),
        _labels("dataset/frames/999/003.png", 0),  # generic layout: folder 999
        _labels(f"{real}/003.png", 0),  # no video folder at all
        _labels(fake.format("Face2Face"), 1, "female"),
        _labels(fake.format("FaceSwap"), 1),  # a method the index lacks
        _labels(f"{real}/000/001.png", 1),  # layout says real, CSV says fake: no match
    ]
    out, report = import_demographics(index, rows, ["gender"], max_unmatched=1)
    assert {k: g for k, g in _gender(out).items() if g} == {
        ("real", "000"): "female",
        ("Face2Face", "000_003"): "female",
    }
    assert report.rows_matched == 2
    assert report.unmatched_by_layout == {"FF++": 5, "generic": 1}
    assert parse_frame_path(f"{real}/999/003.png").video == "999"
    assert parse_frame_path(f"{real}/003.png").video is None


def test_deepfakebench_index_and_paths() -> None:
    """A DeepfakeBench JSON import: methods are its label names (FF-DF...), frames its folders."""
    dfb = "FaceForensics++/{}/c23/frames/{}/{:03d}.png"

    def video(vid: str, label: int, method: str, folder: str) -> VideoEntry:
        frames = [dfb.format(folder, vid, i) for i in range(2)]
        return VideoEntry(vid, label, method, "test", frames)

    index = DatasetIndex(
        "FaceForensics++",
        "deepfake",
        [
            video("000", 0, "real", "original_sequences/youtube"),
            video("003", 0, "real", "original_sequences/youtube"),
            video("000_003", 1, "FF-DF", "manipulated_sequences/Deepfakes"),
            video("000_003", 1, "FF-F2F", "manipulated_sequences/Face2Face"),
        ],
        root=".",
    )
    assert index_layout(index) == "FF++"
    rows = [
        _labels("/mnt/dfb/" + dfb.format("manipulated_sequences/Deepfakes", "000_003", 5), 1),
        _labels("0_Face2Face_000_003_7.png", 1, "female"),  # AI-Face file name
        _labels(dfb.format("original_sequences/youtube", "003", 0), 0, "female"),
        _labels(dfb.format("original_sequences/youtube", "030", 3), 0),  # not in the index
    ]
    out, report = import_demographics(index, rows, ["gender"])
    assert _gender(out) == {
        ("real", "000"): None,
        ("real", "003"): "female",
        ("FF-DF", "000_003"): "male",
        ("FF-F2F", "000_003"): "female",
    }
    assert report.rows_matched == 3


def test_celebdf_layout_attaches_only_to_its_videos() -> None:
    index = DatasetIndex(
        "CDFv2",
        "deepfake",
        [
            _video("id0_0000", 0, "real", "../raw/Celeb-DF-v2/Celeb-real/id0_0000.mp4"),
            _video("id0_0001", 0, "real", "../raw/Celeb-DF-v2/Celeb-real/id0_0001.mp4"),
            _video("id0_id1_0000", 1, "Celeb-synthesis", "../raw/Celeb-DF-v2/Celeb-synthesis/id0_id1_0000.mp4"),
            _video("00000", 0, "real", "../raw/Celeb-DF-v2/YouTube-real/00000.mp4"),
            _video("000", 0, "real", "../raw/elsewhere/real/000.mp4"),  # a frame-number-like id
        ],
        root=".",
    )  # fmt: skip
    rows = [
        _labels("Celeb-DF-v2/Celeb-real/frames/id0_0000/000.png", None, "female"),
        _labels("Celeb-synthesis/id0_id1_0000_3.png", 1),
        _labels("YouTube-real/frames/00000/00012.png", 0, "female"),
        _labels("Celeb-real/id0_0002/000.png", 0),  # not in the index (not video 000)
        _labels("Celeb-real/id0_0001_7.png", 1),  # Target 1 in a real folder: no match
    ]
    out, report = import_demographics(index, rows, ["gender"])
    assert list(_gender(out).values()) == ["female", None, "male", "female", None]
    assert report.unmatched_by_layout == {"Celeb-DF": 2}


def test_dfd_dfdc_and_generic_layouts() -> None:
    dfd = DatasetIndex(
        "DFD",
        "deepfake",
        [
            _video("01__walking", 0, "real", "../DFD/original_sequences/actors/c23/videos/01__walking.mp4"),
            _video("01_02__walking__ABCDEFGH", 1, "DeepFakeDetection", "../DFD/x.mp4"),
        ],
        root=".",
    )  # fmt: skip
    rows = [
        _labels("DFD/original_sequences/actors/c23/frames/01__walking/004.png", 0, "female"),
        _labels(
            "manipulated_sequences/DeepFakeDetection/c23/frames/01_02__walking__ABCDEFGH/1.png", 1
        ),  # fmt: skip
    ]
    out, _ = import_demographics(dfd, rows, ["gender"], max_unmatched=0)
    assert list(_gender(out).values()) == ["female", "male"]

    dfdc = DatasetIndex(
        "DFDC",
        "deepfake",
        [_video("aabbccddee", 1, "DFDC", "../dfdc/test/aabbccddee.mp4"),
         _video("bbccddeeff", 0, "real", "../dfdc/test/bbccddeeff.mp4")],
        root=".",
    )  # fmt: skip
    rows = [
        _labels("DFDC/test/frames/aabbccddee/004.png", None),
        _labels("DFDC_train_single/DFDC_validation_single/bbccddeeff_12.png", 0, "female"),
        _labels("dfdc/validation/004.png", 0),  # no video named
    ]
    out, report = import_demographics(dfdc, rows, ["gender"])
    assert list(_gender(out).values()) == ["male", "female"]
    assert report.unmatched_by_layout == {"DFDC": 1}

    # generic: images are the items (source = the image), frames of our own layout also match
    generic = DatasetIndex(
        "faces",
        "deepfake",
        [
            VideoEntry("fake__AttGAN__img001.png", 1, "AttGAN", "test", ["AttGAN/a1/frames/000.png"],
                       source="../faces/fake/AttGAN/img001.png"),
            VideoEntry("clip7", 0, "real", "test", ["real/clip7/frames/000.png"],
                       source="../faces/real/clip7.mp4"),
        ],
        root=".",
    )  # fmt: skip
    rows = [
        _labels("/abs/AttGAN/img001.png", None, "female"),
        _labels("x/real/clip7/frames/000.png", 0),
        _labels("AttGAN/img002.png", 1),  # not in the index
    ]
    out, _ = import_demographics(generic, rows, ["gender"])
    assert list(_gender(out).values()) == ["female", "male"]
    # a one-video index is not matched by a bare frame number
    one = DatasetIndex("one", "deepfake", [VideoEntry("v", 0, "real", "test", ["v/frames/003.png"])], root=".")  # fmt: skip
    with pytest.raises(DemographicsError, match="1 of 1 demographic rows"):
        import_demographics(one, [_labels("other/frames/003.png", 0)], ["gender"])


def test_another_datasets_csv_is_refused() -> None:
    """A Celeb-DF CSV on an FF++ index (and on a generic index with a video 000)."""
    rows = [_labels(f"Celeb-real/id0_{i:04d}/000.png", 0) for i in range(5)]
    rows.append(_labels("0_youtube_000_1.png", 0))  # one FF++ row matches
    with pytest.raises(DemographicsError) as err:
        import_demographics(_ff_index(), rows, ["gender"])
    message = str(err.value)
    assert "FF: 5 of 6 demographic rows (83%) match no video" in message
    assert "look like Celeb-DF (5 rows, e.g. Celeb-real/id0_0000/000.png)" in message
    assert "the index's videos look like FF++: the CSV is for another dataset" in message
    demo = DatasetIndex("demo", "deepfake", [_video("000", 0, "real")], root=".")
    with pytest.raises(DemographicsError, match=r"demo: 5 of 5 .* look like Celeb-DF .* generic"):
        import_demographics(demo, rows[:5], ["gender"], max_unmatched=1)


# ----------------------------------------------------------------------------------- command


def _main(*args: object) -> int:
    """The command in this process (the subprocess run below checks the real entry point)."""
    sys.path.insert(0, str(REPO / "scripts"))
    try:
        import import_demographics
    finally:
        sys.path.pop(0)
    return import_demographics.main([str(a) for a in args])


def test_script_reports_matches_and_refuses_other_datasets(tmp_path: Path, capsys) -> None:
    index = _ff_index()
    index.root = tmp_path
    write_index(index, tmp_path / "FF.json")
    csv_path = _write(tmp_path / "ff.csv", _rows_ff())
    assert (
        _main("--index", tmp_path / "FF.json", "--csv", csv_path, "--out", tmp_path / "FF.json")
        == 0
    )
    report = json.loads(capsys.readouterr().out)
    assert report["videos_matched"] == 4 and report["formats"] == {str(csv_path): "AI-Face"}
    labelled = read_index(tmp_path / "FF.json")
    assert {v.attributes.get("gender") for v in labelled.videos} == {"female", "male", None}

    celeb = _write(
        tmp_path / "celeb.csv",
        [[f"Celeb-real/id0_{i:04d}/000.png", 0, 1, -1, -1, -1, 3] for i in range(3)]
        + [["0_youtube_003_1.png", 0, 1, 1, -1, -1, 1]],
        ["img_path", "label", "ismale", "isasian", "iswhite", "isblack", "intersec_label"],
    )
    args = ["--index", tmp_path / "FF.json", "--csv", celeb, "--out", tmp_path / "x.json"]
    script = REPO / "scripts" / "import_demographics.py"
    run = subprocess.run(
        [sys.executable, str(script), *map(str, args)], capture_output=True, text=True
    )
    assert run.returncode == 2
    assert "3 of 4 demographic rows (75%) match no video" in run.stderr
    assert "look like Celeb-DF" in run.stderr and not (tmp_path / "x.json").exists()
    assert _main(*args, "--max-unmatched", "1") == 0  # on request: the FF++ row is imported
    assert json.loads(capsys.readouterr().out)["unmatched_by_layout"] == {"Celeb-DF": 3}
    with pytest.raises(SystemExit):
        _main(*args, "--max-unmatched", "2")


@pytest.mark.extended
def test_official_ff_ids_with_frame_numbers_that_are_video_ids(tmp_path: Path) -> None:
    """The real FF++ ids (official split files): a CSV for all 5,000 videos whose frame numbers
    are ids of test videos, on an index of the test split; each test video gets its own label."""
    splits = shared("data", "faceforensics_splits")
    pairs = {s: json.loads((splits / f"{s}.json").read_text()) for s in ("train", "val", "test")}
    methods = ["Deepfakes", "Face2Face", "FaceSwap", "NeuralTextures"]

    def videos(split: str) -> list[tuple[str, str]]:
        ids = [(vid, "real") for pair in pairs[split] for vid in pair]
        fakes = [f"{a}_{b}" for a, b in pairs[split]] + [f"{b}_{a}" for a, b in pairs[split]]
        return ids + [(vid, m) for m in methods for vid in fakes]

    test_reals = sorted(vid for vid, m in videos("test") if m == "real")
    index = DatasetIndex(
        "FF-c23", "deepfake",
        [_video(vid, int(m != "real"), m) for vid, m in videos("test")], root=".",
    )  # fmt: skip
    gender = {key: ("male", "female")[sum(map(ord, "".join(key))) % 2] for key in (
        (m, vid) for s in pairs for vid, m in videos(s))}  # fmt: skip
    rows = []
    for (method, vid), g in gender.items():
        folder = ("original_sequences/youtube" if method == "real"
                  else f"manipulated_sequences/{method}")  # fmt: skip
        for k in range(3):  # frame numbers that are ids of test videos
            frame = int(test_reals[(len(rows) + k) % len(test_reals)])
            path = f"FaceForensics++/{folder}/c23/frames/{vid}/{frame:03d}.png"
            rows.append([path, int(g == "male"), 1, 1, 1, int(method != "real")])
    read = read_demographics_csv(_write(tmp_path / "all.csv", rows))
    assert len(read.rows) == 15000
    with pytest.raises(DemographicsError, match="pass --max-unmatched 1"):
        import_demographics(index, read.rows, ["gender"])
    out, report = import_demographics(index, read.rows, ["gender"], max_unmatched=1)
    assert report.matched == len(index.videos) == 700
    assert report.rows_matched == 2100 and report.unmatched_by_layout == {"FF++": 12900}
    for v in out.videos:
        assert v.attributes == {"gender": gender[v.key], "gender_agreement": "1.000"}, v.key
