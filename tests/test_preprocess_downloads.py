"""What a real download looks like to a new user (issue 23, item 6): FF++ without its split files
(the official ones ship with the package), a partial FF++ download, ``masks: true`` without
masks, DFDC without its test labels; each is decided when the dataset is listed, before any
video is preprocessed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fairforensics.preprocessing.datasets import DatasetLayoutError, build_listing
from fairforensics.preprocessing.datasets.faceforensics import OFFICIAL_SPLITS
from tests.test_preprocess_datasets import video
from tests.testdata import shared

#: an official FF++ test pair (FaceForensics repository, dataset/splits/test.json)
TEST_PAIR = ("000", "003")


def ff_tree(root: Path, methods: tuple[str, ...], masks: tuple[str, ...] = ()) -> Path:
    """Reals 000 and 003 and their two fakes per method (c23); masks for ``masks``."""
    a, b = TEST_PAIR
    for vid in TEST_PAIR:
        video(root / "original_sequences" / "youtube" / "c23" / "videos" / f"{vid}.mp4")
    for method in methods:
        for fake in (f"{a}_{b}", f"{b}_{a}"):
            base = root / "manipulated_sequences" / method
            video(base / "c23" / "videos" / f"{fake}.mp4")
            if method in masks:
                video(base / "masks" / "videos" / f"{fake}.mp4")
    return root


@pytest.mark.extended
def test_the_shipped_split_files_are_the_official_ones() -> None:
    official = shared("data", "faceforensics_splits")
    for name in ("train.json", "val.json", "test.json", "LICENSE"):
        assert (OFFICIAL_SPLITS / name).read_bytes() == (official / name).read_bytes(), name


def test_shipped_splits_are_used_when_the_dataset_has_none(tmp_path: Path) -> None:
    sizes = {s: len(json.loads((OFFICIAL_SPLITS / f"{s}.json").read_text())) for s in ("train", "val", "test")}  # fmt: skip
    assert sizes == {"train": 360, "val": 70, "test": 70}
    assert "Permission is hereby granted" in (OFFICIAL_SPLITS / "LICENSE").read_text()  # MIT
    root = ff_tree(tmp_path / "ff", ("Deepfakes",), masks=("Deepfakes",))
    listing = build_listing("faceforensics", root, {"methods": ["Deepfakes"]})
    assert {(i.id, i.split) for i in listing.items} == {
        ("000", "test"), ("003", "test"), ("000_003", "test"), ("003_000", "test")
    }  # fmt: skip
    assert "shipped with fairforensics" in listing.split_info["test"]
    # the dataset's own split files win (here: the pair moved to train)
    (root / "splits").mkdir()
    for split, pairs in (("train", [list(TEST_PAIR)]), ("val", []), ("test", [])):
        (root / "splits" / f"{split}.json").write_text(json.dumps(pairs))
    listing = build_listing("faceforensics", root, {"methods": ["Deepfakes"]})
    assert {i.split for i in listing.items} == {"train"} and listing.split_info[
        "train"
    ] == "official"
    # a splits_dir the user chose must exist (no silent fallback to other splits)
    with pytest.raises(DatasetLayoutError, match="mysplits.*not found"):
        build_listing("faceforensics", root, {"methods": ["Deepfakes"], "splits_dir": "mysplits"})


def _only_missing_counted(listing) -> bool:
    """The listing's one problem is the count of the videos the split files name that are not
    on disk (this tree holds 2 of the 1,000 FF++ sources)."""
    (problem,) = listing.problems
    return listing.missing > 0 and "not on disk" in problem["reason"]


def test_partial_download_names_dataset_options_methods(tmp_path: Path) -> None:
    root = ff_tree(tmp_path, ("Deepfakes", "Face2Face"))
    with pytest.raises(DatasetLayoutError) as info:
        build_listing("faceforensics", root, {"masks": False})  # the five methods of FF++
    message = str(info.value)
    assert "FaceSwap, NeuralTextures, FaceShifter" in message  # every missing one, at once
    assert 'dataset.options.methods=[Deepfakes, Face2Face]"' in message
    listing = build_listing("faceforensics", root, {"masks": False, "methods": ["Deepfakes", "Face2Face"]})  # fmt: skip
    assert len(listing.items) == 6 and _only_missing_counted(listing)
    # issue 29 item 5: the official split files name 1,000 sources and 1,000 fakes per method
    assert (listing.videos_found, listing.videos_listed) == (6, 3000)


def test_masks_true_without_masks_is_an_error_or_a_recorded_warning(tmp_path: Path, caplog) -> None:
    root = ff_tree(tmp_path, ("Deepfakes", "FaceShifter"))
    methods = {"methods": ["Deepfakes", "FaceShifter"]}
    with pytest.raises(DatasetLayoutError, match="masks: true but no masks folder.*masks=false"):
        build_listing("faceforensics", root, methods)
    assert _only_missing_counted(build_listing("faceforensics", root, {**methods, "masks": False}))
    ff_tree(root, ("Deepfakes",), masks=("Deepfakes",))  # masks for one method only
    listing = build_listing("faceforensics", root, methods)
    fakes = {i.id + "/" + i.method: i.mask is not None for i in listing.items if i.label}
    assert fakes == {"000_003/Deepfakes": True, "003_000/Deepfakes": True,
                     "000_003/FaceShifter": False, "003_000/FaceShifter": False}  # fmt: skip
    problem, _ = listing.problems  # one warning for the method's masks; the missing videos
    assert problem["path"].endswith("FaceShifter/masks/videos") and "no masks" in problem["reason"]
    assert "FaceShifter's fakes get no masks" in caplog.text
    # DFD: the same rule
    dfd = tmp_path / "dfd"
    video(dfd / "original_sequences" / "actors" / "c23" / "videos" / "01__walk.mp4")
    video(dfd / "manipulated_sequences" / "DeepFakeDetection" / "c23" / "videos" / "01_02__walk__X.mp4")  # fmt: skip
    with pytest.raises(DatasetLayoutError, match="masks: true but no masks folder"):
        build_listing("dfd", dfd, {})
    assert len(build_listing("dfd", dfd, {"masks": False}).items) == 2


def test_dfdc_without_test_labels_says_how_to_provide_them(tmp_path: Path) -> None:
    part = tmp_path / "dfdc_train_part_0"
    for name in ("a", "b"):
        video(part / f"{name}.mp4")
    meta = {"a.mp4": {"label": "REAL"}, "b.mp4": {"label": "FAKE", "original": "a.mp4"}}
    (part / "metadata.json").write_text(json.dumps(meta))
    with pytest.raises(DatasetLayoutError) as info:
        build_listing("dfdc", tmp_path, {})
    message = str(info.value)
    assert "test/labels.csv: DFDC test labels not found" in message
    assert "filename,label" in message and "dataset.options.test_dir" in message
    video(tmp_path / "test" / "t1.mp4")
    (tmp_path / "test" / "labels.csv").write_text("video,fake\nt1.mp4,1\n")
    with pytest.raises(DatasetLayoutError, match="lacks the columns filename,label"):
        build_listing("dfdc", tmp_path, {})
    (tmp_path / "test" / "labels.csv").write_text("filename,label\nt1.mp4,1\n")
    listing = build_listing("dfdc", tmp_path, {"val_fraction": 0.0})
    assert {(i.id, i.split) for i in listing.items} == {("a", "train"), ("b", "train"), ("t1", "test")}  # fmt: skip
    train_only = build_listing("dfdc", tmp_path, {"test_dir": None, "val_fraction": 0.0})
    assert {i.split for i in train_only.items} == {"train"}
    assert train_only.split_info["test"].startswith("none")
