"""Public per-frame demographic labels onto a dataset index.

Lin et al. ("Preserving Fairness Generalization in Deepfake Detection", CVPR 2024) and the
AI-Face benchmark (CVPR 2025) publish demographic annotations of FF++, Celeb-DF, DFD and DFDC as
CSV files, one row per frame, with the columns::

    Image Path, Ground Truth Gender (1 male, 0 female), Ground Truth Age (0 young,
    1 middle-aged, 2 senior, 3 others), Ground Truth Race (0 Asian, 1 White, 2 Black,
    3 others), Intersection (0-7), Target (0 real, 1 fake)

and, in some releases, ``Uncertainty Score Gender / Age / Race``. A header matches when it starts
with the column's name (case-insensitive), so headers carrying the code legend also work.

Frames are mapped to videos from the file name of ``Image Path``:

- FF++: ``<n>_<method>_<target>_<source>_<frame>.png`` is the fake ``<target>_<source>`` of
  ``<method>`` (``0_Deepfakes_300_304_151.png``); ``<n>_youtube_<video>_<frame>.png`` is the real
  video ``<video>`` (``0_youtube_546_131.png``). FF++ methods also match DeepfakeBench's label
  names (``FF-DF``, ``FF-F2F``, ``FF-FS``, ``FF-NT``, ``FF-FH``).
- any other path (Celeb-DF, DFD, DFDC): the video is the first of the path's folder names, or its
  file stem without a trailing frame number (``id0_0000_12.png`` -> ``id0_0000``), that is a
  video id of the index with the row's ``Target`` label; an id shared by several such videos
  (several methods) also needs a folder named after the method.

Numeric id parts compare as numbers (``0_3`` matches ``000_003``), and a row only matches a
video of its ``Target`` label. Per video, each attribute gets its majority label (ties go to
the lower code) with ``<attribute>_agreement`` = the share of the video's labelled frames that
carry it, and ``<attribute>_uncertainty`` = the mean uncertainty score when the CSV has one. The
``Intersection`` column is not stored: it is gender x race, which fairness forms from the two.
"""

from __future__ import annotations

import csv
import logging
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath

from fairforensics.preprocessing.index import DatasetIndex, VideoEntry

log = logging.getLogger(__name__)

CODES: dict[str, dict[str, str]] = {
    "gender": {"0": "female", "1": "male"},
    "age": {"0": "young", "1": "middle-aged", "2": "senior", "3": "others"},
    "race": {"0": "Asian", "1": "White", "2": "Black", "3": "others"},
}
LABEL_COLUMNS = {a: f"ground truth {a}" for a in CODES}
UNCERTAINTY_COLUMNS = {a: f"uncertainty score {a}" for a in CODES}
PATH_COLUMN = "image path"
TARGET_COLUMN = "target"
FF_ALIASES = {
    "deepfakes": "FF-DF",
    "face2face": "FF-F2F",
    "faceswap": "FF-FS",
    "neuraltextures": "FF-NT",
    "faceshifter": "FF-FH",
}
_FF_FAKE = re.compile(r"^\d+_([A-Za-z0-9]+)_(\d+)_(\d+)_(\d+)$")
_FF_REAL = re.compile(r"^\d+_youtube_(\d+)_(\d+)$")
_FRAME_SUFFIX = re.compile(r"^(.+)[_-](?:frame)?\d+$")
_VIDEO_SUFFIXES = (".mp4", ".avi", ".mov", ".mkv")


class DemographicsError(ValueError):
    """A demographics CSV that cannot be read, or that matches no video."""


@dataclass
class FrameLabels:
    """One CSV row: the frame's path, its target label and its readable demographic labels."""

    path: str
    target: int | None
    labels: dict[str, str]
    uncertainty: dict[str, float] = field(default_factory=dict)


@dataclass
class ImportReport:
    """What an import matched: videos labelled, rows used and rows that matched no video."""

    videos: int
    matched: int
    rows: int
    rows_matched: int
    unmatched_examples: list[str]

    def to_json(self) -> dict[str, object]:
        return {
            "videos": self.videos,
            "videos_matched": self.matched,
            "rows": self.rows,
            "rows_matched": self.rows_matched,
            "rows_unmatched": self.rows - self.rows_matched,
            "unmatched_examples": self.unmatched_examples,
        }


def _column(header: Sequence[str], name: str) -> str | None:
    for h in header:
        if h.strip().lower().startswith(name):
            return h
    return None


def read_demographics_csv(
    path: str | Path, attributes: Sequence[str] = tuple(CODES)
) -> list[FrameLabels]:
    """Rows of a Lin et al. / AI-Face CSV with codes mapped to readable labels.

    A missing file or column, or a code outside the legend, is a :class:`DemographicsError`
    naming the file, line and column.
    """
    path = Path(path)
    unknown = [a for a in attributes if a not in CODES]
    if unknown:
        raise DemographicsError(f"unknown attributes {unknown}; known: {', '.join(CODES)}")
    if not path.is_file():
        raise DemographicsError(f"{path}: demographics CSV not found")
    with path.open(newline="", encoding="utf-8-sig") as fh:
        reader = csv.DictReader(fh)
        header = reader.fieldnames or []
        path_col = _column(header, PATH_COLUMN)
        label_cols = {a: _column(header, LABEL_COLUMNS[a]) for a in attributes}
        missing = [LABEL_COLUMNS[a] for a, c in label_cols.items() if c is None]
        if path_col is None or missing:
            need = ([] if path_col else ["Image Path"]) + [m.title() for m in missing]
            raise DemographicsError(f"{path}: no column(s) {need}; columns: {header}")
        target_col = _column(header, TARGET_COLUMN)
        unc_cols = {a: _column(header, UNCERTAINTY_COLUMNS[a]) for a in attributes}
        rows = []
        for line, row in enumerate(reader, start=2):
            labels = {}
            for a, col in label_cols.items():
                code = _code(row.get(col))
                if code not in CODES[a]:
                    raise DemographicsError(
                        f"{path} line {line}: {col} = {row.get(col)!r}; "
                        f"expected one of {sorted(CODES[a])}"
                    )
                labels[a] = CODES[a][code]
            target = _code(row.get(target_col)) if target_col else ""
            if target not in ("", "0", "1"):
                raise DemographicsError(
                    f"{path} line {line}: {target_col} = {target!r}; expected 0 or 1"
                )
            uncertainty = {}
            for a, col in unc_cols.items():
                if col and (row.get(col) or "").strip():
                    try:
                        uncertainty[a] = float(row[col])
                    except ValueError:
                        raise DemographicsError(
                            f"{path} line {line}: {col} = {row[col]!r} is not a number"
                        ) from None
            rows.append(
                FrameLabels(
                    str(row[path_col]).strip(), int(target) if target else None, labels, uncertainty
                )
            )
    return rows


def _code(value: str | None) -> str:
    """A code cell as its integer text (``"1.0"`` -> ``"1"``); empty when blank."""
    text = (value or "").strip()
    try:
        return str(int(float(text))) if text else ""
    except ValueError:
        return text


def normalise_id(video_id: str) -> str:
    """Numeric parts as numbers, so ``000_003`` and ``0_3`` compare equal."""
    return "_".join(str(int(p)) if p.isdigit() else p for p in re.split(r"[_]", video_id))


def _method_names(name: str) -> set[str]:
    """Lower-case method names a CSV method or folder may stand for (FF++ aliases included)."""
    low = name.lower()
    names = {low}
    if low in FF_ALIASES:
        names.add(FF_ALIASES[low].lower())
    return names


def frame_keys(image_path: str) -> tuple[set[str] | None, list[str]]:
    """(method names or None, candidate normalised video ids) that a frame path points to."""
    p = PurePosixPath(image_path.replace("\\", "/"))
    stem = p.stem
    fake = _FF_FAKE.match(stem)
    if fake and fake.group(1).lower() != "youtube":
        return _method_names(fake.group(1)), [normalise_id(f"{fake.group(2)}_{fake.group(3)}")]
    real = _FF_REAL.match(stem)
    if real:
        return None, [normalise_id(real.group(1))]
    folders = [_strip_video_suffix(d) for d in reversed(p.parent.parts) if d not in ("/", ".")]
    candidates = [normalise_id(d) for d in folders] + [normalise_id(stem)]
    trimmed = _FRAME_SUFFIX.match(stem)
    if trimmed:
        candidates.append(normalise_id(trimmed.group(1)))
    return {d.lower() for d in folders} or None, candidates


def _strip_video_suffix(name: str) -> str:
    """A folder named after a video file (``abc.mp4``) as the video's id (``abc``)."""
    low = name.lower()
    return name[: -len(low.rsplit(".", 1)[-1]) - 1] if low.endswith(_VIDEO_SUFFIXES) else name


class _VideoLookup:
    """Videos of an index by (label, normalised id)."""

    def __init__(self, videos: Iterable[VideoEntry]) -> None:
        self.by_id: dict[tuple[int, str], list[VideoEntry]] = defaultdict(list)
        for v in videos:
            self.by_id[(v.label, normalise_id(v.id))].append(v)

    def find(self, frame: FrameLabels) -> VideoEntry | None:
        methods, candidates = frame_keys(frame.path)
        labels = (frame.target,) if frame.target is not None else (0, 1)
        for vid in candidates:
            found = [v for label in labels for v in self.by_id.get((label, vid), [])]
            if len(found) > 1 and methods:
                found = [v for v in found if v.method.lower() in methods] or found
            if len(found) == 1:
                return found[0]
        return None


def _vote(frames: list[FrameLabels], attribute: str) -> dict[str, str]:
    counts = Counter(f.labels[attribute] for f in frames)
    order = list(CODES[attribute].values())
    label = max(counts, key=lambda k: (counts[k], -order.index(k)))
    out = {attribute: label, f"{attribute}_agreement": f"{counts[label] / len(frames):.3f}"}
    scores = [f.uncertainty[attribute] for f in frames if attribute in f.uncertainty]
    if scores:
        out[f"{attribute}_uncertainty"] = f"{sum(scores) / len(scores):.3f}"
    return out


def import_demographics(
    index: DatasetIndex, frames: Sequence[FrameLabels], attributes: Sequence[str] = tuple(CODES)
) -> tuple[DatasetIndex, ImportReport]:
    """The index with each matched video's majority labels added to its ``attributes``.

    Raises :class:`DemographicsError` when no row matches any video (wrong CSV for the index,
    or a naming convention the module doc does not cover).
    """
    lookup = _VideoLookup(index.videos)
    per_video: dict[tuple[str, str], list[FrameLabels]] = defaultdict(list)
    unmatched: list[str] = []
    for frame in frames:
        video = lookup.find(frame)
        if video is None:
            unmatched.append(frame.path)
        else:
            per_video[video.key].append(frame)
    report = ImportReport(
        videos=len(index.videos),
        matched=len(per_video),
        rows=len(frames),
        rows_matched=len(frames) - len(unmatched),
        unmatched_examples=unmatched[:5],
    )
    if not per_video:
        examples = ", ".join(unmatched[:3]) or "the CSV has no rows"
        raise DemographicsError(
            f"{index.dataset}: none of {len(frames)} demographic rows matches a video of the index "
            f"(e.g. {examples}); check the CSV is for this dataset"
        )
    if unmatched:
        log.warning(
            "%s: %d of %d demographic rows match no video (e.g. %s)",
            index.dataset,
            len(unmatched),
            len(frames),
            unmatched[0],
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
