"""Combine several dataset indexes into one (e.g. CAAD-PAD from its six PAD datasets, paper 001
Sec. III-A), so that one training reads them all. Their counts of listed and found videos add
up (unknown when one index has none), so a combination with a partial part is partial; its crop
is theirs when they share one, else unknown.

Every video keeps its label, method (attack species), split, frames, landmarks, masks,
attributes, source and frame numbers; its ``id`` and ``identity`` are prefixed with its
dataset (``"<dataset>/<id>"``), so keys and subjects of different datasets never collide and
identity-disjoint splits stay disjoint. Paths are rewritten relative to the combined index's
folder. Attributes missing from a dataset stay missing (logged), never invented.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path

from fairforensics.preprocessing.crops import common_crop
from fairforensics.preprocessing.index import DatasetIndex, DatasetIndexError, rebase_index

log = logging.getLogger(__name__)


def combine_indexes(
    indexes: Sequence[DatasetIndex], dataset: str, root: str | Path
) -> DatasetIndex:
    """One index named ``dataset`` holding every video of ``indexes``, paths relative to ``root``
    (the folder the combined index will be written to)."""
    if not indexes:
        raise DatasetIndexError("combine: give at least one dataset index")
    names = [ix.dataset for ix in indexes]
    if len(set(names)) != len(names):
        raise DatasetIndexError(
            f"combine: dataset names repeat ({names}); each prefix must be unique"
        )
    tasks = {ix.task for ix in indexes}
    if len(tasks) != 1:
        raise DatasetIndexError(
            f"combine: indexes mix tasks {sorted(tasks)} "
            f"({', '.join(f'{ix.dataset}={ix.task}' for ix in indexes)})"
        )
    root = Path(root).resolve()
    all_attributes = sorted({a for ix in indexes for a in ix.attribute_names})
    videos = []
    methods: list[str] = []
    split_info: dict[str, list[str]] = {}
    for ix in indexes:
        missing = sorted(set(all_attributes) - set(ix.attribute_names))
        if missing:
            log.warning("combine: %s has no attribute %s", ix.dataset, ", ".join(missing))
        for v in rebase_index(ix, root).videos:
            videos.append(
                replace(
                    v,
                    id=f"{ix.dataset}/{v.id}",
                    identity=None if v.identity is None else f"{ix.dataset}/{v.identity}",
                    attributes=dict(v.attributes),
                )
            )
        methods += [m for m in ix.method_names if m not in methods]
        for split, how in ix.split_info.items():
            split_info.setdefault(split, []).append(f"{ix.dataset}: {how}")
    methods = (["real"] if "real" in methods else []) + [m for m in methods if m != "real"]
    counted = all(ix.videos_listed is not None for ix in indexes)  # else the total is unknown
    settings = [ix.preprocess for ix in indexes]
    same = all(s == settings[0] for s in settings) and settings[0] is not None
    if not same and any(s is not None for s in settings):
        log.warning("combine: the indexes were made with different face-crop settings; the "
                    "combined index records none")  # fmt: skip
    return DatasetIndex(
        dataset=dataset,
        task=tasks.pop(),
        videos=videos,
        root=root,
        methods=methods,
        split_info={k: "; ".join(v) for k, v in split_info.items()},
        videos_listed=sum(ix.videos_listed or 0 for ix in indexes) if counted else None,
        videos_found=sum(ix.videos_found or 0 for ix in indexes) if counted else None,
        crop=common_crop(indexes),
        preprocess=settings[0] if same else None,
        # an incomplete part (an interrupted preprocessing run) keeps the combination incomplete
        videos_pending=sum(ix.videos_pending or 0 for ix in indexes) or None,
    )


def select_videos(
    index: DatasetIndex, where: Mapping[str, Sequence[str]], dataset: str | None = None
) -> DatasetIndex:
    """A copy of ``index`` (named ``dataset``, default its own name) with the videos that match
    every key of ``where``: ``method``, ``split``, ``label`` (``0``/``1``) or an attribute name,
    each with its allowed values (a video without that attribute does not match). Selecting
    nothing is an error naming the index and the filter."""
    fields = {"method": lambda v: v.method, "split": lambda v: v.split,
              "label": lambda v: str(v.label)}  # fmt: skip

    def value(video: object, key: str) -> str | None:
        get = fields.get(key)
        return get(video) if get else video.attributes.get(key)

    allowed = {k: {str(x) for x in vals} for k, vals in where.items()}
    videos = [v for v in index.videos if all(value(v, k) in ok for k, ok in allowed.items())]
    if not videos:
        raise DatasetIndexError(f"{index.dataset}: no video matches {dict(where)}")
    kept = {v.method for v in videos}
    return replace(
        index,
        dataset=dataset or index.dataset,
        videos=videos,
        methods=[m for m in index.method_names if m in kept],
        # a part of a partial source stays marked partial (the counts are the source's)
        videos_listed=index.videos_listed if index.partial else None,
        videos_found=index.videos_found if index.partial else None,
    )


__all__ = ["combine_indexes", "select_videos"]
