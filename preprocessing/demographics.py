"""Public per-frame demographic labels onto a dataset index, matched by video.

The CSV formats (AI-Face, Lin et al. CVPR 2024, Xu et al.'s ``A-*.csv``) are read by
``preprocessing.demographic_formats``. Each row's video is identified from its path by the
dataset's folder layout (``preprocessing.frame_paths``: FF++ and DeepfakeBench folders, DFD,
Celeb-DF, DFDC, AI-Face's FF++ file names, generic), never from a frame number, and matched to
the index:

- a recognised layout: the index video whose id equals the path's video id, of the class the
  layout gives (or the row's ``Target``/``label``); an FF++ fake also of the path's (or Lin et
  al.'s ``spe_label``) method, DeepfakeBench's label names included (``FF-DF`` = Deepfakes).
  A row whose layout class and CSV class disagree matches nothing.
- the generic layout: the index video whose source file or frame path ends with the row's path
  (at least folder + file; for a video source, the row's folder = the video without its suffix),
  else the video whose id is the row's nearest folder that is not a container (``frames``,
  ``c23``, ...), the folder above it deciding between methods.

A row that matches no video, or several, is counted by the layout its path looks like. When
more than ``max_unmatched`` of the rows (default half) match nothing the import fails, naming
the layout of those paths and of the index's own videos (a CSV for another dataset, or an index
holding part of the dataset only).

Per video, each attribute gets its majority label over the frames that define it (ties go to the
lower AI-Face code) with ``<attribute>_agreement`` = the share of those frames that carry it,
and ``<attribute>_uncertainty`` = the mean uncertainty score when the CSV has one.
"""

from __future__ import annotations

import logging
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import PurePosixPath

from fairforensics.preprocessing.datasets.faceforensics import FF_METHODS
from fairforensics.preprocessing.demographic_formats import (
    CODES,
    DemographicsError,
    FrameLabels,
)
from fairforensics.preprocessing.frame_paths import (
    CONTAINERS,
    GENERIC,
    VideoRef,
    canonical_method,
    parse_frame_path,
)
from fairforensics.preprocessing.index import DatasetIndex, VideoEntry
from fairforensics.preprocessing.video import VIDEO_SUFFIXES

log = logging.getLogger(__name__)

_FF_METHODS = {canonical_method(m) for m in FF_METHODS}


@dataclass
class ImportReport:
    """What an import matched: videos labelled, rows used, and where the others look from."""

    videos: int
    matched: int
    rows: int
    rows_matched: int
    unmatched_by_layout: dict[str, int]
    unmatched_examples: list[str]
    index_layout: str

    def to_json(self) -> dict[str, object]:
        return {
            "videos": self.videos,
            "videos_matched": self.matched,
            "rows": self.rows,
            "rows_matched": self.rows_matched,
            "rows_unmatched": self.rows - self.rows_matched,
            "unmatched_by_layout": self.unmatched_by_layout,
            "unmatched_examples": self.unmatched_examples,
            "index_looks_like": self.index_layout,
        }


def _parts(path: str) -> tuple[str, ...]:
    return tuple(x for x in PurePosixPath(path.replace("\\", "/")).parts if x not in ("/", "."))


def _usable(tail: tuple[str, ...]) -> bool:
    """A path tail that can name one video: a folder that is not a container, or a file name
    that is not a bare number (``frames/003.png`` names no video, even in a one-video index)."""
    *folders, name = tail
    return (
        any(f.lower() not in CONTAINERS for f in folders) or not PurePosixPath(name).stem.isdigit()
    )


def _strip_suffix(parts: tuple[str, ...]) -> tuple[str, ...]:
    if parts and PurePosixPath(parts[-1]).suffix.lower() in VIDEO_SUFFIXES:
        return (*parts[:-1], PurePosixPath(parts[-1]).stem)
    return parts


class _Matcher:
    """The index's videos by id, and by the trailing folders + file of their sources and frames."""

    def __init__(self, videos: Iterable[VideoEntry]) -> None:
        self.by_id: dict[str, list[VideoEntry]] = defaultdict(list)
        self.by_tail: dict[tuple[str, ...], set[tuple[str, str]]] = defaultdict(set)
        self.by_key: dict[tuple[str, str], VideoEntry] = {}
        for v in videos:
            self.by_id[v.id].append(v)
            self.by_key[v.key] = v
            paths = [_strip_suffix(_parts(v.source))] if v.source else []
            for parts in paths + [_parts(f) for f in v.frames]:
                for k in (2, 3):
                    if len(parts) >= k and _usable(parts[-k:]):
                        self.by_tail[parts[-k:]].add(v.key)

    def find(self, row: FrameLabels, ref: VideoRef) -> VideoEntry | None:
        if ref.label is not None and row.target is not None and ref.label != row.target:
            return None
        label = ref.label if ref.label is not None else row.target
        if ref.layout == GENERIC:
            found = self._by_path(_parts(row.path))
            if found is not None:
                return found if label is None or found.label == label else None
        if ref.video is None:
            return None
        found = [v for v in self.by_id.get(ref.video, []) if label is None or v.label == label]
        method = ref.method or row.method
        if method and any(canonical_method(v.method) in _FF_METHODS for v in found):
            found = [v for v in found if canonical_method(v.method) == canonical_method(method)]
        if len(found) > 1 and ref.method_hint:
            hinted = [
                v for v in found if canonical_method(v.method) == canonical_method(ref.method_hint)
            ]
            found = hinted or found
        return found[0] if len(found) == 1 else None

    def _by_path(self, parts: tuple[str, ...]) -> VideoEntry | None:
        """The one video whose source or frame ends with the path (or, for a frame of a
        video source, whose source without suffix ends with the path's folder)."""
        for tail in (parts, parts[:-1]):
            for k in (3, 2):
                if len(tail) >= k:
                    keys = self.by_tail.get(tail[-k:], set())
                    if len(keys) == 1:
                        return self.by_key[next(iter(keys))]
        return None


def _vote(frames: list[FrameLabels], attribute: str) -> dict[str, str]:
    defined = [f for f in frames if f.labels.get(attribute) is not None]
    if not defined:
        return {}
    counts = Counter(f.labels[attribute] for f in defined)
    order = list(CODES[attribute].values())
    label = max(counts, key=lambda k: (counts[k], -order.index(k)))
    out = {attribute: label, f"{attribute}_agreement": f"{counts[label] / len(defined):.3f}"}
    scores = [f.uncertainty[attribute] for f in defined if attribute in f.uncertainty]
    if scores:
        out[f"{attribute}_uncertainty"] = f"{sum(scores) / len(scores):.3f}"
    return out


def index_layout(index: DatasetIndex) -> str:
    """The layout most of the index's videos look like (by source file, else first frame)."""
    counts = Counter(
        parse_frame_path(v.source or (v.frames[0] if v.frames else v.id)).layout
        for v in index.videos
    )
    return counts.most_common(1)[0][0] if counts else GENERIC


def import_demographics(
    index: DatasetIndex,
    frames: Sequence[FrameLabels],
    attributes: Sequence[str] = tuple(CODES),
    max_unmatched: float = 0.5,
) -> tuple[DatasetIndex, ImportReport]:
    """The index with each matched video's majority labels added to its ``attributes``.

    Raises :class:`DemographicsError` when no row matches a video, or when more than
    ``max_unmatched`` of the rows match none (module doc)."""
    if not 0.0 <= max_unmatched <= 1.0:
        raise DemographicsError(f"max_unmatched must be in [0, 1], got {max_unmatched}")
    matcher = _Matcher(index.videos)
    per_video: dict[tuple[str, str], list[FrameLabels]] = defaultdict(list)
    unmatched: dict[str, list[str]] = defaultdict(list)
    for frame in frames:
        ref = parse_frame_path(frame.path)
        video = matcher.find(frame, ref)
        if video is None:
            unmatched[ref.layout].append(frame.path)
        else:
            per_video[video.key].append(frame)
    n_unmatched = sum(len(v) for v in unmatched.values())
    by_layout = dict(sorted(((k, len(v)) for k, v in unmatched.items()), key=lambda kv: -kv[1]))
    report = ImportReport(
        videos=len(index.videos),
        matched=len(per_video),
        rows=len(frames),
        rows_matched=len(frames) - n_unmatched,
        unmatched_by_layout=by_layout,
        unmatched_examples=[p for paths in unmatched.values() for p in paths[:2]][:5],
        index_layout=index_layout(index),
    )
    if not frames:
        raise DemographicsError(f"{index.dataset}: the demographics CSV has no rows")
    if not per_video or n_unmatched > max_unmatched * len(frames):
        raise DemographicsError(_too_many_unmatched(index.dataset, report, unmatched))
    if n_unmatched:
        log.warning(
            "%s: %d of %d demographic rows match no video (%s; e.g. %s)",
            index.dataset,
            n_unmatched,
            len(frames),
            ", ".join(f"{k}: {n}" for k, n in by_layout.items()),
            report.unmatched_examples[0],
        )
    videos = []
    for v in index.videos:
        labelled = per_video.get(v.key)
        if labelled:
            attrs = dict(v.attributes)
            for a in attributes:
                attrs.update(_vote(labelled, a))
            v = replace(v, attributes=attrs)
        videos.append(v)
    log.info(
        "%s: demographic labels for %d of %d videos", index.dataset, report.matched, report.videos
    )
    return replace(index, videos=videos), report


def _too_many_unmatched(dataset: str, report: ImportReport, unmatched: dict[str, list[str]]) -> str:
    n = report.rows - report.rows_matched
    looks = ", ".join(
        f"{layout} ({count} rows, e.g. {unmatched[layout][0]})"
        for layout, count in report.unmatched_by_layout.items()
    )
    main = next(iter(report.unmatched_by_layout))
    if main not in (GENERIC, report.index_layout):
        advice = (
            "the CSV is for another dataset than the index (if it covers several datasets, "
            "pass --max-unmatched 1 to import the rows of this one)"
        )
    else:
        advice = (
            "check the CSV is for this dataset; if the index holds part of it only, pass "
            "--max-unmatched 1 to import the rows that match"
        )
    return (
        f"{dataset}: {n} of {report.rows} demographic rows ({n / report.rows:.0%}) match no "
        f"video of the index; their paths look like {looks}, while the index's videos look like "
        f"{report.index_layout}: {advice}"
    )
