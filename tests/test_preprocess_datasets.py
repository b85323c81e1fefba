"""Every dataset module on a tiny tree that mirrors its official layout and split files."""

from __future__ import annotations

import json
import logging
import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import cv2
import numpy as np
import pytest

from fairforensics.configs.loader import ConfigError
from fairforensics.preprocessing.attributes import join_attributes, read_attributes_csv
from fairforensics.preprocessing.config import AttributesConfig, load_preprocess_config
from fairforensics.preprocessing.datasets import DatasetLayoutError, build_listing
from fairforensics.preprocessing.datasets.deepfakebench import (
    import_deepfakebench_json,
    read_any_index,
)
from fairforensics.preprocessing.index import read_index
from fairforensics.preprocessing.pipeline import run_preprocess
from tests.testdata import DATA as TEST_DATA

REPO = Path(__file__).resolve().parents[1]
DATA = TEST_DATA


def video(path: Path, n: int = 2) -> Path:
    """A few-frame 16x16 video written with cv2."""
    path.parent.mkdir(parents=True, exist_ok=True)
    w = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"mp4v"), 5, (16, 16))
    for k in range(n):
        w.write(np.full((16, 16, 3), 40 * k, np.uint8))
    w.release()
    return path


def by(listing, attr: str = "split") -> dict[str, set[str]]:
    out: dict[str, set[str]] = defaultdict(set)
    for item in listing.items:
        out[getattr(item, attr)].add(item.id)
    return dict(out)


def groups_disjoint(listing) -> bool:
    seen: dict[str, str] = {}
    for item in listing.items:
        group = item.identity or item.id
        if seen.setdefault(group, item.split) != item.split:
            return False
    return True


def test_celebdf(tmp_path):
    for rel in ("Celeb-real/id0_0000", "Celeb-real/id1_0000", "Celeb-real/id2_0001",
                "Celeb-synthesis/id0_id1_0000", "Celeb-synthesis/id1_id0_0000",
                "Celeb-synthesis/id2_id0_0001", "YouTube-real/00000", "YouTube-real/00001"):  # fmt: skip
        video(tmp_path / f"{rel}.mp4")
    (tmp_path / "List_of_testing_videos.txt").write_text(
        "1 YouTube-real/00000.mp4\n0 Celeb-synthesis/id2_id0_0001.mp4\n1 Celeb-real/id9_0000.mp4\n"
    )
    listing = build_listing("celebdf", tmp_path, {"val_fraction": 0.5, "seed": 3})
    splits = by(listing)
    assert splits["test"] == {"00000", "id2_id0_0001"}
    assert not splits["test"] & (splits["train"] | splits.get("val", set()))
    assert {i.label for i in listing.items if i.method == "real"} == {0}
    train_val = [i for i in listing.items if i.split != "test"]
    ids = defaultdict(set)
    for i in train_val:
        ids[i.identity or i.id].add(i.split)
    assert all(len(s) == 1 for s in ids.values())  # val is identity-disjoint from train
    assert "val" in splits and listing.split_info["val"].startswith("derived")
    assert any("id9_0000" in p["path"] for p in listing.problems)
    with pytest.raises(DatasetLayoutError, match="List_of_testing_videos"):
        build_listing("celebdf", tmp_path / "Celeb-real", {})


def test_dfdc_and_dfdcp(tmp_path):
    part = tmp_path / "dfdc_train_part_0"
    meta = {"a.mp4": {"label": "REAL", "split": "train"},
            "b.mp4": {"label": "FAKE", "split": "train", "original": "a.mp4"},
            "c.mp4": {"label": "FAKE", "split": "train", "original": "a.mp4"},
            "d.mp4": {"label": "REAL"}, "gone.mp4": {"label": "FAKE", "original": "d.mp4"},
            "e.mp4": {"label": "MAYBE"}}  # fmt: skip
    for name in "abcde":
        video(part / f"{name}.mp4")
    (part / "metadata.json").write_text(json.dumps(meta))
    video(tmp_path / "test" / "videos" / "t1.mp4")
    video(tmp_path / "test" / "t2.mp4")
    (tmp_path / "test" / "labels.csv").write_text("filename,label\nt1.mp4,1\nt2.mp4,0\n")
    listing = build_listing("dfdc", tmp_path, {"val_fraction": 0.5})
    labels = {i.id: (i.label, i.split) for i in listing.items}
    assert labels["b"][0] == 1 and labels["a"][0] == 0 and labels["t1"] == (1, "test")
    assert labels["a"][1] == labels["b"][1] == labels["c"][1]  # grouped by source video
    reasons = " ".join(p["reason"] for p in listing.problems)
    assert "not found" in reasons and "REAL/FAKE" in reasons
    assert (listing.videos_found, listing.videos_listed) == (6, 7)  # gone.mp4 is missing

    root = tmp_path / "dfdcp"
    meta = {"method_A/1/x.mp4": {"label": "fake", "set": "train", "target_id": 1},
            "method_B/2/y.mp4": {"label": "fake", "set": "test", "target_id": 2},
            "original_videos/1/z.mp4": {"label": "real", "set": "train", "target_id": 1}}  # fmt: skip
    for rel in meta:
        video(root / rel)
    (root / "dataset.json").write_text(json.dumps(meta))
    listing = build_listing("dfdcp", root, {})
    methods = {i.id: (i.method, i.label, i.split) for i in listing.items}
    assert methods["method_A__1__x"][:2] == ("method_A", 1)
    assert methods["method_B__2__y"] == ("method_B", 1, "test")
    assert methods["original_videos__1__z"][:2] == ("real", 0)
    assert listing.methods == ["real", "method_A", "method_B"]


def test_deeperforensics_reals_never_leak_into_train(tmp_path):
    fake = tmp_path / "manipulated_videos" / "end_to_end"
    for name in ("000_M101", "001_M102", "000_M103", "002_M104"):
        video(fake / f"{name}.mp4")
    lists = tmp_path / "lists" / "splits"
    lists.mkdir(parents=True)
    (lists / "train.txt").write_text("000_M101.mp4\n001_M102.mp4\n")
    (lists / "val.txt").write_text("")
    (lists / "test.txt").write_text("000_M103.mp4\n")
    reals = tmp_path / "ff" / "videos"
    for name in ("000", "001", "002"):
        video(reals / f"{name}.mp4")
    listing = build_listing("deeperforensics", tmp_path, {"real_dir": str(reals)})
    got = {(i.method, i.id): i.split for i in listing.items}
    assert got[("real", "000")] == "test"  # its fakes are in train and test: test wins
    assert got[("real", "001")] == "train"
    assert ("real", "002") not in got and ("end_to_end", "002_M104") not in got
    assert any("002_M104" in p["path"] for p in listing.problems)


def test_uadfv(tmp_path):
    for n in range(6):
        video(tmp_path / "real" / f"{n:04d}.mp4")
        video(tmp_path / "fake" / f"{n:04d}_fake.mp4")
    assert set(by(build_listing("uadfv", tmp_path, {}))) == {"test"}
    listing = build_listing("uadfv", tmp_path, {"split": "derived"})
    assert groups_disjoint(listing)
    with pytest.raises(ConfigError, match="split"):
        build_listing("uadfv", tmp_path, {"split": "all"})


def test_dfd_actor_disjoint_with_masks(tmp_path):
    real = tmp_path / "original_sequences" / "actors" / "c23" / "videos"
    base = tmp_path / "manipulated_sequences" / "DeepFakeDetection"
    for a in range(1, 9):
        video(real / f"{a:02d}__walking_angry.mp4")
        name = f"{a:02d}_{(a % 8) + 1:02d}__walking_angry__ABCDEFGH.mp4"
        video(base / "c23" / "videos" / name)
        if a != 3:
            video(base / "masks" / "videos" / name)
    listing = build_listing("dfd", tmp_path, {"ratios": {"train": 0.5, "val": 0.25, "test": 0.25}})
    assert groups_disjoint(listing)
    fakes = [i for i in listing.items if i.label == 1]
    assert sum(i.mask is not None for i in fakes) == 7
    assert "identity-disjoint" in listing.split_info["train"]


def test_faceforensics_layout_errors(tmp_path):
    (tmp_path / "splits").mkdir()
    (tmp_path / "splits" / "train.json").write_text("[]")
    with pytest.raises(DatasetLayoutError, match=r"split file\(s\) val.json, test.json not found"):
        build_listing("faceforensics", tmp_path, {})
    for s in ("train", "val", "test"):
        (tmp_path / "splits" / f"{s}.json").write_text('[["000", "001"]]' if s == "train" else "[]")
    with pytest.raises(DatasetLayoutError, match="real videos folder"):
        build_listing("faceforensics", tmp_path, {})
    video(tmp_path / "original_sequences" / "youtube" / "c40" / "videos" / "000.mp4")
    video(tmp_path / "original_sequences" / "youtube" / "c40" / "videos" / "999.mp4")
    listing = build_listing("faceforensics", tmp_path, {"compression": "c40", "methods": []})
    assert [i.id for i in listing.items] == ["000"]
    assert "not in any official split" in listing.problems[0]["reason"]
    with pytest.raises(DatasetLayoutError, match="FaceShifter"):
        build_listing("faceforensics", tmp_path, {"compression": "c40", "methods": ["FaceShifter"]})
    (tmp_path / "splits" / "val.json").write_text('[["000", "002"]]')
    with pytest.raises(DatasetLayoutError, match="both"):
        build_listing("faceforensics", tmp_path, {"compression": "c40"})


def test_faceforensics_partial_download_reports_every_problem_at_once(tmp_path, capsys):
    """FF++ downloaded without FaceShifter and without masks, preprocessed with the defaults
    (all five methods, masks: true): both problems in one error, each with its --set fix, as
    the command's one ``error:`` line (issue 31, item 3)."""
    from fairforensics.cli.preprocess import main
    from tests.test_cli import run_command

    methods = ["Deepfakes", "Face2Face", "FaceSwap", "NeuralTextures"]
    video(tmp_path / "original_sequences" / "youtube" / "c23" / "videos" / "000.mp4")
    for method in methods:
        video(tmp_path / "manipulated_sequences" / method / "c23" / "videos" / "000_001.mp4")
    with pytest.raises(DatasetLayoutError) as err:
        build_listing("faceforensics", tmp_path, {})
    message = str(err.value)
    assert message.startswith("2 problems: (1) ") and "no c23 videos folder" in message
    assert f"(1) {tmp_path / 'manipulated_sequences'}: no c23 videos folder" in message
    assert f'--set "dataset.options.methods=[{", ".join(methods)}]"' in message
    assert "(2) " in message and "--set dataset.options.masks=false" in message
    argv = ["--config", "FF-c23", "--set", f"dataset.root={tmp_path}"]
    argv += ["--set", f"output.root={tmp_path / 'out'}"]
    code, stderr = run_command(main, argv, capsys)
    (line,) = [ln for ln in stderr.splitlines() if "error" in ln.lower()]
    assert code == 2 and line == f"error: {message}"
    assert not (tmp_path / "out" / "FF-c23.json").exists()  # nothing preprocessed


def test_generic_folders_and_csv(tmp_path):
    for rel in ("train/real/a.mp4", "train/fake/DF/b.mp4", "test/real/c.mp4"):
        video(tmp_path / "f" / rel)
    (tmp_path / "f" / "test" / "fake").mkdir(parents=True)
    cv2.imwrite(str(tmp_path / "f" / "test" / "fake" / "d.png"), np.zeros((8, 8, 3), np.uint8))
    listing = build_listing("generic", tmp_path / "f", {})
    got = {(i.method, i.split, i.label) for i in listing.items}
    assert got == {
        ("real", "train", 0),
        ("DF", "train", 1),
        ("real", "test", 0),
        ("fake", "test", 1),
    }
    assert listing.split_info == {"train": "folders", "test": "folders"}

    root = tmp_path / "c"
    video(root / "v1.mp4")
    video(root / "v2.mp4")
    (root / "list.csv").write_text(
        "path,label,split,identity,gender\nv1.mp4,real,train,p1,female\nv2.mp4,1,,p2,male\n"
        "v3.mp4,maybe,train,p3,male\n/abs.mp4,0,test,p4,male\nv4.mp4,0,holdout,p4,male\n"
    )
    listing = build_listing("generic", root, {"csv": "list.csv", "task": "pad"})
    items = {i.id: i for i in listing.items}
    assert items["v1"].attributes == {"gender": "female"} and items["v1"].split == "train"
    assert items["v2"].label == 1 and items["v2"].identity == "p2"
    assert len(listing.problems) == 3 and listing.task == "pad"
    assert "derived" in listing.split_info["val"]


def test_generic_warns_when_a_fake_and_its_named_real_are_split_apart(tmp_path, caplog):
    """FF++-style names in real/ and fake/ folders (no identity, splits derived per file): a
    fake ``004_982`` in another split than ``real/004`` is one warning with the count and an
    example; with split folders, or identities in a CSV, there is nothing to warn about."""
    ids = [f"{k:03d}" for k in range(10)]
    for a, b in zip(ids, ids[1:] + ids[:1], strict=True):
        for rel in (f"real/{a}.mp4", f"fake/{a}_{b}.mp4"):
            (tmp_path / "f" / rel).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / "f" / rel).write_bytes(b"")
    with caplog.at_level(logging.WARNING, logger="fairforensics.preprocessing"):
        listing = build_listing("generic", tmp_path / "f", {})
    split = {i.rel: i.split for i in listing.items}
    crossed = [(a, b) for a, b in zip(ids, ids[1:] + ids[:1], strict=True)
               if split[f"fake/{a}_{b}"] != split[f"real/{a}"]
               or split[f"fake/{a}_{b}"] != split[f"real/{b}"]]  # fmt: skip
    assert crossed  # the per-file split separates some pairs (seed 0)
    (message,) = [r.getMessage() for r in caplog.records if "derived per file" in r.getMessage()]
    assert f"{len(crossed)} fake(s) are in another split than a real video" in message
    assert re.search(r"real/(\d+)\.mp4 \((\w+)\) and \S+fake/\d+_\d+\.mp4 \((\w+)\)", message)
    assert "dataset.options.csv, column identity" in message

    caplog.clear()
    rows = "path,label,identity\n" + "".join(
        f"real/{a}.mp4,0,{a}\nfake/{a}_{b}.mp4,1,{a}\n"
        for a, b in zip(ids, ids[1:] + ids[:1], strict=True)
    )
    (tmp_path / "f" / "list.csv").write_text(rows)
    with caplog.at_level(logging.WARNING, logger="fairforensics.preprocessing"):
        listing = build_listing("generic", tmp_path / "f", {"csv": "list.csv"})
    assert not [r for r in caplog.records if "derived per file" in r.getMessage()]
    split = {i.rel: i.split for i in listing.items}
    assert all(split[f"real/{a}"] == split[f"fake/{a}_{b}"]
               for a, b in zip(ids, ids[1:] + ids[:1], strict=True))  # fmt: skip


def test_casia_replay_msu(tmp_path):
    casia = tmp_path / "casia"
    for split in ("train_release", "test_release"):
        for subj in ("1", "2"):
            for name in ("1", "3", "5", "7", "HR_1", "HR_4", "junk"):
                video(casia / split / subj / f"{name}.avi", 1)
    listing = build_listing("casia_fasd", casia, {"val_fraction": 0.5})
    methods = {(i.method, i.label) for i in listing.items}
    assert methods == {("bonafide", 0), ("warped_photo", 1), ("cut_photo", 1), ("video_replay", 1)}
    assert {i.split for i in listing.items} >= {"train", "test"}
    assert len(listing.problems) == 4  # the 'junk' videos

    ra = tmp_path / "replay"
    video(ra / "train" / "real" / "client001_session01_webcam_authenticate_adverse_1.mov", 1)
    video(
        ra
        / "train"
        / "attack"
        / "hand"
        / "attack_print_client001_session01_highdef_photo_adverse.mov",
        1,
    )
    video(
        ra
        / "devel"
        / "attack"
        / "fixed"
        / "attack_mobile_client002_session01_mobile_video_adverse.mov",
        1,
    )
    video(
        ra
        / "test"
        / "attack"
        / "fixed"
        / "attack_highdef_client003_session01_highdef_photo_controlled.mov",
        1,
    )
    listing = build_listing("replay_attack", ra, {})
    got = {(i.split, i.method, i.label, i.identity) for i in listing.items}
    assert got == {
        ("train", "print", 1, "replay_001"), ("val", "replay_video", 1, "replay_002"),
        ("test", "replay_photo", 1, "replay_003"),
    }  # fmt: skip
    assert "unknown Replay-Attack" in listing.problems[0]["reason"]  # real file without 'real_'

    msu = tmp_path / "msu"
    (msu).mkdir()
    (msu / "train_sub_list.txt").write_text("002\n003\n")
    (msu / "test_sub_list.txt").write_text("001\n")
    for name in ("real/real_client002_android_SD_scene01.mp4",
                 "attack/attack_client002_laptop_SD_printed_photo_scene01.mov",
                 "attack/attack_client001_android_SD_ipad_video_scene01.mov",
                 "attack/attack_client009_android_SD_ipad_video_scene01.mov"):  # fmt: skip
        video(msu / "scene01" / name, 1)
    listing = build_listing("msu_mfsd", msu, {"val_fraction": 0.0})
    got = {(i.split, i.method, i.label) for i in listing.items}
    assert got == {
        ("train", "bonafide", 0),
        ("train", "printed_photo", 1),
        ("test", "replay_video", 1),
    }
    assert "neither subject list" in listing.problems[0]["reason"]


def test_oulu_protocols(tmp_path):
    for folder in ("Train_files", "Dev_files", "Test_files"):
        for user in {"Train_files": ("01",), "Dev_files": ("21",), "Test_files": ("36",)}[folder]:
            for t in "12345":
                video(tmp_path / folder / f"1_1_{user}_{t}.avi", 1)
    p1 = tmp_path / "Protocols" / "Protocol_1"
    p1.mkdir(parents=True)
    (p1 / "Train.txt").write_text("+1,1_1_01_1\n-1,1_1_01_2\n")
    (p1 / "Dev.txt").write_text("+1,1_1_21_1\n")
    (p1 / "Test.txt").write_text("+1,1_1_36_1\n-1,1_1_36_4\n-1,1_1_99_4\n")
    listing = build_listing("oulu_npu", tmp_path, {"protocol": "1"})
    got = {(i.split, i.method) for i in listing.items}
    assert got == {("train", "bonafide"), ("train", "print"), ("val", "bonafide"),
                   ("test", "bonafide"), ("test", "replay")}  # fmt: skip
    assert listing.items[0].attributes["phone"] == "1"
    assert "no video" in listing.problems[0]["reason"]
    assert len(build_listing("oulu_npu", tmp_path, {}).items) == 15
    with pytest.raises(DatasetLayoutError, match="Train_2"):
        build_listing("oulu_npu", tmp_path, {"protocol": "3", "fold": 2})


def test_hkbu_mars_subject_disjoint_8_2(tmp_path):
    for s in range(1, 13):
        video(tmp_path / "real" / f"{s:02d}" / "a.avi", 1)
        video(tmp_path / "mask" / "ThatsMyFace" / f"{s:02d}" / "b.avi", 1)
    listing = build_listing("hkbu_mars", tmp_path, {})
    assert groups_disjoint(listing)
    assert {i.split for i in listing.items} == {"train", "test"}
    assert listing.methods == ["bonafide", "ThatsMyFace"]


def test_swffd_images_end_to_end_with_attributes(tmp_path):
    """Real photos through the whole pipeline as a PAD image dataset, attributes per video."""
    import shutil

    celeb = DATA / "faces" / "celebrities"
    raw = tmp_path / "raw"
    for k, name in enumerate(("img1.jpg", "img2.jpg", "img3.jpg", "img4.jpg")):
        folder = "real" if k % 2 == 0 else "wax"
        (raw / folder).mkdir(parents=True, exist_ok=True)
        shutil.copy(celeb / name, raw / folder / f"{k:03d}_{name}")
    (raw / "wax" / "999_broken.jpg").write_bytes(b"not an image")
    attrs = tmp_path / "attrs.csv"
    attrs.write_text("video,gender\nreal__000_img1,female\nwax__001_img2,female\n")
    cfg = load_preprocess_config(
        overrides=[
            "dataset.name=swffd",
            "dataset.type=swffd",
            f"dataset.root={raw}",
            "dataset.options.ratios={train: 0.5, test: 0.5}",
            f"dataset.attributes={{csv: {attrs}, join: video}}",
            f"output.root={tmp_path / 'out'}",
            "align.size=64",
        ]  # fmt: skip
    )
    summary = run_preprocess(cfg, workers=1, progress=False)
    index = read_index(tmp_path / "out" / "swffd.json", check_files=True)
    assert index.task == "pad" and summary.videos_skipped == 1
    by_id = {v.id: v for v in index.videos}
    assert by_id["real__000_img1"].attributes == {"gender": "female"}
    assert by_id["wax__001_img2"].label == 1 and by_id["wax__001_img2"].method == "wax_figure"
    assert all(len(v.frames) == 1 and v.frame_indices == [0] for v in index.videos)
    manifest = json.loads((tmp_path / "out" / "swffd.manifest.json").read_text())
    assert "unreadable image" in manifest["skipped_videos"][0]["reason"]
    assert sum("no row in" in p["reason"] for p in manifest["layout_problems"]) == 3


def test_attributes_csv_errors(tmp_path):
    csv_path = tmp_path / "a.csv"
    csv_path.write_text("identity,gender\n000,male\n000,female\n")
    with pytest.raises(ValueError, match="duplicate"):
        read_attributes_csv(csv_path, "identity")
    with pytest.raises(ValueError, match="no key column 'video'"):
        read_attributes_csv(csv_path, "video")
    with pytest.raises(ValueError, match="unknown attribute columns"):
        read_attributes_csv(csv_path, "identity", ["beard"])
    with pytest.raises(FileNotFoundError):
        join_attributes(None, AttributesConfig(csv=str(tmp_path / "none.csv")))  # type: ignore[arg-type]


def test_registry_errors(tmp_path):
    with pytest.raises(ValueError, match="unknown dataset type 'ffpp'.*faceforensics"):
        build_listing("ffpp", tmp_path, {})
    with pytest.raises(DatasetLayoutError, match="not a directory"):
        build_listing("generic", tmp_path / "missing", {})
    with pytest.raises(ConfigError, match="dataset.options.*'colour'"):
        build_listing("generic", tmp_path, {"colour": 1})


def test_generic_flat_folder_of_photos_says_real_and_fake_are_expected(tmp_path):
    flat = tmp_path / "photos"
    flat.mkdir()
    cv2.imwrite(str(flat / "a.png"), np.zeros((8, 8, 3), np.uint8))
    with pytest.raises(DatasetLayoutError, match=r"expects them in real/ and fake/ folders"):
        build_listing("generic", flat, {})
    (flat / "list.csv").write_text("path,label\n")
    with pytest.raises(DatasetLayoutError, match="the CSV list.csv lists no usable"):
        build_listing("generic", flat, {"csv": "list.csv"})


def make_dfb_tree(tmp_path: Path) -> tuple[Path, Path]:
    root = tmp_path / "dfb"
    data: dict = {"FaceForensics++": {"FF-real": {}, "FF-DF": {}}}
    for label, vids in (("FF-real", ["000", "001"]), ("FF-DF", ["000_001"])):
        for split in ("train", "val", "test"):
            level = data["FaceForensics++"][label].setdefault(split, {"c23": {}, "c40": {}})
            for vid in vids:
                if (split == "train") != (vid == "001"):
                    continue  # 001 only in train; the others listed in val AND test
                sub = (
                    "original_sequences/youtube"
                    if label == "FF-real"
                    else "manipulated_sequences/Deepfakes"
                )
                frames = []
                for f in ("000", "010"):
                    rel = f"FaceForensics++/{sub}/c23/frames/{vid}/{f}.png"
                    (root / rel).parent.mkdir(parents=True, exist_ok=True)
                    cv2.imwrite(str(root / rel), np.zeros((8, 8, 3), np.uint8))
                    lm = root / rel.replace("/frames/", "/landmarks/").replace(".png", ".npy")
                    lm.parent.mkdir(parents=True, exist_ok=True)
                    np.save(lm, np.zeros((68, 2), np.float32))
                    frames.append("D:\\bench\\datasets\\" + rel.replace("/", "\\"))
                level["c23"][vid] = {"label": label, "frames": frames}
    path = tmp_path / "FaceForensics++.json"
    path.write_text(json.dumps(data))
    return path, root


def test_import_deepfakebench_json(tmp_path):
    path, root = make_dfb_tree(tmp_path)
    with pytest.raises(DatasetLayoutError, match="strip_prefix"):
        import_deepfakebench_json(path, root)
    index = import_deepfakebench_json(path, root, strip_prefix="D:\\bench\\datasets")
    got = {(v.method, v.id): (v.label, v.split) for v in index.videos}
    assert got == {("real", "000"): (0, "test"), ("real", "001"): (0, "train"),
                   ("FF-DF", "000_001"): (1, "test")}  # fmt: skip
    assert "dedup" in index.split_info
    v = next(x for x in index.videos if x.id == "001")
    assert v.frames == [
        "FaceForensics++/original_sequences/youtube/c23/frames/001/000.png",
        "FaceForensics++/original_sequences/youtube/c23/frames/001/010.png",
    ]
    assert v.landmarks[1] == "FaceForensics++/original_sequences/youtube/c23/landmarks/001/010.npy"
    assert v.masks is None  # no masks/ folder next to the frames
    assert (
        read_any_index(path, root, strip_prefix="D:\\bench\\datasets").dataset == "FaceForensics++"
    )


@pytest.mark.slow
def test_import_cli_writes_a_valid_index(tmp_path):
    path, root = make_dfb_tree(tmp_path)
    out = tmp_path / "FF-c23.json"
    cmd = [sys.executable, str(REPO / "scripts" / "preprocess.py"), "--import-deepfakebench",
           str(path), "--data-root", str(root), "--out", str(out),
           "--strip-prefix", "D:\\bench\\datasets"]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    index = read_index(out, check_files=True)
    assert len(index.videos) == 3 and index.videos[0].frames[0].startswith("dfb/FaceForensics++/")
    assert read_any_index(out).dataset == "FF-c23"  # the user's name, not the JSON's key
    bad = subprocess.run(cmd[:-2], capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "strip_prefix" in bad.stderr


@pytest.mark.parametrize("path", sorted((REPO / "configs" / "preprocess").glob("*.yaml")), ids=str)
def test_every_preprocess_config_validates(path):
    cfg = load_preprocess_config(path)
    assert cfg.dataset.name and cfg.align.scale == 1.3 and cfg.align.size == 256


def test_bad_dataset_options_fail_at_load_time():
    demo = REPO / "configs" / "preprocess" / "demo.yaml"
    with pytest.raises(ConfigError, match="demo.yaml.*dataset.options.*compression"):
        load_preprocess_config(demo, overrides=["dataset.options.compression=c99"])
    with pytest.raises(ConfigError, match="unknown dataset type 'nope'"):
        load_preprocess_config(demo, overrides=["dataset.type=nope"])


def test_import_deepfakebench_json_checks_that_frames_exist(tmp_path):
    path, root = make_dfb_tree(tmp_path)
    wrong = tmp_path / "elsewhere"
    wrong.mkdir()
    with pytest.raises(DatasetLayoutError, match=r"6 of 6 frames not found under --data-root") as e:
        import_deepfakebench_json(path, wrong, strip_prefix="D:\\bench\\datasets")
    assert str(wrong) in str(e.value) and "frames/000/000.png" in str(e.value)
    # one frame lost: an error by default; dropped, logged and recorded when allowed
    lost = root / "FaceForensics++/original_sequences/youtube/c23/frames/001/010.png"
    lost.unlink()
    with pytest.raises(DatasetLayoutError, match=r"1 of 6 frames .*001/010\.png"):
        import_deepfakebench_json(path, root, strip_prefix="D:\\bench\\datasets")
    index = import_deepfakebench_json(
        path, root, strip_prefix="D:\\bench\\datasets", allow_missing_frames=True
    )
    v = next(x for x in index.videos if x.id == "001")
    assert v.frames == ["FaceForensics++/original_sequences/youtube/c23/frames/001/000.png"]
    assert v.landmarks == ["FaceForensics++/original_sequences/youtube/c23/landmarks/001/000.npy"]
    assert index.split_info["missing_frames"].startswith("1 of 6 frames not found")
    assert len(index.videos) == 3
    # with every frame missing even the permissive import fails
    with pytest.raises(DatasetLayoutError, match="no frame found under"):
        import_deepfakebench_json(
            path, wrong, strip_prefix="D:\\bench\\datasets", allow_missing_frames=True
        )


@pytest.mark.slow
def test_import_cli_refuses_a_wrong_data_root(tmp_path):
    path, root = make_dfb_tree(tmp_path)
    out = tmp_path / "FF-c23.json"
    cmd = [sys.executable, str(REPO / "scripts" / "preprocess.py"), "--import-deepfakebench",
           str(path), "--data-root", str(tmp_path), "--out", str(out),
           "--strip-prefix", "D:\\bench\\datasets"]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and not out.exists()
    assert f"not found under --data-root {tmp_path}" in proc.stderr
    assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    proc = subprocess.run(
        cmd + ["--allow-missing-frames"], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 2 and "no frame found under" in proc.stderr


def test_read_json_file_names_the_file_and_its_role(tmp_path: Path) -> None:
    from fairforensics.preprocessing.datasets.base import DatasetLayoutError, read_json_file

    good = tmp_path / "meta.json"
    good.write_text('{"a": 1}', encoding="utf-8")
    assert read_json_file(good, "DFDC-P metadata") == {"a": 1}
    with pytest.raises(DatasetLayoutError, match=r"missing\.json: DFDC-P metadata not found"):
        read_json_file(tmp_path / "missing.json", "DFDC-P metadata")
    (tmp_path / "bad.json").write_text("{", encoding="utf-8")
    with pytest.raises(DatasetLayoutError, match=r"bad\.json: not valid JSON"):
        read_json_file(tmp_path / "bad.json", "FaceForensics++ split file")


def test_dfdc_with_half_its_listed_videos_missing_is_an_error_unless_allowed(tmp_path):
    """Issue 29 item 5: DFDC with half its listed videos missing used to exit 0 with a warning."""
    from fairforensics.preprocessing.pipeline import PartialDataset, check_missing

    part = tmp_path / "dfdc_train_part_0"
    names = [f"v{n}.mp4" for n in range(8)]
    for name in names[:4]:
        video(part / name)
    (part / "metadata.json").write_text(json.dumps({n: {"label": "REAL"} for n in names}))
    listing = build_listing("dfdc", tmp_path, {"test_dir": None})
    assert (listing.videos_found, listing.videos_listed, listing.missing) == (4, 8, 4)
    with pytest.raises(PartialDataset, match="DFDC: 4 of the 8 videos .*allow_partial"):
        check_missing(listing, "DFDC", 0.05)
    check_missing(listing, "DFDC", 0.5)  # within the share the config accepts
    listing = build_listing("dfdc", tmp_path, {"test_dir": None, "allow_partial": True})
    check_missing(listing, "DFDC", 0.05)  # the subset is intended
