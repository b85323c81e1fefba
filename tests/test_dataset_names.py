"""Dataset names resolve to index files under the data root, ours or DeepfakeBench's."""

from __future__ import annotations

import json

import pytest

from fairforensics.preprocessing.index import (
    DatasetIndex,
    DatasetIndexError,
    VideoEntry,
    write_index,
)
from fairforensics.preprocessing.resolve import resolve_datasets


def test_names_resolve_to_our_index_and_to_deepfakebench_json(tmp_path) -> None:
    ours = DatasetIndex("mine", "deepfake", [VideoEntry("a", 0, "real", "test", ["mine/a/0.png"])])
    write_index(ours, tmp_path / "mine.json")
    frames = {"000": ["FF/original/000/000.png"], "000_003": ["FF/Deepfakes/000_003/000.png"]}
    dfb = {
        "FF-c23": {
            "FF-real": {"test": {"c23": {"000": {"label": "FF-real", "frames": frames["000"]}}}},
            "FF-DF": {
                "test": {"c23": {"000_003": {"label": "FF-DF", "frames": frames["000_003"]}}}
            },
        }
    }
    (tmp_path / "FF-c23.json").write_text(json.dumps(dfb))
    for rel in [*frames["000"], *frames["000_003"]]:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_bytes(b"png")
    mine, ff = resolve_datasets(tmp_path, ["mine", "FF-c23"])
    assert mine.dataset == "mine" and [v.id for v in mine.videos] == ["a"]
    assert {(v.id, v.label) for v in ff.videos} == {("000", 0), ("000_003", 1)}
    assert all(ff.resolve(f).is_file() for v in ff.videos for f in v.frames)


def test_missing_dataset_names_the_file(tmp_path) -> None:
    with pytest.raises(DatasetIndexError, match=r"nope\.json: dataset index not found"):
        resolve_datasets(tmp_path, ["nope"])


def test_a_json_path_is_kept_and_every_command_uses_the_same_resolver(tmp_path) -> None:
    from fairforensics.preprocessing.resolve import resolve_index, resolve_index_path

    ours = DatasetIndex("mine", "deepfake", [VideoEntry("a", 0, "real", "test", ["mine/a/0.png"])])
    write_index(ours, tmp_path / "sub" / "mine.json")
    path = tmp_path / "sub" / "mine.json"
    assert resolve_index_path(path, tmp_path / "elsewhere") == path
    assert resolve_index_path("mine", tmp_path / "sub") == tmp_path / "sub" / "mine.json"
    assert resolve_index("mine", tmp_path / "sub").dataset == "mine"
    with pytest.raises(DatasetIndexError, match=r"other\.json: dataset index not found"):
        resolve_index_path("other", tmp_path)
