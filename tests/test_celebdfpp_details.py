"""Celeb-DF++'s listing in its details: the test list's and the folders' spellings of Celeb-DF's
own fakes, identities, and the wording of every layout error."""

from __future__ import annotations

import pytest

from fairforensics.preprocessing.datasets import DatasetLayoutError, build_listing
from fairforensics.preprocessing.datasets.celebdfpp import METHODS, SCENARIOS
from tests.test_celebdfpp_df40 import authors_listing, cdfpp_tree, rows, touch


@pytest.mark.parametrize(
    ("folder", "listed"), [("Celeb-DF-v2", "Celeb-DF"), ("Celeb-DF", "Celeb-DF-v2")]
)
def test_the_list_and_the_folder_may_spell_celeb_df_differently(tmp_path, folder, listed):
    root = cdfpp_tree(tmp_path, folder)
    test_list = root / "List_of_testing_videos.txt"
    text = test_list.read_text()
    test_list.write_text(text.replace(f"/FaceSwap/{folder}/", f"/FaceSwap/{listed}/"))
    listing = build_listing("celebdfpp", root, {"validation": "test"})
    assert rows(listing) == authors_listing()
    assert listing.missing == 0


def test_a_listed_real_is_not_renamed(tmp_path):
    """Only ``Celeb-synthesis/<scenario>/<folder>/<video>`` paths are canonicalised: a real
    video named like the alias folder keeps its path."""
    root = cdfpp_tree(tmp_path, "Celeb-DF-v2")
    touch(root / "Celeb-real" / "Celeb-DF-v2.mp4")
    with (root / "List_of_testing_videos.txt").open("a") as fh:
        fh.write("1 Celeb-real/Celeb-DF-v2.mp4\n")
    listing = build_listing("celebdfpp", root, {"validation": "test"})
    item = next(i for i in listing.items if i.id == "Celeb-DF-v2")
    assert item.split == "test" and item.method == "real" and listing.missing == 0


def test_identities(tmp_path):
    listing = build_listing("celebdfpp", cdfpp_tree(tmp_path), {"validation": "test"})
    identity = {(i.method, i.id): i.identity for i in listing.items}
    assert identity[("real", "id1_0000")] == "id1"
    assert identity[("SimSwap", "id2_id0_0000")] == "id2"
    assert identity[("real", "00000")] is None  # YouTube-real names no person


def test_layout_errors_name_the_folder_and_what_is_allowed(tmp_path):
    root = cdfpp_tree(tmp_path)
    touch(root / "Celeb-synthesis" / "Aside" / "X" / "a.mp4")  # sorted before the others
    touch(root / "Celeb-synthesis" / "FaceSwap" / "LIA" / "a.mp4")  # a FaceReenact method
    touch(root / "Celeb-synthesis" / "FaceSwap" / "Celeb-DF" / "a.mp4")  # beside Celeb-DF-v2
    with pytest.raises(DatasetLayoutError) as err:
        build_listing("celebdfpp", root, {"methods": ["Celeb-DF", "Nope"]})
    message = str(err.value)
    assert f"unknown method 'Nope'; allowed: {', '.join(METHODS)}" in message
    assert f"Aside: unknown scenario folder; allowed: {', '.join(SCENARIOS)}" in message
    allowed = ", ".join(SCENARIOS["FaceSwap"][1])
    assert f"FaceSwap/LIA: unknown method folder; allowed: {allowed}" in message
    assert "Celeb-DF found twice (also " in message
    # the scenarios after an unknown one are still read
    assert "FaceSwap/LIA" in message and "Aside" in message


def test_missing_methods_say_how_to_list_a_partial_download(tmp_path):
    root = cdfpp_tree(tmp_path, methods=["Celeb-DF", "SimSwap", "LIA"])
    with pytest.raises(DatasetLayoutError) as err:
        build_listing("celebdfpp", root, {"methods": ["Celeb-DF", "SimSwap", "DaGAN", "FLOAT"]})
    assert str(err.value) == (
        f"{root / 'Celeb-synthesis'}: no folder <scenario>/<method> for DaGAN, FLOAT; to list "
        "only the methods downloaded, set dataset.options.methods, e.g. "
        '--set "dataset.options.methods=[Celeb-DF, SimSwap, LIA]"'
    )


def test_no_fakes_folder_at_all_is_a_missing_method_error(tmp_path):
    touch(tmp_path / "Celeb-real" / "id0_0000.mp4")
    (tmp_path / "List_of_testing_videos.txt").write_text("1 Celeb-real/id0_0000.mp4\n")
    with pytest.raises(DatasetLayoutError, match="no folder <scenario>/<method> for SimSwap"):
        build_listing("celebdfpp", tmp_path, {"methods": ["SimSwap"]})
