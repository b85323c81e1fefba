"""Celeb-DF++ and DF40 listings on tiny trees laid out as their authors lay them out."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fairforensics.preprocessing.datasets import DatasetLayoutError, build_listing
from fairforensics.preprocessing.datasets.celebdfpp import SCENARIOS
from fairforensics.preprocessing.datasets.deepfakebench import import_deepfakebench_json
from fairforensics.preprocessing.datasets.df40 import annotate_df40

DATA = Path(__file__).resolve().parent / "data"
REALS = {"Celeb-real": ["id0_0000", "id0_0001", "id1_0000", "id2_0000"],
         "YouTube-real": ["00000", "00001"]}  # fmt: skip
FAKES = ["id0_id1_0000", "id1_id2_0000", "id2_id0_0000"]


def touch(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"")
    return path


def cdfpp_tree(root: Path, original: str = "Celeb-DF-v2", methods: list[str] | None = None) -> Path:
    """The tree the authors' listing in data/celebdfpp_authors_listing.txt was made from (as
    videos, not frames): 6 reals, 3 fakes of each of the 22 methods, one per method in the test
    list (``original``: the folder of Celeb-DF's own fakes)."""
    for folder, names in REALS.items():
        for name in names:
            touch(root / folder / f"{name}.mp4")
    lines = ["1 Celeb-real/id1_0000.mp4", "1 YouTube-real/00001.mp4"]
    for scenario, (_, names) in SCENARIOS.items():
        for i, method in enumerate(names):
            folder = original if method == "Celeb-DF" else method
            listed = f"Celeb-synthesis/{scenario}/{folder}/{FAKES[i % 3]}.mp4"
            lines.append(f"0 {listed}")
            if methods is None or method in methods:
                for name in FAKES:
                    touch(root / "Celeb-synthesis" / scenario / folder / f"{name}.mp4")
    (root / "List_of_testing_videos.txt").write_text("\n".join(lines) + "\n")
    return root


def authors_listing() -> set[tuple[str, str, int, str]]:
    """The authors' rearrange.py output for cdfpp_tree: (method, video, label, split)."""
    rows = set()
    for line in (DATA / "celebdfpp_authors_listing.txt").read_text().splitlines():
        if line.startswith("#"):
            continue
        method, video, label, split = line.split()
        method = {"Celeb-DF-v2": "Celeb-DF"}.get(method, method)
        rows.add((method, video, int(label == "CelebDFv3_fake"), split))
    return rows


def rows(listing) -> set[tuple[str, str, int, str]]:
    return {(i.method, i.id, i.label, i.split) for i in listing.items}


@pytest.mark.parametrize("original", ["Celeb-DF-v2", "Celeb-DF"])
def test_celebdfpp_listing_equals_the_authors_rearrange(tmp_path, original):
    root = cdfpp_tree(tmp_path, original)
    listing = build_listing("celebdfpp", root, {"validation": "test"})
    assert len(listing.items) == 72
    assert rows(listing) == authors_listing()
    assert "test-top3" in listing.split_info["val"]
    fake = next(i for i in listing.items if i.method == "LivePortrait")
    assert fake.attributes == {"scenario": "FaceReenact", "family": "FR"}


def test_celebdfpp_validation_is_held_out_of_train_by_identity(tmp_path):
    root = cdfpp_tree(tmp_path)
    listing = build_listing("celebdfpp", root, {"val_fraction": 0.34, "seed": 1})
    ours = rows(listing)
    moved = {(m, v, lab, "train") for m, v, lab, s in ours if s == "val"}
    assert moved and {r for r in ours if r[3] != "val"} | moved == authors_listing()
    splits_of: dict[str, set[str]] = {}  # the person of the source video: id0 of id0_id1_0000
    for item in listing.items:
        if item.split != "test" and item.id.startswith("id"):
            splits_of.setdefault(item.id.split("_")[0], set()).add(item.split)
    assert len(splits_of) == 3 and all(len(s) == 1 for s in splits_of.values()), splits_of


def test_celebdfpp_partial_download_and_layout_errors(tmp_path):
    root = cdfpp_tree(tmp_path / "a", methods=["Celeb-DF", "SimSwap"])
    with pytest.raises(DatasetLayoutError, match=r"methods=\[Celeb-DF, SimSwap\]"):
        build_listing("celebdfpp", root, {})
    listing = build_listing("celebdfpp", root, {"methods": ["Celeb-DF", "SimSwap"]})
    assert {i.method for i in listing.items} == {"real", "Celeb-DF", "SimSwap"}
    assert listing.missing == 0
    (root / "Celeb-synthesis/FaceSwap/SimSwap/id0_id1_0000.mp4").unlink()  # a listed test video
    listing = build_listing("celebdfpp", root, {"methods": ["Celeb-DF", "SimSwap"]})
    assert listing.missing == 1
    touch(root / "Celeb-synthesis/FaceSwap/NewSwap/x.mp4")
    with pytest.raises(DatasetLayoutError, match="NewSwap: unknown method folder"):
        build_listing("celebdfpp", root, {"methods": ["Celeb-DF", "SimSwap"]})
    (root / "List_of_testing_videos.txt").unlink()
    with pytest.raises(DatasetLayoutError, match="test list not found"):
        build_listing("celebdfpp", root, {})


def df40_tree(root: Path) -> Path:
    """DF40's processed crops: both spellings of the domain folders, an own-source method with
    fake/ and real/, stills of an EFS method, and a DF40_train part."""
    for part, method, domain, video in [
        ("DF40", "simswap", "ff", "000_003"), ("DF40", "simswap", "ff", "001_870"),
        ("DF40", "simswap", "cdfv2", "id0_id1_0000"), ("DF40", "fomm", "ffpp", "000_003"),
        ("DF40", "heygen", "fake", "h1"), ("DF40", "heygen", "real", "r1"),
        ("DF40_train", "simswap", "ff", "002_006"), ("DF40_train", "simswap", "ff", "003_000"),
        ("DF40_train", "fomm", "ff", "004_982"),
    ]:  # fmt: skip
        for k in range(2):
            touch(root / part / method / domain / "frames" / video / f"{k:03d}.png")
    touch(root / "DF40" / "StyleGAN2" / "cdf" / "0001.png")
    return root


def test_df40_listing_follows_its_folders(tmp_path):
    root = df40_tree(tmp_path)
    listing = build_listing("df40", root, {"val_fraction": 0.5})
    got = {(i.method, i.id, i.label, i.split if i.split != "val" else "train",
            i.attributes["family"], i.attributes["domain"], i.attributes["known"])
           for i in listing.items}  # fmt: skip
    assert got == {
        ("simswap", "000_003", 1, "test", "FS", "ff", "known"),
        ("simswap", "001_870", 1, "test", "FS", "ff", "known"),
        ("simswap", "id0_id1_0000", 1, "test", "FS", "cdf", "known"),
        ("fomm", "000_003", 1, "test", "FR", "ff", "known"),
        ("heygen", "heygen-h1", 1, "test", "FR", "VFHQ", "unknown"),
        ("real", "heygen-r1", 0, "test", "FR", "VFHQ", "unknown"),
        ("StyleGAN2", "0001", 1, "test", "EFS", "cdf", "known"),
        ("simswap", "002_006", 1, "train", "FS", "ff", "known"),
        ("simswap", "003_000", 1, "train", "FS", "ff", "known"),
        ("fomm", "004_982", 1, "train", "FR", "ff", "known"),
    }
    assert {i.split for i in listing.items} == {"train", "val", "test"}
    video = next(i for i in listing.items if i.id == "000_003" and i.method == "fomm")
    assert video.path.is_dir() and video.rel == "DF40/fomm/ffpp/frames/000_003"
    only_ff = build_listing("df40", root, {"domains": ["ff"], "train_dir": None})
    assert {i.attributes["domain"] for i in only_ff.items} == {"ff", "VFHQ"}
    touch(root / "DF40" / "simswap" / "celeb" / "frames" / "v" / "000.png")
    touch(root / "DF40" / "mystery" / "ff" / "frames" / "v" / "000.png")
    with pytest.raises(DatasetLayoutError, match="(?s)mystery: unknown DF40.*celeb; allowed: ff"):
        build_listing("df40", root, {})


def test_df40_json_through_the_deepfakebench_import(tmp_path):
    """DF40's JSON (DeepfakeBench format, label names <method>_Fake/_Real, FF++ reals) imported
    and annotated: method, family, domain and known from the frame paths."""
    root = df40_tree(tmp_path)
    for k in range(2):
        touch(root / "FaceForensics++/original_sequences/youtube/c23/frames/000" / f"{k:03d}.png")

    def entry(folder: str, label: str) -> dict:
        return {"label": label, "frames": [f"{folder}/{k:03d}.png" for k in range(2)]}

    data = {"FSAll_ff": {
        "simswap_Fake": {"test": {"000_003": entry("DF40/simswap/ff/frames/000_003", "simswap_Fake")}},
        "mraa_Fake": {"test": {"000_003": entry("DF40/fomm/ffpp/frames/000_003", "mraa_Fake")}},
        "FSAll_Real": {"test": {"000": entry(
            "FaceForensics++/original_sequences/youtube/c23/frames/000", "FSAll_Real")}},
    }}  # fmt: skip
    (root / "FSAll_ff.json").write_text(json.dumps(data))
    index = import_deepfakebench_json(root / "FSAll_ff.json", root)
    assert annotate_df40(index) == 2
    got = {(v.method, v.id, v.label, tuple(sorted(v.attributes.items()))) for v in index.videos}
    assert got == {
        (
            "simswap",
            "000_003",
            1,
            (("df40_method", "simswap"), ("domain", "ff"), ("family", "FS"), ("known", "known")),
        ),
        (
            "fomm",
            "000_003",
            1,
            (("df40_method", "fomm"), ("domain", "ff"), ("family", "FR"), ("known", "known")),
        ),
        ("real", "000", 0, (("domain", "ff"),)),
    }


def test_preprocess_list_writes_the_listing_and_counts_without_decoding(tmp_path, capsys):
    from fairforensics.cli.preprocess import main

    root = cdfpp_tree(tmp_path / "cdfpp")  # empty .mp4 files: nothing is decoded
    out = tmp_path / "listing.csv"
    argv = ["--config", "Celeb-DF-pp", "--set", f"dataset.root={root}", "--list"]
    assert main([*argv, "--set", "dataset.options.validation=test", "--list-out", str(out)]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["videos"] == 72 and summary["counts"]["test"]["real"] == 2
    assert summary["counts"]["train"]["SadTalker"] == 2
    lines = out.read_text().splitlines()
    assert lines[0] == "video_id,path,label,method,split,family,scenario"
    assert (
        "id1_id2_0000,Celeb-synthesis/FaceSwap/Celeb-DF-v2/id1_id2_0000.mp4,1,Celeb-DF,train,FS,FaceSwap"
        in lines
    )
    listed = {tuple(r.split(",")[i] for i in (3, 0, 2, 4)) for r in lines[1:]}
    assert {(m, v, int(lab), s) for m, v, lab, s in listed} == authors_listing()
    assert not list(tmp_path.glob("datasets*"))  # nothing preprocessed
    (root / "List_of_testing_videos.txt").unlink()
    with pytest.raises(DatasetLayoutError, match="test list not found"):
        main(argv)


def test_a_folder_of_frames_reads_like_a_video(tmp_path):
    """DF40's frames/<video>/ folders: the images in name order are the frames."""
    import cv2
    import numpy as np

    from fairforensics.preprocessing.video import count_frames, read_frames

    folder = tmp_path / "frames" / "000_003"
    folder.mkdir(parents=True)
    for k in (2, 0, 1):
        cv2.imwrite(str(folder / f"{k:03d}.png"), np.full((8, 8, 3), 10 * k, np.uint8))
    (folder / "notes.txt").write_text("not a frame")
    assert count_frames(folder) == 3
    frames = read_frames(folder, [0, 2, 5])
    assert sorted(frames) == [0, 2] and frames[2][0, 0, 0] == 20
    assert read_frames(folder, None, gray=True)[1].shape == (8, 8)
