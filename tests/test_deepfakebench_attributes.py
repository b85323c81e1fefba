"""DeepfakeBench-imported indexes: attributes from a CSV at import time, and the dataset name
the user gave (issue 17 item 8)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from fairforensics.preprocessing.datasets.base import DatasetLayoutError
from fairforensics.preprocessing.datasets.deepfakebench import (
    import_deepfakebench_json,
    read_any_index,
)
from fairforensics.preprocessing.index import read_index
from fairforensics.training.trainer import resolve_datasets
from tests.test_preprocess_datasets import REPO, make_dfb_tree

PREFIX = "D:\\bench\\datasets"


def _csv(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def test_attributes_csv_at_import(tmp_path: Path, caplog) -> None:
    path, root = make_dfb_tree(tmp_path)
    attrs = _csv(
        tmp_path / "attrs.csv",
        "video,gender,race\nFF-real/000,female,Asian\nFF-DF/000_001,male,Black\n",
    )
    with caplog.at_level("WARNING"):
        index = import_deepfakebench_json(path, root, strip_prefix=PREFIX, attributes=attrs)
    got = {v.key: v.attributes for v in index.videos}
    assert got == {
        ("real", "000"): {"gender": "female", "race": "Asian"},
        ("real", "001"): {},
        ("FF-DF", "000_001"): {"gender": "male", "race": "Black"},
    }
    assert "1 of 3 videos have no attributes row" in caplog.text
    # the plain video id and <method>/<video> work too
    by_id = _csv(tmp_path / "id.csv", "vid,gender\n001,male\nreal/000,female\n")
    index = import_deepfakebench_json(
        path, root, strip_prefix=PREFIX, attributes=by_id, attributes_key="vid"
    )
    assert {v.id: v.attributes.get("gender") for v in index.videos} == {
        "000": "female", "001": "male", "000_001": None,
    }  # fmt: skip
    none = _csv(tmp_path / "none.csv", "video,gender\nzzz,male\n")
    with pytest.raises(DatasetLayoutError, match=r"none\.csv: no 'video' value matches a video"):
        import_deepfakebench_json(path, root, strip_prefix=PREFIX, attributes=none)
    with pytest.raises(DatasetLayoutError, match="no key column 'video'"):
        import_deepfakebench_json(path, root, strip_prefix=PREFIX, attributes=by_id)
    with pytest.raises(DatasetLayoutError, match="not found"):
        import_deepfakebench_json(path, root, strip_prefix=PREFIX, attributes=tmp_path / "x.csv")


def test_dataset_name_is_the_users_not_the_json_key(tmp_path: Path) -> None:
    path, root = make_dfb_tree(tmp_path)  # top-level key "FaceForensics++"
    renamed = tmp_path / "FF-c23.json"
    renamed.write_text(path.read_text())
    assert read_any_index(renamed, root, strip_prefix=PREFIX).dataset == "FF-c23"
    assert import_deepfakebench_json(path, root, strip_prefix=PREFIX).dataset == "FaceForensics++"
    assert (
        import_deepfakebench_json(path, root, strip_prefix=PREFIX, dataset="mine").dataset == "mine"
    )


def test_names_from_resolve_datasets(tmp_path: Path) -> None:
    frames = ["FF/original/000/000.png"]
    (tmp_path / frames[0]).parent.mkdir(parents=True)
    (tmp_path / frames[0]).write_bytes(b"png")
    data = {
        "FaceForensics++": {"FF-real": {"test": {"000": {"label": "FF-real", "frames": frames}}}}
    }
    (tmp_path / "FF-c23.json").write_text(json.dumps(data))
    [index] = resolve_datasets(tmp_path, ["FF-c23"])
    assert index.dataset == "FF-c23"


@pytest.mark.slow
def test_cli_name_and_attributes(tmp_path: Path) -> None:
    path, root = make_dfb_tree(tmp_path)
    attrs = _csv(tmp_path / "a.csv", "video,gender\nFF-real/000,female\n")
    out = tmp_path / "FF-c23.json"
    cmd = [sys.executable, str(REPO / "scripts" / "preprocess.py"), "--import-deepfakebench",
           str(path), "--data-root", str(root), "--out", str(out), "--strip-prefix", PREFIX,
           "--attributes", str(attrs), "--dataset", "FFpp"]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    index = read_index(out)
    assert index.dataset == "FFpp"
    assert next(v for v in index.videos if v.id == "000").attributes == {"gender": "female"}
    bad = _csv(tmp_path / "b.csv", "video,gender\nnope,female\n")
    proc = subprocess.run([*cmd[:-4], "--attributes", str(bad)], capture_output=True, text=True)
    assert proc.returncode == 2 and "matches a video" in proc.stderr
