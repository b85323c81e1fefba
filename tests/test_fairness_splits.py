"""Gender-balanced re-split of paper 000: balanced "at each stage" (issue 17 item 4)."""

from __future__ import annotations

from collections import Counter

import pytest

from fairforensics.fairness.splits import gender_balanced_split
from fairforensics.preprocessing.index import DatasetIndex, DatasetIndexError, VideoEntry


def _index(n_male: int = 70, n_female: int = 30) -> DatasetIndex:
    """One real video and two fakes per subject; ids repeat across methods like FF++."""
    videos = []
    for k in range(n_male + n_female):
        gender = "male" if k < n_male else "female"
        subject = f"s{k:03d}"
        videos.append(VideoEntry(f"{k:03d}", 0, "real", "train", [f"r/{k}.png"], identity=subject))
        for method in ("fakeA", "fakeB"):
            videos.append(
                VideoEntry(f"{k:03d}", 1, method, "train", [f"{method}/{k}.png"], identity=subject)
            )
        for v in videos[-3:]:
            v.attributes["gender"] = gender
    return DatasetIndex("toy", "deepfake", videos, root=".")


def test_every_split_and_label_is_balanced_70_male_30_female_seed_3() -> None:
    out = gender_balanced_split(_index(), "gender", (3, 2), 0.1, seed=3)
    cells = Counter((v.split, v.label, v.attributes["gender"]) for v in out.videos)
    for split in ("train", "val", "test"):
        for label in (0, 1):
            f, m = cells[(split, label, "female")], cells[(split, label, "male")]
            assert f == m > 0, (split, label, f, m)
    # 30 female subjects: 18 train (2 of them val), 12 test; each has 1 real and 2 fakes
    assert cells[("test", 0, "female")] == 12 and cells[("train", 0, "female")] == 16
    assert cells[("val", 0, "female")] == 2 and cells[("test", 1, "female")] == 24
    subjects: dict[str, str] = {}
    for v in out.videos:
        assert subjects.setdefault(v.identity, v.split) == v.split  # subject-disjoint
    assert len({v.key for v in out.videos}) == len(out.videos)
    again = gender_balanced_split(_index(), "gender", (3, 2), 0.1, seed=3)
    assert again.videos == out.videos
    other = gender_balanced_split(_index(), "gender", (3, 2), 0.1, seed=4)
    assert {v.identity for v in other.videos} != {v.identity for v in out.videos}


def test_unknown_attribute_dropped_and_missing_groups_are_errors(caplog) -> None:
    index = _index(10, 10)
    index.videos[0].attributes.clear()
    with caplog.at_level("WARNING"):
        out = gender_balanced_split(index, seed=0)
    assert "1 videos have no 'gender'" in caplog.text
    assert all(v.attributes for v in out.videos)
    with pytest.raises(DatasetIndexError, match="two groups"):
        gender_balanced_split(_index(5, 0))
    with pytest.raises(DatasetIndexError, match="no balanced train or test"):
        gender_balanced_split(_index(1, 1), val_fraction=0.0)
