"""DF40's listing and JSON annotation in their details: identities of the validation hold-out,
the folder errors' wording, duplicate names, label-name aliases and where a domain is read."""

from __future__ import annotations

from pathlib import Path

import pytest

from fairforensics.preprocessing.datasets import DatasetLayoutError, build_listing
from fairforensics.preprocessing.datasets.df40 import _method_name, annotate_df40
from fairforensics.preprocessing.index import DatasetIndex, VideoEntry
from tests.test_celebdfpp_df40 import df40_tree, touch


def items_by_key(listing) -> dict[tuple[str, str], object]:
    return {(i.method, i.id): i for i in listing.items}


def test_identities_keep_a_person_together_and_name_their_domain(tmp_path):
    listing = build_listing("df40", df40_tree(tmp_path), {"train_dir": None})
    identity = {key: item.identity for key, item in items_by_key(listing).items()}
    assert identity == {
        ("simswap", "000_003"): "ff:000",
        ("simswap", "001_870"): "ff:001",
        ("simswap", "id0_id1_0000"): "cdf:id0",
        ("fomm", "000_003"): "ff:000",
        ("heygen", "heygen-h1"): "heygen:heygen-h1",
        ("real", "heygen-r1"): "heygen:heygen-r1",
        ("StyleGAN2", "0001"): "cdf:0001",
    }


def test_a_skipped_domain_does_not_end_the_method(tmp_path):
    """simswap's cdfv2/ comes before ff/ in name order: leaving it out keeps ff/."""
    listing = build_listing("df40", df40_tree(tmp_path), {"domains": ["ff"], "train_dir": None})
    assert {i.id for i in listing.items if i.method == "simswap"} == {"000_003", "001_870"}


def test_a_video_folder_name_with_a_dot_is_kept_whole(tmp_path):
    root = tmp_path
    for k in range(2):
        touch(root / "DF40" / "simswap" / "ff" / "frames" / "clip.01" / f"{k:03d}.png")
    listing = build_listing("df40", root, {"train_dir": None})
    assert [i.id for i in listing.items] == ["clip.01"]


def test_unknown_folders_are_named_with_what_is_allowed(tmp_path):
    root = df40_tree(tmp_path)
    touch(root / "DF40" / "simswap" / "celeb" / "frames" / "v" / "000.png")
    touch(root / "DF40" / "simswap" / "zz" / "frames" / "v" / "000.png")
    touch(root / "DF40" / "heygen" / "other" / "frames" / "v" / "000.png")
    with pytest.raises(DatasetLayoutError) as err:
        build_listing("df40", root, {})
    message = str(err.value)
    assert "simswap: unknown folder(s) celeb, zz; allowed: ff, ffpp, cdf, cdfv2" in message
    assert "heygen: unknown folder(s) other; allowed: fake, real" in message


def test_one_name_twice_in_one_split_names_both_files(tmp_path):
    first = touch(tmp_path / "DF40" / "StyleGAN2" / "cdf" / "0001.png")
    second = touch(tmp_path / "DF40" / "StyleGAN2" / "ff" / "0001.png")
    with pytest.raises(DatasetLayoutError) as err:
        build_listing("df40", tmp_path, {"train_dir": None})
    assert str(err.value) == f"{second}: same StyleGAN2 video name '0001' as {first}"


def test_label_name_aliases():
    assert _method_name("mraa") == "MRAA"
    assert _method_name("pixart") == "PixArt"
    assert _method_name("Collaborative_Diffusion") == "CollabDiff"
    assert _method_name("simswap") == "simswap"
    assert _method_name("nothing") is None


def video(method: str, frames: list[str], label: int = 1) -> VideoEntry:
    return VideoEntry(id="v", label=label, method=method, split="test", frames=frames,
                      attributes={})  # fmt: skip


def annotated(*videos: VideoEntry) -> list[VideoEntry]:
    index = DatasetIndex(dataset="DF40", task="deepfake", videos=list(videos), root=Path("."))
    annotate_df40(index)
    return index.videos


def test_a_fake_whose_paths_name_no_method_takes_its_label_names():
    out = annotated(
        video("pixart_Fake", ["elsewhere/frames/v/000.png"]),
        video("simswap_Fake", ["elsewhere/frames/w/000.png"]),
    )
    assert [v.method for v in out] == ["PixArt", "simswap"]
    assert [v.attributes["family"] for v in out] == ["EFS", "FS"]


def test_a_fake_with_no_method_anywhere_is_an_error_naming_its_first_frame():
    fake = video("mystery_Fake", ["a/frames/v/000.png", "a/frames/v/001.png"])
    with pytest.raises(DatasetLayoutError) as err:
        annotated(fake)
    message = str(err.value)
    assert message.startswith("DF40: mystery_Fake/v: no DF40 method in its label name or frame")
    assert "(a/frames/v/000.png); allowed: fsgan, faceswap, simswap," in message
    assert annotated(video("mystery_Real", ["a/frames/v/000.png"], label=0))[0].method == (
        "mystery_Real"
    )


def test_the_domain_is_the_folder_after_the_method():
    """``root/cdf/simswap/ff/``: ff (the folder after the method), not the cdf before it."""
    out = annotated(
        video("simswap_Fake", ["root/cdf/simswap/ff/frames/v/000.png"]),
        video("heygen_Fake", ["DF40/heygen/fake/frames/h1/000.png"]),
        video("simswap_Fake", ["DF40/simswap/frames/v/000.png"]),
        video("simswap_Fake", ["Celeb-real/simswap/frames/v/000.png"]),
    )
    assert out[0].attributes["domain"] == "ff"
    assert out[1].attributes["domain"] == "VFHQ" and out[1].attributes["known"] == "unknown"
    assert "domain" not in out[2].attributes  # no domain folder: none recorded
    assert out[3].attributes["domain"] == "cdf"  # else the real folder's domain
