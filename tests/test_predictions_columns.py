"""Predictions as columns (issue 47): the C reader and writer give the old arrays and bytes,
Parquet round-trips, the integer codes agree with the strings, rebasing gives the old paths."""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath

import numpy as np
import pytest

from fairforensics.evaluation.categorical import Categorical
from fairforensics.evaluation.metrics import factorize
from fairforensics.evaluation.predictions import (
    Predictions,
    PredictionsError,
    _float_cells,
    read_predictions,
    write_predictions,
)
from fairforensics.preprocessing.index import DatasetIndex, VideoEntry, rebase_index
from tests.predictions_reference import old_csv_text, old_read_columns

STRINGS = ("dataset", "video_id", "method", "unit")
COLUMNS = ("dataset", "video_id", "frame", "label", "score", "method", "unit")


def synthetic(n: int = 3000, seed: int = 0) -> Predictions:
    """Seeded rows with every awkward cell: commas, quotes, newlines, non-ASCII, empty cells,
    scores from 0 to 1 at every scale (Python writes 1e-05 where Arrow writes 0.00001)."""
    rng = np.random.default_rng(seed)

    def pick(options: list[str], size: int = n) -> np.ndarray:
        return np.array(options, dtype=object)[rng.integers(0, len(options), size)]

    score = rng.random(n) ** rng.integers(1, 60, n)
    score[:8] = [0.0, 1.0, 1e-5, 2.5e-6, 5e-324, 1e-4, 0.1, 0.30000001192092896]
    return Predictions(
        dataset=pick(["FF", "DF,40"]),
        video_id=pick([f"{i:04d}" for i in range(n // 32 + 1)] + ['q"x', "a\nb", " sp "]),
        frame=rng.integers(0, 300, n),
        label=rng.integers(0, 2, n),
        score=score,
        method=pick(["real", "Deepfakes", "Face,Swap", "é"]),
        attributes={"gender": pick(["female", "male", ""]), "race": pick(["a", "b;c", '"d"'])},
        unit=pick(["frame", "clip"]),
    )


def old_columns(pred: Predictions) -> dict[str, np.ndarray]:
    return {c: getattr(pred, c) for c in COLUMNS}


def assert_same(pred: Predictions, ref: dict[str, np.ndarray], attributes: list[str]) -> None:
    for c in COLUMNS:
        got = getattr(pred, c)
        assert got.dtype == ref[c].dtype, c
        assert np.array_equal(got, ref[c]), c
        if c in STRINGS:
            assert all(type(v) is str for v in got), c
    assert sorted(pred.attributes) == attributes
    for k in attributes:
        assert np.array_equal(pred.attributes[k], ref[k]), k


def test_written_bytes_are_the_old_writers(tmp_path) -> None:
    pred = synthetic()
    path = tmp_path / "p.csv"
    write_predictions(path, pred)
    expected = old_csv_text(old_columns(pred), dict(pred.attributes))
    assert path.read_bytes() == expected.encode("utf-8")
    empty = pred.subset(np.zeros(len(pred), dtype=bool))
    write_predictions(path, empty)
    assert path.read_bytes() == old_csv_text(old_columns(empty), dict(empty.attributes)).encode()


def test_scores_are_written_as_python_writes_them() -> None:
    rng = np.random.default_rng(3)
    x = np.concatenate(
        [
            rng.random(20000),
            rng.random(20000) ** 40,
            np.exp(rng.uniform(-745, 709, 20000)) * rng.choice([-1, 1], 20000),
            rng.integers(-(10**12), 10**12, 2000).astype(float),
            np.array([0.0, -0.0, 1e16, 1e9, 999999999.0, 9.999999999999999e-05, 9.99e-7]),
        ]
    )
    assert _float_cells(x).to_pylist() == [repr(float(v)) for v in x]


def test_reader_gives_the_old_arrays(tmp_path) -> None:
    pred = synthetic(seed=1)
    path = tmp_path / "p.csv"
    path.write_text(
        old_csv_text(old_columns(pred), dict(pred.attributes)), encoding="utf-8", newline=""
    )
    assert_same(read_predictions(path), old_read_columns(path), ["gender", "race"])
    old = tmp_path / "old.csv"  # no unit column; quoted numbers; numbers Python reads, Arrow not
    old.write_text(
        'dataset,video_id,frame,label,score,method,gender\nFF,1,"3",0,"0.5",real,m\n'
        "FF,2, 4,1,0.25,fake,\nFF,3,1_0,1,0.75,fake,f\n",
        encoding="utf-8",
    )
    assert_same(read_predictions(old), old_read_columns(old), ["gender"])


def test_parquet_round_trip_is_the_csv(tmp_path) -> None:
    pred = synthetic(seed=2)
    write_predictions(tmp_path / "p.csv", pred)
    from_csv = read_predictions(tmp_path / "p.csv")
    write_predictions(tmp_path / "p.parquet", from_csv)
    from_parquet = read_predictions(tmp_path / "p.parquet")
    assert_same(from_parquet, old_read_columns(tmp_path / "p.csv"), ["gender", "race"])
    write_predictions(tmp_path / "back.csv", from_parquet)
    assert (tmp_path / "back.csv").read_bytes() == (tmp_path / "p.csv").read_bytes()
    (tmp_path / "bad.parquet").write_bytes(b"not parquet")
    with pytest.raises(PredictionsError, match="bad.parquet: not a readable Parquet file"):
        read_predictions(tmp_path / "bad.parquet")


def test_codes_agree_with_the_strings() -> None:
    pred = synthetic(seed=4)
    old_key = np.array(
        [f"{d}/{m}/{v}" for d, m, v in zip(pred.dataset, pred.method, pred.video_id, strict=True)],
        dtype=object,
    )
    codes, keys = pred.video_codes()
    ref_codes, ref_keys = factorize(old_key)
    assert np.array_equal(codes, ref_codes) and np.array_equal(keys, ref_keys)
    assert np.array_equal(pred.video_key, old_key)
    for column in ("video_id", "method", "gender"):
        c, values = pred.codes(column)
        assert np.array_equal(values[c], pred.categorical(column).values)
        assert np.array_equal(values, np.unique(values)), "values sorted and distinct"
    # keys that collide as strings ("a/b" + "c" and "a" + "b/c") are one video, as before
    odd = Predictions(["a/b", "a"], ["v", "v"], [0, 0], [0, 0], [0.1, 0.2], ["c", "b/c"])
    assert odd.video_codes()[0].tolist() == [0, 0]


def test_subset_concat_and_columns_keep_the_old_behaviour() -> None:
    pred = synthetic(seed=5)
    rows = np.random.default_rng(0).random(len(pred)) < 0.3
    part = pred.subset(rows)
    for c in ("video_id", "method", "unit"):
        assert np.array_equal(getattr(part, c), getattr(pred, c)[rows])
        assert set(part.categorical(c).categories) == set(getattr(pred, c)[rows])
    both = Predictions.concat([part, Predictions(["X"], ["v"], [0], [1], [0.5], ["m"])])
    assert both.attributes["gender"][-1] == "" and both.video_id[-1] == "v"
    assert np.array_equal(both.video_id[:-1], part.video_id)
    with pytest.raises(ValueError, match="read-only"):
        pred.method[0] = "other"  # a column changes only by assigning it whole
    method = pred.method.copy()
    method[0] = "other"
    pred.method = method
    assert pred.method[0] == "other" and "other" in pred.video_key[0]
    cat = Categorical.from_values([3, None, 3, "x"])  # values that are not strings stay as given
    assert cat.values.tolist() == [3, None, 3, "x"]


def old_rebase(index: DatasetIndex, new_root: Path) -> list[list[str]]:
    """Every path of ``index`` as the old rebase_index wrote it (os.path.relpath per path)."""
    new_root, old_root = new_root.resolve(), Path(index.root).resolve()
    move = lambda rel: PurePosixPath(  # noqa: E731
        Path(os.path.relpath(old_root / rel, new_root)).as_posix()
    ).as_posix()
    return [[move(p) for p in v.frames + (v.masks or [])] for v in index.videos]


@pytest.mark.parametrize(
    "new", [".", "..", "../other/place", "sub", "sub/deeper", "A", "A/x", "Ab/x"]
)
def test_rebase_gives_the_old_paths(tmp_path, new: str) -> None:
    root = tmp_path / "data" / "here"
    frames = [
        ["A/v1/0.png", "A/v1/1.png"],
        ["sub/v2/0.png", "sub/deeper/v2.png"],  # enter the new root when it is below
        ["A/./v3/0.png", "A/../B/0.png"],  # parts that relpath normalises
        ["Ab/x/0.png", "A/x"],
    ]
    videos = [
        VideoEntry(f"v{i}", 0, "real", "test", f, masks=[p + ".m" for p in f])
        for i, f in enumerate(frames)
    ]
    index = DatasetIndex("D", "deepfake", videos, root=root)
    moved = rebase_index(index, root / new)
    assert [v.frames + v.masks for v in moved.videos] == old_rebase(index, root / new)
    assert moved.root == (root / new).resolve()


def old_path_errors(items: list, where: str) -> list[str]:
    """The old per-path check of the index validator (PurePosixPath per path)."""
    errors = []
    for i, value in enumerate(items):
        w = f"{where}[{i}]"
        if not isinstance(value, str) or not value:
            errors.append(f"{w}: expected a non-empty relative path string, got {value!r}")
        elif "\\" in value or value.startswith("/") or PurePosixPath(value).is_absolute():
            errors.append(f"{w}: path {value!r} must be relative to the index, with '/'")
        elif len(value) > 1 and value[1] == ":":
            errors.append(f"{w}: path {value!r} looks like a Windows absolute path")
    return errors


@pytest.mark.parametrize("bad", ["", "/abs/a.png", "C:/x/a.png", "a\\b.png", 3, None, "x:"])
@pytest.mark.parametrize("at", [0, 1, 2])
def test_index_path_errors_are_the_old_ones(bad, at: int) -> None:
    from fairforensics.preprocessing.index import validate_index

    frames = ["m/v/0.png", "m/v/1.png", "m/v/2.png"]
    frames[at] = bad
    masks = list(reversed(frames))
    video = {"id": "v", "label": 0, "method": "real", "split": "test", "frames": frames,
             "landmarks": None, "masks": masks, "attributes": {}}  # fmt: skip
    data = {"schema_version": 1, "dataset": "D", "task": "deepfake", "videos": [video]}
    where = "src: video real/v: "
    expected = old_path_errors(frames, where + "frames") + old_path_errors(masks, where + "masks")
    assert validate_index(data, "src") == expected


def test_written_index_is_the_old_bytes(tmp_path) -> None:
    from dataclasses import asdict

    from fairforensics.configs.crop import CropSpec
    from fairforensics.preprocessing.files import write_json
    from fairforensics.preprocessing.index import write_index

    videos = [
        VideoEntry(
            "a",
            0,
            "real",
            "train",
            ["r/a/0.png", "r/a/1.png"],
            ["r/a/0.npy", "r/a/1.npy"],
            None,
            {"gender": "female"},
            "id1",
            "src/a.mp4",
            [0, 8],
            [[0, 2]],
        ),  # fmt: skip
        VideoEntry("b", 1, "DF", "test", ["f/b/0.png"], attributes={"race": "é"}),
    ]
    index = DatasetIndex("D", "deepfake", videos, methods=["real", "DF"], videos_listed=3,
                         videos_found=2, crop=CropSpec(method="template", scale=1.3, size=256),
                         preprocess={"face": {"score": float("nan"), "size": 256}})  # fmt: skip
    write_index(index, tmp_path / "new.json")
    old = index.to_json() | {
        "videos": [
            {k: v for k, v in asdict(e).items() if v is not None or k in _REQUIRED_KEYS}
            for e in videos
        ]
    }
    write_json(tmp_path / "old.json", old)
    assert (tmp_path / "new.json").read_bytes() == (tmp_path / "old.json").read_bytes()
    entry = videos[0].to_json()
    entry["frames"].append("x")
    entry["clips"][0][1] = 5
    assert videos[0].frames == ["r/a/0.png", "r/a/1.png"] and videos[0].clips == [[0, 2]]


_REQUIRED_KEYS = ("id", "label", "method", "split", "frames", "landmarks", "masks", "attributes")


def test_combine_gives_the_old_paths(tmp_path) -> None:
    from fairforensics.preprocessing.combine import combine_indexes

    parts = []
    for name in ("A", "B"):
        root = tmp_path / name.lower()
        videos = [VideoEntry(f"v{i}", i % 2, "real" if i % 2 == 0 else "DF", "test",
                             [f"m/v{i}/{k}.png" for k in range(3)]) for i in range(4)]  # fmt: skip
        parts.append(DatasetIndex(name, "deepfake", videos, root=root))
    out = tmp_path / "out"
    combined = combine_indexes(parts, "AB", out)
    expected = [paths for part in parts for paths in old_rebase(part, out)]
    assert [v.frames for v in combined.videos] == expected
    assert combined.videos[0].frames[0] == "../a/m/v0/0.png"
