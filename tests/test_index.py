"""Dataset index schema (v1, and v2 with clips): validation, atomic round trip, clear errors."""

from __future__ import annotations

import json

import pytest

from fairforensics.preprocessing.index import (
    DatasetIndex,
    DatasetIndexError,
    VideoEntry,
    read_index,
    validate_index,
    write_index,
)


def video(vid: str = "000", label: int = 0, method: str = "real", n: int = 2) -> VideoEntry:
    return VideoEntry(
        id=vid,
        label=label,
        method=method,
        split="train",
        frames=[f"{method}/{vid}/frames/{i:03d}.png" for i in range(n)],
        landmarks=[f"{method}/{vid}/landmarks/{i:03d}.npy" for i in range(n)],
        attributes={"gender": "female"},
    )


def make_files(root, index: DatasetIndex) -> None:
    for v in index.videos:
        for rel in v.frames + (v.landmarks or []):
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_bytes(b"x")


def test_round_trip_with_repeated_ids_across_methods(tmp_path) -> None:
    index = DatasetIndex(
        "FF",
        "deepfake",
        [video(), video("000_003", 1, "Deepfakes"), video("000_003", 1, "FaceSwap")],
    )
    path = tmp_path / "FF.json"
    write_index(index, path)
    make_files(tmp_path, index)
    back = read_index(path, check_files=True)
    assert [v.key for v in back.videos] == [v.key for v in index.videos]
    assert back.root == tmp_path.resolve()
    assert back.resolve(back.videos[0].frames[0]).is_file()
    assert back.method_names == ["real", "Deepfakes", "FaceSwap"]
    assert back.attribute_names == ["gender"]
    assert not list(tmp_path.glob(".*.tmp")), "atomic write left a temporary file"


def test_missing_frame_is_named(tmp_path) -> None:
    index = DatasetIndex("FF", "deepfake", [video()])
    path = tmp_path / "FF.json"
    write_index(index, path)
    with pytest.raises(
        DatasetIndexError, match=r"frames file 'real/000/frames/000.png' does not exist"
    ):
        read_index(path, check_files=True)


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda d: d.update(schema_version=5), "schema_version must be 1 or 2 or 3 or 4"),
        (lambda d: d.update(videos_listed=3, videos_found=2), "needs schema_version 3"),
        (lambda d: d.update(schema_version=3, videos_listed=2), "go together"),
        (lambda d: d.update(schema_version=3, videos_listed=2, videos_found=3), "more than"),
        (lambda d: d.update(schema_version=3, videos_listed=-1, videos_found=0), "integer >= 0"),
        (lambda d: d.update(schema_version=3, crop={"method": "tight"}), "crop: key 'method'"),
        (lambda d: d["videos"][0].update(clips=[[0, 2]]), "'clips' needs schema_version 2"),
        (lambda d: d["videos"][0].update(label=2), "'label' must be 0"),
        (lambda d: d["videos"][0].update(split="training"), "'split' must be one of"),
        (lambda d: d["videos"][0].update(frames=[]), "'frames' must be a non-empty list"),
        (lambda d: d["videos"][0].update(frames=["/abs/a.png", "b.png"]), "must be relative"),
        (lambda d: d["videos"][0].update(frames=["C:\\x\\a.png", "b.png"]), "must be relative"),
        (lambda d: d["videos"][0].update(landmarks=["a.npy"]), "has 1 entries but the video has 2"),
        (lambda d: d["videos"][0].pop("method"), "missing keys ['method']"),
        (lambda d: d["videos"].append(dict(d["videos"][0])), "duplicate video"),
        (lambda d: d["videos"][0].update(attributes={"age": 30}), "'attributes' must map strings"),
        (lambda d: d.update(extra=1), "unknown top-level key 'extra'"),
        (lambda d: d.update(task="audio"), "'task' must be one of"),
    ],
)
def test_broken_index_is_rejected_with_reason(tmp_path, edit, message: str) -> None:
    data = DatasetIndex("FF", "deepfake", [video()]).to_json()
    edit(data)
    assert any(message in e for e in validate_index(data, "x.json"))
    path = tmp_path / "broken.json"
    path.write_text(json.dumps(data))
    with pytest.raises(DatasetIndexError) as err:
        read_index(path)
    assert str(path) in str(err.value) and message in str(err.value)


def test_unreadable_index_files(tmp_path) -> None:
    with pytest.raises(DatasetIndexError, match="not found"):
        read_index(tmp_path / "none.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(DatasetIndexError, match="not valid JSON"):
        read_index(bad)


def test_invalid_index_is_never_written(tmp_path) -> None:
    index = DatasetIndex("FF", "deepfake", [video(label=5)])
    with pytest.raises(DatasetIndexError, match="refusing to write"):
        write_index(index, tmp_path / "x.json")
    assert not (tmp_path / "x.json").exists()


@pytest.mark.parametrize(
    ("clips", "message"),
    [
        ([[0, 3]], "inside the 2 frames"),
        ([[1, 1], [0, 1]], "sorted, non-overlapping"),
        ([[0, 0]], "at least one frame"),
        ([[0, 1, 2]], "[first position, length] pairs"),
        ([["0", 1]], "[first position, length] pairs"),
        ({"0": 1}, "[first position, length] pairs"),
    ],
)
def test_broken_clips_are_rejected(clips, message: str) -> None:
    data = DatasetIndex("FF", "deepfake", [video()]).to_json()
    data["schema_version"] = 2
    data["videos"][0]["clips"] = clips
    assert any(message in e for e in validate_index(data, "x.json")), validate_index(data)


def test_clips_round_trip_as_version_2_and_plain_indexes_stay_version_1(tmp_path) -> None:
    plain = DatasetIndex("FF", "deepfake", [video(n=4)])
    write_index(plain, tmp_path / "plain.json")
    assert json.loads((tmp_path / "plain.json").read_text())["schema_version"] == 1
    clipped = video("001", n=4)
    clipped.clips = [[0, 2], [2, 2]]
    write_index(DatasetIndex("FF", "deepfake", [video(n=4), clipped]), tmp_path / "clips.json")
    data = json.loads((tmp_path / "clips.json").read_text())
    assert data["schema_version"] == 2 and "clips" not in data["videos"][0]
    back = read_index(tmp_path / "clips.json")
    assert back.videos[0].clips is None and back.videos[1].clips == [[0, 2], [2, 2]]


def test_counts_and_crop_round_trip_as_version_3_and_name_a_partial_set(tmp_path) -> None:
    """Issue 29 items 3 and 5: an index records how many listed videos were found and its crop;
    a partial one is labelled as such; older indexes read with both unknown."""
    from fairforensics.configs.crop import CropSpec

    crop = CropSpec("mesonet", 2.86, 256)
    index = DatasetIndex("FF-c23", "deepfake", [video()], videos_listed=6000, videos_found=42)
    index.crop = crop
    write_index(index, tmp_path / "ff.json")
    data = json.loads((tmp_path / "ff.json").read_text())
    assert data["schema_version"] == 3 and data["videos_listed"] == 6000
    back = read_index(tmp_path / "ff.json")
    assert back.crop == crop and (back.videos_listed, back.videos_found) == (6000, 42)
    assert back.label == "FF-c23 (partial: 42 of 6,000 listed videos)"
    whole = DatasetIndex("FF-c23", "deepfake", [video()], videos_listed=7, videos_found=7)
    assert whole.partial is None and whole.label == "FF-c23"
    old = DatasetIndex("FF-c23", "deepfake", [video()])
    write_index(old, tmp_path / "old.json")
    back = read_index(tmp_path / "old.json")
    assert back.crop is None and back.partial is None and back.videos_listed is None


def test_version_4_keys_source_root_and_videos_pending(tmp_path) -> None:
    index = DatasetIndex("FF", "deepfake", [video()], source_root="/data/raw", videos_pending=3)
    data = index.to_json()
    assert data["schema_version"] == 4
    assert (data["source_root"], data["videos_pending"]) == ("/data/raw", 3)
    write_index(index, tmp_path / "FF.json")
    back = read_index(tmp_path / "FF.json")
    assert (back.source_root, back.videos_pending) == ("/data/raw", 3)
    old = DatasetIndex("FF", "deepfake", [video()]).to_json()
    assert "source_root" not in old and old["schema_version"] == 1  # unknown: absent
    for edit, message in [
        ({"source_root": ""}, "'source_root' must be a non-empty path string"),
        ({"source_root": 3}, "'source_root' must be a non-empty path string"),
        ({"videos_pending": -1}, "'videos_pending' must be an integer >= 0"),
        ({"videos_pending": True}, "'videos_pending' must be an integer >= 0"),
        ({"schema_version": 3}, "'source_root', 'videos_pending' needs schema_version 4"),
    ]:
        assert any(message in e for e in validate_index({**data, **edit}, "x.json")), edit
