"""Derived splits honour their ratios identity-disjointly; an empty split is flagged (#14)."""

from __future__ import annotations

import logging
from collections import Counter, defaultdict
from pathlib import Path

import pytest

from fairforensics.preprocessing.datasets import build_listing
from fairforensics.preprocessing.datasets.base import (
    DERIVED,
    DatasetLayoutError,
    Listing,
    SourceItem,
    derive_splits,
    holdout_val,
    split_counts,
)
from fairforensics.preprocessing.index import VideoEntry
from fairforensics.preprocessing.pipeline import _split_info

RATIOS = {"train": 0.8, "val": 0.1, "test": 0.1}


@pytest.mark.parametrize(
    ("n", "ratios", "expected"),
    [
        (13, RATIOS, {"train": 11, "val": 1, "test": 1}),  # a hash per group gave test 0
        (16, RATIOS, {"train": 13, "val": 2, "test": 1}),  # 12.8/1.6/1.6, largest remainder
        (100, RATIOS, {"train": 80, "val": 10, "test": 10}),
        (2, RATIOS, {"train": 2, "val": 0, "test": 0}),  # too few groups for three splits
        (3, RATIOS, {"train": 1, "val": 1, "test": 1}),
        (5, {"train": 1, "val": 0, "test": 1}, {"train": 3, "val": 0, "test": 2}),
        (0, RATIOS, {"train": 0, "val": 0, "test": 0}),
    ],
)
def test_split_counts(n, ratios, expected):
    assert split_counts(n, ratios) == expected


@pytest.mark.parametrize("ratios", [{"train": -1, "test": 2}, {"train": 0, "test": 0}])
def test_bad_ratios_are_an_error(ratios):
    with pytest.raises(DatasetLayoutError, match="ratios"):
        split_counts(4, ratios)


def photos(n_photos: int, n_people: int) -> list[SourceItem]:
    return [
        SourceItem(f"p{k}", k % 2, "real" if k % 2 == 0 else "fake", DERIVED, Path(f"{k}.jpg"),
                   f"p{k}", identity=f"person{k % n_people}")
        for k in range(n_photos)
    ]  # fmt: skip


def splits_by_identity(items: list[SourceItem]) -> dict[str, set[str]]:
    seen: dict[str, set[str]] = defaultdict(set)
    for item in items:
        seen[item.identity or item.id].add(item.split)
    return seen


def test_62_photos_of_13_people_fill_every_split_identity_disjointly():
    items = photos(62, 13)
    derive_splits(items, RATIOS, seed=0)
    by_identity = splits_by_identity(items)
    assert all(len(s) == 1 for s in by_identity.values())  # one identity, one split
    people = Counter(next(iter(s)) for s in by_identity.values())
    assert people == {"train": 11, "val": 1, "test": 1}
    again = photos(62, 13)
    derive_splits(again, RATIOS, seed=0)
    assert [i.split for i in again] == [i.split for i in items]  # deterministic
    other = photos(62, 13)
    derive_splits(other, RATIOS, seed=1)
    assert [i.split for i in other] != [i.split for i in items]  # the seed matters


def test_only_derived_items_are_assigned():
    items = photos(10, 5)
    items[0].split = "test"
    derive_splits(items, {"train": 1.0}, seed=0)
    assert items[0].split == "test" and {i.split for i in items[1:]} == {"train"}


def test_holdout_val_holds_out_at_least_one_subject():
    items = photos(12, 4)
    for item in items:
        item.split = "train"
    moved = holdout_val(items, 0.1, seed=0)
    assert moved == 3  # one subject of four (12 photos, 3 each)
    assert all(len(s) == 1 for s in splits_by_identity(items).values())


def test_generic_csv_without_splits(tmp_path):
    rows = [f"img{k}.jpg,{k % 2},person{k % 13}" for k in range(62)]
    for k in range(62):  # a listed file must be there (the missing-files rule)
        (tmp_path / f"img{k}.jpg").write_bytes(b"")
    (tmp_path / "list.csv").write_text("path,label,identity\n" + "\n".join(rows) + "\n")
    listing = build_listing("generic", tmp_path, {"csv": "list.csv"})
    by_identity = splits_by_identity(listing.items)
    assert all(len(s) == 1 for s in by_identity.values())
    assert Counter(next(iter(s)) for s in by_identity.values()) == {
        "train": 11, "val": 1, "test": 1
    }  # fmt: skip
    assert listing.split_info["test"].startswith("derived: identity-disjoint")


def test_generic_folders_of_16_videos_fill_every_split(tmp_path):
    for k in range(16):
        path = tmp_path / ("real" if k < 8 else "fake") / f"v{k}.mp4"
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(b"")
    listing = build_listing("generic", tmp_path, {})
    assert Counter(i.split for i in listing.items) == {"train": 13, "val": 2, "test": 1}


def test_an_empty_split_is_flagged_and_the_warning_says_why(caplog):
    """A split nothing is listed in (here: a CSV whose split column never says val) and a split
    whose listed videos were all skipped: both "empty", each warning says which happened."""
    items = [
        SourceItem(id=v, label=0, method="real", split=s, path=Path(v), rel=v)
        for v, s in (("a", "train"), ("b", "test"))
    ]
    listing = Listing(task="deepfake", items=items, split_info=dict.fromkeys(RATIOS, "csv"))
    entries = [VideoEntry(id="a", label=0, method="real", split="train", frames=["a.png"])]
    with caplog.at_level(logging.WARNING, logger="fairforensics.preprocessing"):
        info = _split_info(listing, items, entries)
    assert info == {"train": "csv", "val": "empty", "test": "empty"}
    val, test = caplog.messages
    assert val.startswith("split 'val' has no videos: no video of the dataset is listed in it")
    assert "(the splits come from the CSV's split column)" in val
    assert "the index records it as 'empty'" in val and "stops with an error" in val
    assert test.startswith("split 'test' has no videos: none of the 1 video(s) listed in it")
    assert "skipped, with the reasons in the manifest" in test
