"""Run the preprocessing of one dataset: list, shard, resume, process in a pool, write the index.

Output (DeepfakeBench, Appendix A.1 "Saving Processed Data")::

    <out>/<dataset>.json                       the dataset index (paths relative to <out>)
    <out>/<dataset>/<relative video path>/{frames/NNN.png, landmarks/NNN.npy, masks/NNN.png}
    <out>/<dataset>.manifest.json              every skipped video / frame with its reason, counts
    <out>/<dataset>.log                        the log of the run

With ``num_shards > 1`` the index and manifest of a shard are ``<dataset>.shard-I-of-K.json``
and ``...manifest.json``; once every shard is done, ``index_only=True`` (``--index-only``)
writes the full index from the completion records without processing anything.

Stopping (issue 14): SIGINT (Ctrl-C) or SIGTERM cancels the videos not started yet, lets the
running ones finish (a second signal abandons them, as does the first with one worker; a video
stopped midway leaves only a hidden temporary folder), writes the index and manifest of what is
done and raises :class:`PreprocessInterrupted`. That index records the videos not done as
``videos_pending``, so commands refuse it as incomplete unless ``--allow-partial``. Re-running
the same command resumes from the completion records and writes the complete index.
"""

from __future__ import annotations

import json
import logging
import math
import multiprocessing
import os
import signal
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tqdm import tqdm

from fairforensics.preprocessing.attributes import join_attributes
from fairforensics.preprocessing.config import PreprocessConfig
from fairforensics.preprocessing.datasets import build_listing
from fairforensics.preprocessing.datasets.base import (
    DatasetLayoutError,
    Listing,
    SourceItem,
    stable_fraction,
)
from fairforensics.preprocessing.files import write_json
from fairforensics.preprocessing.index import DatasetIndex, VideoEntry, write_index
from fairforensics.preprocessing.worker import (
    STAGES,
    VideoResult,
    check_face_device,
    process_item,
    read_record,
)

logger = logging.getLogger(__package__)


class StopRequested(KeyboardInterrupt):
    """Raised in the main thread by SIGINT or SIGTERM while :func:`run_preprocess` runs."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


class PreprocessInterrupted(Exception):
    """A run stopped by a signal; the index and manifest of the finished videos are written."""

    def __init__(self, signum: int, done: int, total: int, index: Path | None = None) -> None:
        marked = (
            f"; until then {index} is marked incomplete (train, test and the others refuse it "
            "unless --allow-partial)"
            if index is not None
            else ""
        )
        super().__init__(
            f"interrupted: {done} of {total} videos done; re-run the same command to resume"
            + marked
        )
        self.signum, self.done, self.total = signum, done, total

    @property
    def exit_code(self) -> int:
        """The shell convention: 128 + the signal number (130 for SIGINT, 143 for SIGTERM)."""
        return 128 + self.signum


@contextmanager
def stop_on_signals() -> Iterator[None]:
    """Turn SIGINT and SIGTERM into :class:`StopRequested` (main thread only; else a no-op)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: object) -> None:
        raise StopRequested(signum)

    previous = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, h in previous.items():
            signal.signal(s, h)


@dataclass
class RunSummary:
    """Counts, timings and output paths of one preprocessing run."""

    index_path: Path
    manifest_path: Path
    videos_listed: int = 0  # videos the dataset's lists name (the whole dataset, every shard)
    videos_found: int = 0  # of those, present on disk
    allow_partial: bool = False  # dataset.options.allow_partial: the missing ones are intended
    videos_total: int = 0
    videos_done: int = 0
    videos_cached: int = 0
    videos_skipped: int = 0
    videos_pending: int = 0
    frames_sampled: int = 0
    faces: int = 0  # faces found by this run (cached videos not included)
    face_crops: int = 0  # aligned face crops in the index (cached videos included)
    skipped_reasons: dict[str, int] = field(default_factory=dict)  # why videos were skipped
    warnings: int = 0  # warnings this run logged (a video's, e.g. fewer frames than asked, too)
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
        clips=record.get("clips"),
    )


class _RunLog(logging.FileHandler):
    """The run's log file; counts the warnings logged in this process but a video's own (those
    of :mod:`.face_path`, counted from the videos' records, wherever their worker ran)."""

    warnings = 0

    def emit(self, record: logging.LogRecord) -> None:
        if record.levelno >= logging.WARNING and record.name != f"{__package__}.face_path":
            self.warnings += 1
        super().emit(record)


def _add_file_log(path: Path) -> _RunLog:
    path.parent.mkdir(parents=True, exist_ok=True)
    handler = _RunLog(path, encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    logging.getLogger(__package__).addHandler(handler)
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
    with stop_on_signals():  # Ctrl-C / SIGTERM: see the module docstring
        try:
            listing = list_items(cfg)
            summary.videos_listed, summary.videos_found = (
                listing.videos_listed,
                listing.videos_found,
            )
            summary.allow_partial = listing.allow_partial
            check_missing(listing, name, cfg.max_failed_share)
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
            stopped: StopRequested | None = None
            if index_only:
                summary.videos_pending = len(todo)
            else:
                if todo:
                    check_face_device(cfg)  # here, not after starting every worker process
                try:
                    _run_all(todo, cfg, video_root, workers, progress, results)
                except StopRequested as exc:
                    stopped = exc
                except KeyboardInterrupt:  # a caller's own SIGINT handling (no signal handler set)
                    stopped = StopRequested(signal.SIGINT)
            for res in results:
                if res.record is not None:
                    records[res.key] = res.record
                for stage, sec in res.timing.items():
                    summary.timing[stage] += sec
                summary.frames_sampled += res.frames_sampled
                summary.faces += res.faces
                summary.cpu_s += res.cpu_s
            finished = {r.key for r in results} | set(records)
            pending = [it for it in todo if it.key not in finished]
            if stopped is not None:  # a video can finish between its rename and its report
                for it in pending:
                    record = read_record(video_root / it.rel, fingerprint)
                    if record is not None:
                        records[it.key] = record
                pending = [it for it in pending if it.key not in records]
                summary.videos_pending = len(pending)
            summary.videos_done = len(records)
            summary.videos_skipped = sum(1 for r in results if r.reason)
            summary.skipped_reasons = dict(Counter(_reason(r.reason) for r in results if r.reason))
            entries = [
                _entry(it, records[it.key], f"{name}/{it.rel}", Path(cfg.dataset.root))
                for it in items
                if it.key in records
            ]
            summary.face_crops = sum(len(e.frames) for e in entries)
            index = DatasetIndex(
                dataset=name,
                task=listing.task,
                videos=entries,
                root=out,
                methods=listing.methods,
                split_info=_split_info(listing, items, entries),
                videos_listed=listing.videos_listed,
                videos_found=listing.videos_found,
                crop=cfg.align.crop,
                preprocess=cfg.face_settings().to_json(),
                source_root=Path(cfg.dataset.root).resolve().as_posix(),
                # interrupted: incomplete (an --index-only run cannot tell the videos not done
                # from those that failed: both have no completion record)
                videos_pending=(summary.videos_pending or None) if stopped else None,
            )
            if index.partial:
                logger.warning("%s is partial: %s are on disk", name, index.partial)
            write_index(index, summary.index_path)
            summary.seconds = time.perf_counter() - start
            summary.warnings = handler.warnings + sum(len(r.warnings) for r in results)
            _write_manifest(
                summary, listing, items, results, records, pending, interrupted=stopped is not None
            )
            if stopped is not None:
                raise PreprocessInterrupted(
                    stopped.signum,
                    summary.videos_done,
                    len(items),
                    summary.index_path if summary.videos_pending else None,
                )
            logger.info(
                "%s: %d videos in the index (%d cached), %d skipped, %d face crops in the index "
                "(%d faces found by this run), %.1f s",
                name, summary.videos_done, summary.videos_cached, summary.videos_skipped,
                summary.face_crops, summary.faces, summary.seconds,
            )  # fmt: skip
            return summary
        finally:
            logging.getLogger(__package__).removeHandler(handler)
            handler.close()


def _run_all(
    todo: list[SourceItem],
    cfg: PreprocessConfig,
    video_root: Path,
    workers: int | None,
    bar: bool,
    results: list[VideoResult],
) -> None:
    """Process ``todo``, appending to ``results`` as videos finish (kept when a signal stops it)."""
    n = workers if workers is not None else cfg.workers
    n = n or os.cpu_count() or 1
    n = max(1, min(n, len(todo)))
    frames = 0
    start = time.perf_counter()
    # a bar on a terminal only (tqdm's disable=None), never in a redirected log
    with tqdm(total=len(todo), desc="videos", unit="video", disable=None if bar else True) as pbar:

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
    if method == "forkserver":  # no effect once this process's fork server is running
        ctx.set_forkserver_preload(["fairforensics.preprocessing.pool_preload"])
    with tempfile.TemporaryDirectory(prefix="preprocess-inflight-") as markers:
        while todo:
            left: list[SourceItem] = []
            with ProcessPoolExecutor(n, mp_context=ctx, initializer=_init_worker) as pool:
                futures: dict[Future, SourceItem] = {}
                seen: set[Future] = set()
                try:
                    for item in todo:
                        futures[pool.submit(_marked, work, item, markers)] = item
                    for fut in as_completed(futures):
                        seen.add(fut)
                        try:
                            done(fut.result())
                        except BrokenProcessPool:
                            left.append(futures[fut])
                except KeyboardInterrupt:
                    (Path(markers) / _STOP).touch()  # queued videos must not start either
                    _stop_pool(pool, [f for f in futures if f not in seen], done)
                    raise
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


def _stop_pool(
    pool: ProcessPoolExecutor, unseen: list[Future], done: Callable[[VideoResult], None]
) -> None:
    """Cancel the videos not started; wait for the running ones unless a second signal comes."""
    queued = [f for f in unseen if not f.cancel()]  # cancel() fails once queued to a worker
    workers = list((getattr(pool, "_processes", None) or {}).values())  # shutdown drops them
    pool.shutdown(wait=False)
    logger.warning(
        "stopping: the videos not started are cancelled; the running ones finish first "
        "(send the signal again to abandon them)"
    )
    try:
        for fut in as_completed(queued):
            if fut.exception() is None:  # _NotStarted, or a crash: the next run redoes it
                done(fut.result())
    except KeyboardInterrupt:
        logger.warning("abandoning the running videos; the next run redoes them")
        for proc in workers:
            proc.kill()  # the worker ignores SIGINT/SIGTERM; its half video stays hidden


_STOP = "stop"  # a file in the markers folder: the run is stopping, start no more videos


class _NotStarted(Exception):
    """A queued video that a worker did not start because the run is stopping."""


def _marked(
    work: Callable[[SourceItem], VideoResult], item: SourceItem, markers: str
) -> VideoResult:
    """``work(item)`` with a marker file naming the item while it runs."""
    if (Path(markers) / _STOP).exists():
        raise _NotStarted("/".join(item.key))
    marker = Path(markers) / f"{os.getpid()}.json"
    write_json(marker, list(item.key))  # atomic: a killed writer leaves no half file
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
    # the parent decides how to stop: a Ctrl-C sent to the whole process group must not
    # interrupt a worker mid-video (the parent lets it finish or kills it)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)


#: what a layout's ``split_info`` says, in words, for the warning about an empty split
_SPLIT_SOURCES = {
    "csv": "the CSV's split column",
    "folders": "the train/val/test folders",
    "official": "the official split files",
}


def _split_info(
    listing: Listing, items: list[SourceItem], entries: list[VideoEntry]
) -> dict[str, str]:
    """How each split was made; a split with no video (none of ``items`` in it, or none of
    them indexed) is "empty", with a warning that says which and what follows from it."""
    info = dict(listing.split_info)
    counts = Counter(e.split for e in entries)
    listed = Counter(item.split for item in items)
    for split in ("train", "val", "test"):
        if counts[split] == 0:
            made = info.get(split)
            how = f" (the splits come from {_SPLIT_SOURCES.get(made, made)})" if made else ""
            why = (
                f"none of the {listed[split]} video(s) listed in it is in the index (skipped, "
                "with the reasons in the manifest, or not preprocessed yet)"
                if listed[split]
                else f"no video of the dataset is listed in it{how}"
            )
            info[split] = "empty"
            logger.warning(
                "split %r has no videos: %s; the index records it as 'empty', and training or "
                "testing on this split stops with an error",
                split,
                why,
            )
    return info


def _write_manifest(
    summary: RunSummary,
    listing: Listing,
    items: list[SourceItem],
    results: list[VideoResult],
    records: dict[tuple[str, str], dict[str, Any]],
    pending: list[SourceItem],
    *,
    interrupted: bool = False,
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
    warnings = [
        {"method": key[0], "id": key[1], "warning": w}
        for key, record in sorted(records.items())
        for w in record.get("warnings") or []
    ]
    data = {
        "summary": summary.to_json(),
        "skipped_reasons": summary.skipped_reasons,
        "skipped_frame_reasons": dict(Counter(f["reason"] for f in skipped_frames)),
        "layout_problems": listing.problems,
        "skipped_videos": skipped_videos,
        "skipped_frames": skipped_frames,
        "warnings": warnings,
        "notes": notes,
        "interrupted": interrupted,
        "pending": [{"method": it.method, "id": it.id} for it in pending],
    }
    write_json(summary.manifest_path, data)


def _reason(text: str) -> str:
    """The kind of a skip reason, without the path it names (``.../a.mp4: file not found``)."""
    return text.split(":")[-1].strip()


class PartialDataset(DatasetLayoutError):
    """More than ``max_failed_share`` of the videos a dataset lists are not on disk, and
    ``dataset.options.allow_partial`` does not say that the subset is intended."""


def check_missing(listing: Listing, name: str, max_share: float) -> None:
    """Raise :class:`PartialDataset`, before anything is processed, when more than ``max_share``
    of the videos the dataset lists are missing, unless ``allow_partial``."""
    listed, missing = listing.videos_listed, listing.missing
    if listing.allow_partial or not listed or missing / listed <= max_share:
        return
    raise PartialDataset(
        f"{name}: {missing:,} of the {listed:,} videos the dataset lists are not on disk "
        f"({missing / listed:.0%}, more than max_failed_share {max_share:g}; only "
        f"{listing.videos_found:,} found). Complete the download, or, if this subset is "
        "intended, set dataset.options.allow_partial: true (--set "
        "dataset.options.allow_partial=true): tables and reports then name the set as partial"
    )


class TooManyFailures(Exception):
    """More than ``max_failed_share`` of the listed videos failed (index and manifest written)."""

    exit_code = 1


def check_failures(summary: RunSummary, max_share: float) -> None:
    """Raise :class:`TooManyFailures` with a summary when more than ``max_share`` of the listed
    videos failed; the message names the index and the manifest.

    Videos the dataset lists but that are not on disk count as failures unless
    ``allow_partial`` (then the share is of the videos found). With shards, the missing videos
    count in the whole dataset's share only (``videos_total`` is the shard's)."""
    missing = 0 if summary.allow_partial else summary.videos_listed - summary.videos_found
    whole = summary.videos_total == summary.videos_found  # one shard: the whole listing
    total = summary.videos_total + (missing if whole else 0)
    failed = summary.videos_skipped + (missing if whole else 0)
    if not total or failed / total <= max_share:
        return
    reasons = dict(summary.skipped_reasons)
    if whole and missing:
        reasons["listed but not on disk"] = missing
    reasons_text = ", ".join(
        f"{n} {why}" for why, n in sorted(reasons.items(), key=lambda kv: -kv[1])
    )
    raise TooManyFailures(
        f"{failed} of {total} listed videos failed ({failed / total:.0%}, more than "
        f"max_failed_share {max_share:g}): {reasons_text}. The index holds the "
        f"{summary.videos_done} others: {summary.index_path}; every failure with its reason: "
        f"{summary.manifest_path}. Fix those inputs, or accept the failures with "
        f"--set max_failed_share={math.ceil(100 * failed / total) / 100:g}"
    )
