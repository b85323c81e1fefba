"""Run the preprocessing of one dataset: list, shard, resume, process in a pool, write the index.

Output (DeepfakeBench, Appendix A.1 "Saving Processed Data")::

    <out>/<dataset>.json                       the dataset index (paths relative to <out>)
    <out>/<dataset>/<relative video path>/{frames/NNN.png, landmarks/NNN.npy, masks/NNN.png}
    <out>/<dataset>.manifest.json              every skipped video / frame with its reason, counts
    <out>/<dataset>.log                        the log of the run

With ``num_shards > 1`` the index and manifest of a shard are ``<dataset>.shard-I-of-K.json``
and ``...manifest.json``; once every shard is done, ``index_only=True`` (``--index-only``)
writes the full index from the completion records without processing anything.
"""

from __future__ import annotations

import json
import logging
import multiprocessing
import os
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tqdm import tqdm

from preprocessing.attributes import join_attributes
from preprocessing.config import PreprocessConfig
from preprocessing.datasets import build_listing
from preprocessing.datasets.base import Listing, SourceItem, stable_fraction
from preprocessing.files import atomic_write_text
from preprocessing.index import DatasetIndex, VideoEntry, write_index
from preprocessing.worker import STAGES, VideoResult, process_item, read_record

logger = logging.getLogger("preprocessing")


@dataclass
class RunSummary:
    """Counts, timings and output paths of one preprocessing run."""

    index_path: Path
    manifest_path: Path
    videos_total: int = 0
    videos_done: int = 0
    videos_cached: int = 0
    videos_skipped: int = 0
    videos_pending: int = 0
    frames_sampled: int = 0
    faces: int = 0
    seconds: float = 0.0
    cpu_s: float = 0.0  # CPU seconds of the workers on the processed videos
    timing: dict[str, float] = field(default_factory=lambda: dict.fromkeys(STAGES, 0.0))

    def to_json(self) -> dict[str, Any]:
        data = {k: v for k, v in self.__dict__.items() if not isinstance(v, Path)}
        data["index_path"] = str(self.index_path)
        data["manifest_path"] = str(self.manifest_path)
        return data


def in_shard(item: SourceItem, num_shards: int, shard_index: int) -> bool:
    """Stable assignment of a video to one of ``num_shards`` shards (by a hash of its key)."""
    return int(stable_fraction("/".join(item.key), seed=7) * num_shards) == shard_index


def list_items(cfg: PreprocessConfig, source: str = "config") -> Listing:
    """The dataset module's listing with the attributes CSV joined in."""
    ds = cfg.dataset
    listing = build_listing(ds.type, ds.root, ds.options, source=source)
    if ds.attributes is not None:
        join_attributes(listing, ds.attributes)
    return listing


def _entry(item: SourceItem, record: dict[str, Any], prefix: str, root: Path) -> VideoEntry:
    def paths(kind: str) -> list[str] | None:
        rels = record.get(kind)
        return None if rels is None else [f"{prefix}/{r}" for r in rels]

    source = Path(os.path.relpath(item.path.resolve(), root.resolve())).as_posix()
    return VideoEntry(
        id=item.id,
        label=item.label,
        method=item.method,
        split=item.split,
        frames=paths("frames") or [],
        landmarks=paths("landmarks"),
        masks=paths("masks"),
        attributes=dict(item.attributes),
        identity=item.identity,
        source=source,
        frame_indices=list(record["frame_indices"]),
    )


def _add_file_log(path: Path) -> logging.Handler:
    path.parent.mkdir(parents=True, exist_ok=True)
    handler = logging.FileHandler(path, encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    logging.getLogger("preprocessing").addHandler(handler)
    return handler


def run_preprocess(
    cfg: PreprocessConfig,
    *,
    workers: int | None = None,
    num_shards: int = 1,
    shard_index: int = 0,
    overwrite: bool = False,
    index_only: bool = False,
    progress: bool = True,
) -> RunSummary:
    """Preprocess every video of ``cfg.dataset`` (or of one shard) and write the index."""
    if num_shards < 1 or not 0 <= shard_index < num_shards:
        raise ValueError(f"shard index {shard_index} is not in [0, {num_shards})")
    out = Path(cfg.output.root)
    name = cfg.dataset.name
    stem = name if num_shards == 1 else f"{name}.shard-{shard_index}-of-{num_shards}"
    summary = RunSummary(out / f"{stem}.json", out / f"{stem}.manifest.json")
    handler = _add_file_log(out / f"{stem}.log")
    start = time.perf_counter()
    try:
        listing = list_items(cfg)
        items = [it for it in listing.items if in_shard(it, num_shards, shard_index)]
        summary.videos_total = len(items)
        logger.info("%s: %d videos (shard %d of %d)", name, len(items), shard_index, num_shards)
        fingerprint = cfg.fingerprint()
        video_root = out / name
        records: dict[tuple[str, str], dict[str, Any]] = {}
        todo: list[SourceItem] = []
        for item in items:
            record = None if overwrite else read_record(video_root / item.rel, fingerprint)
            if record is not None:
                records[item.key] = record
            else:
                todo.append(item)
        summary.videos_cached = len(records)
        results: list[VideoResult] = []
        if index_only:
            summary.videos_pending = len(todo)
        else:
            results = _run_all(todo, cfg, video_root, workers, progress)
        for res in results:
            if res.record is not None:
                records[res.key] = res.record
            for stage, sec in res.timing.items():
                summary.timing[stage] += sec
            summary.frames_sampled += res.frames_sampled
            summary.faces += res.faces
            summary.cpu_s += res.cpu_s
        summary.videos_done = len(records)
        summary.videos_skipped = sum(1 for r in results if r.reason)
        entries = [
            _entry(it, records[it.key], f"{name}/{it.rel}", Path(cfg.dataset.root))
            for it in items
            if it.key in records
        ]
        index = DatasetIndex(
            dataset=name,
            task=listing.task,
            videos=entries,
            root=out,
            methods=listing.methods,
            split_info=_split_info(listing, entries),
        )
        write_index(index, summary.index_path)
        summary.seconds = time.perf_counter() - start
        _write_manifest(summary, listing, items, results, records, todo if index_only else [])
        logger.info(
            "%s: %d videos in the index, %d cached, %d skipped, %d frames with a face, %.1f s",
            name, summary.videos_done, summary.videos_cached, summary.videos_skipped,
            summary.faces, summary.seconds,
        )  # fmt: skip
        return summary
    finally:
        logging.getLogger("preprocessing").removeHandler(handler)
        handler.close()


def _run_all(
    todo: list[SourceItem], cfg: PreprocessConfig, video_root: Path, workers: int | None, bar: bool
) -> list[VideoResult]:
    n = workers if workers is not None else cfg.workers
    n = n or os.cpu_count() or 1
    n = max(1, min(n, len(todo)))
    results: list[VideoResult] = []
    frames = 0
    start = time.perf_counter()
    with tqdm(total=len(todo), desc="videos", unit="video", disable=not bar) as pbar:

        def done(res: VideoResult) -> None:
            nonlocal frames
            results.append(res)
            frames += res.frames_sampled
            if res.reason:
                logger.warning("skipped %s: %s", "/".join(res.key), res.reason)
            pbar.update(1)
            pbar.set_postfix(fps=f"{frames / max(time.perf_counter() - start, 1e-9):.1f}")

        if n == 1:
            for item in todo:
                done(process_item(item, cfg, video_root / item.rel))
        else:
            _run_pool(todo, _Work(cfg, video_root), n, done)
    return results


def _run_pool(
    todo: list[SourceItem],
    work: Callable[[SourceItem], VideoResult],
    n: int,
    done: Callable[[VideoResult], None],
) -> None:
    """Run ``work`` on every item in ``n`` processes; survive a worker that dies (a segfault).

    Each worker leaves a marker file naming its item while it works on it. When a worker dies,
    the pool stops the others too, so the items with a marker are only suspects: one suspect
    alone is the culprit and is skipped with its reason; several are each re-run alone, where a
    crash names its item. Items that never started go to a fresh pool.
    """
    # fresh interpreters: forking a parent that already ran OpenCV or dlib threads can deadlock
    method = "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn"
    ctx = multiprocessing.get_context(method)
    with tempfile.TemporaryDirectory(prefix="preprocess-inflight-") as markers:
        while todo:
            left: list[SourceItem] = []
            with ProcessPoolExecutor(n, mp_context=ctx, initializer=_init_worker) as pool:
                futures = {pool.submit(_marked, work, item, markers): item for item in todo}
                for fut in as_completed(futures):
                    try:
                        done(fut.result())
                    except BrokenProcessPool:
                        left.append(futures[fut])
            marked = {
                tuple(json.loads(m.read_text(encoding="utf-8")))
                for m in Path(markers).glob("*.json")
            }
            for leftover in Path(markers).iterdir():
                leftover.unlink()
            suspects = [item for item in left if item.key in marked] or left  # no marker: all
            todo = [item for item in left if item not in suspects]
            if len(suspects) == 1:
                done(VideoResult(key=suspects[0].key, reason="the worker process crashed on it"))
            elif suspects:
                logger.warning(
                    "a worker process died; %d videos are re-run one by one", len(suspects)
                )
                for item in suspects:
                    _run_pool([item], work, 1, done)
            if todo:
                logger.warning("a worker process died; %d videos go to a fresh pool", len(todo))


def _marked(
    work: Callable[[SourceItem], VideoResult], item: SourceItem, markers: str
) -> VideoResult:
    """``work(item)`` with a marker file naming the item while it runs."""
    marker = Path(markers) / f"{os.getpid()}.json"
    atomic_write_text(marker, json.dumps(list(item.key)))  # a killed writer leaves no half file
    try:
        return work(item)
    finally:
        marker.unlink()


@dataclass
class _Work:
    """Picklable ``process_item`` bound to a config and an output folder."""

    cfg: PreprocessConfig
    video_root: Path

    def __call__(self, item: SourceItem) -> VideoResult:
        return process_item(item, self.cfg, self.video_root / item.rel)


def _init_worker() -> None:
    import cv2

    cv2.setNumThreads(1)  # one video per process; avoid oversubscribing the cores


def _split_info(listing: Listing, entries: list[VideoEntry]) -> dict[str, str]:
    info = dict(listing.split_info)
    counts = Counter(e.split for e in entries)
    for split in ("train", "val", "test"):
        if counts[split] == 0 and split not in info:
            info[split] = "empty"
            logger.warning("split %r has no videos", split)
    return info


def _write_manifest(
    summary: RunSummary,
    listing: Listing,
    items: list[SourceItem],
    results: list[VideoResult],
    records: dict[tuple[str, str], dict[str, Any]],
    pending: list[SourceItem],
) -> None:
    by_key = {it.key: it for it in items}
    skipped_videos = [
        {"method": r.key[0], "id": r.key[1], "source": str(by_key[r.key].path), "reason": r.reason}
        for r in results
        if r.reason
    ]
    skipped_frames = []
    for key, record in sorted(records.items()):
        for sf in record.get("skipped_frames") or []:
            skipped_frames.append({"method": key[0], "id": key[1], **sf})
    notes = [{"method": r.key[0], "id": r.key[1], "note": n} for r in results for n in r.notes]
    reasons = Counter(v["reason"].split(":")[-1].strip() for v in skipped_videos)
    data = {
        "summary": summary.to_json(),
        "skipped_reasons": dict(reasons),
        "skipped_frame_reasons": dict(Counter(f["reason"] for f in skipped_frames)),
        "layout_problems": listing.problems,
        "skipped_videos": skipped_videos,
        "skipped_frames": skipped_frames,
        "notes": notes,
        "pending": [{"method": it.method, "id": it.id} for it in pending],
    }
    atomic_write_text(summary.manifest_path, json.dumps(data, indent=1) + "\n")
