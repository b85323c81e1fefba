"""Combining dataset indexes (the CAAD-PAD index of paper 001 from its PAD datasets)."""

import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from fairforensics.cli import main as fairforensics_main
from fairforensics.preprocessing.combine import combine_indexes
from fairforensics.preprocessing.index import (
    DatasetIndex,
    DatasetIndexError,
    VideoEntry,
    read_index,
    write_index,
)
from scripts.combine_indexes import main
from tests.test_cli import run_command


def _index(folder: Path, name: str, task: str = "pad", attrs: dict | None = None) -> Path:
    folder.mkdir(parents=True)
    videos = []
    for i, (label, split) in enumerate([(0, "train"), (1, "train"), (1, "test")]):
        rel = f"v{i}/000.png"
        (folder / f"v{i}").mkdir()
        Image.fromarray(np.full((4, 4, 3), 40 * i, np.uint8)).save(folder / rel)
        videos.append(
            VideoEntry(
                id=f"v{i}",
                label=label,
                method="real" if label == 0 else "print",
                split=split,
                frames=[rel],
                attributes=dict(attrs or {"gender": "female" if i else "male"}),
                identity=f"s{i}",
            )
        )
    index = DatasetIndex(name, task, videos, root=folder, split_info={"test": "official"})
    write_index(index, folder / f"{name}.json")
    return folder / f"{name}.json"


def test_combine_prefixes_keys_carries_attributes_and_rebases_paths(tmp_path):
    a = read_index(_index(tmp_path / "a" / "deep", "CASIA"))
    b = read_index(_index(tmp_path / "b", "HKBU", attrs={"gender": "male", "eyeglasses": "yes"}))
    out = tmp_path / "combined"
    combined = combine_indexes([a, b], "CAAD-PAD", out)
    write_index(combined, out / "CAAD-PAD.json")
    back = read_index(out / "CAAD-PAD.json", check_files=True)
    assert back.dataset == "CAAD-PAD" and back.task == "pad"
    assert [v.id for v in back.videos] == [f"{d}/v{i}" for d in ("CASIA", "HKBU") for i in range(3)]
    assert back.videos[0].identity == "CASIA/s0" and back.videos[3].identity == "HKBU/s0"
    assert back.videos[4].attributes == {"gender": "male", "eyeglasses": "yes"}
    assert back.videos[1].attributes == {"gender": "female"}  # missing stays missing
    for src, dst in zip(a.videos + b.videos, back.videos, strict=True):
        assert (src.label, src.method, src.split) == (dst.label, dst.method, dst.split)
        ix = a if src in a.videos else b
        assert back.resolve(dst.frames[0]).resolve() == ix.resolve(src.frames[0]).resolve()
    assert back.method_names == ["real", "print"]
    assert back.split_info == {"test": "CASIA: official; HKBU: official"}


def test_combined_counts_add_up_and_stay_partial(tmp_path):
    """Issue 29 item 5: a combination with a partial part is partial; one uncounted part makes
    the total unknown."""
    a = read_index(_index(tmp_path / "a", "CASIA"))
    b = read_index(_index(tmp_path / "b", "HKBU"))
    a.videos_listed, a.videos_found = 100, 3
    b.videos_listed, b.videos_found = 3, 3
    combined = combine_indexes([a, b], "CAAD-PAD", tmp_path)
    assert combined.label == "CAAD-PAD (partial: 6 of 103 listed videos)"
    b.videos_listed = b.videos_found = None
    assert combine_indexes([a, b], "CAAD-PAD", tmp_path).videos_listed is None


def test_combine_errors(tmp_path):
    a = read_index(_index(tmp_path / "a", "X"))
    with pytest.raises(DatasetIndexError, match="dataset names repeat"):
        combine_indexes([a, a], "Y", tmp_path)
    b = read_index(_index(tmp_path / "b", "Z", task="deepfake"))
    with pytest.raises(DatasetIndexError, match="mix tasks.*X=pad, Z=deepfake"):
        combine_indexes([a, b], "Y", tmp_path)
    with pytest.raises(DatasetIndexError, match="at least one"):
        combine_indexes([], "Y", tmp_path)


def test_combine_script(tmp_path, capsys):
    paths = [_index(tmp_path / n, n) for n in ("A", "B")]
    out = tmp_path / "out" / "CAAD-PAD.json"
    assert main([*map(str, paths), "--name", "CAAD-PAD", "--out", str(out)]) == 0
    assert json.loads(capsys.readouterr().out) == {
        "index": str(out),
        "videos": 6,
        "train": 4,
        "test": 2,
    }
    assert len(read_index(out, check_files=True).videos) == 6
    code, err = run_command(
        main, [str(tmp_path / "missing.json"), "--name", "C", "--out", str(out)], capsys
    )
    assert code == 2 and err.startswith("error: ") and "missing.json" in err
    # the installed command is the same
    with pytest.raises(SystemExit) as stop:
        fairforensics_main(["combine", *map(str, paths), "--name", "X", "--out", str(out)])
    assert stop.value.code == 0 and read_index(out).dataset == "X"
