"""The predictions file: one CSV row per frame or clip, the input of every metric, table, plot.

Header: ``dataset,video_id,frame,label,score,method,unit`` then one column per attribute
(sorted). ``label`` is 0 real / bona fide, 1 fake / attack; ``score`` is the probability of
class 1. ``unit`` says what a row scored: ``frame`` (an image detector's frame) or ``clip`` (a
video detector's clip of consecutive frames, whose first frame is ``frame``); video-level
metrics average a video's rows either way. Files without the ``unit`` column (written before
it existed, or by other tools) are read as frames. An attribute a video does not have is
written as an empty cell. A ``score`` outside [0, 1] is refused when read (logits are not
probabilities); ``read_predictions(path, scores="logits")`` applies the sigmoid for files of
logits.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import numpy as np
from scipy.special import expit

from fairforensics.preprocessing.files import atomic_write_text

BASE_COLUMNS = ("dataset", "video_id", "frame", "label", "score", "method")
UNIT_COLUMN = "unit"  # after BASE_COLUMNS; optional when reading (missing: every row a frame)
UNITS = ("frame", "clip")
SCORE_KINDS = ("prob", "logits")


class PredictionsError(ValueError):
    """A predictions file is missing, malformed, or inconsistent."""


@dataclass
class Predictions:
    """Column arrays of a predictions file (all of equal length)."""

    dataset: np.ndarray
    video_id: np.ndarray
    frame: np.ndarray
    label: np.ndarray
    score: np.ndarray
    method: np.ndarray
    attributes: dict[str, np.ndarray] = field(default_factory=dict)
    unit: np.ndarray | None = None  # "frame" or "clip" per row; None: every row a frame

    def __post_init__(self) -> None:
        self.dataset = np.asarray(self.dataset, dtype=object)
        self.video_id = np.asarray(self.video_id, dtype=object)
        self.frame = np.asarray(self.frame, dtype=np.int64)
        self.label = np.asarray(self.label, dtype=np.int64)
        self.score = np.asarray(self.score, dtype=np.float64)
        self.method = np.asarray(self.method, dtype=object)
        self.attributes = {k: np.asarray(v, dtype=object) for k, v in self.attributes.items()}
        n = len(self.label)
        if self.unit is None:
            self.unit = np.full(n, "frame", dtype=object)
        self.unit = np.asarray(self.unit, dtype=object)
        if UNIT_COLUMN in self.attributes:
            raise PredictionsError(f"'{UNIT_COLUMN}' is a column of its own, not an attribute")
        if n and not np.isin(self.unit, UNITS).all():
            raise PredictionsError(f"'{UNIT_COLUMN}' must be one of {UNITS}")
        columns = {name: getattr(self, name) for name in (*BASE_COLUMNS, UNIT_COLUMN)}
        columns |= self.attributes
        bad = [name for name, col in columns.items() if len(col) != n]
        if bad:
            raise PredictionsError(f"columns {bad} do not have {n} rows like 'label'")
        if n and not np.isin(self.label, (0, 1)).all():
            raise PredictionsError("'label' must be 0 (real/bona fide) or 1 (fake/attack)")
        if n and not np.isfinite(self.score).all():
            raise PredictionsError("'score' contains NaN or infinite values")

    def __len__(self) -> int:
        return len(self.label)

    @property
    def row_unit(self) -> str:
        """What the rows score: ``frame``, ``clip`` or ``frame+clip`` (a mixed file)."""
        return "+".join(u for u in UNITS if (self.unit == u).any()) or "frame"

    @property
    def video_key(self) -> np.ndarray:
        """Per-row video key ``dataset/method/video_id`` (FF++ fake ids repeat across methods)."""
        return np.array(
            [
                f"{d}/{m}/{v}"
                for d, m, v in zip(self.dataset, self.method, self.video_id, strict=True)
            ],
            dtype=object,
        )

    def subset(self, rows: np.ndarray) -> Predictions:
        """The rows selected by a boolean mask or index array."""
        return Predictions(
            dataset=self.dataset[rows],
            video_id=self.video_id[rows],
            frame=self.frame[rows],
            label=self.label[rows],
            score=self.score[rows],
            method=self.method[rows],
            attributes={k: v[rows] for k, v in self.attributes.items()},
            unit=self.unit[rows],
        )

    @classmethod
    def concat(cls, parts: Sequence[Predictions]) -> Predictions:
        """Rows of several predictions one after the other; missing attributes become ''."""
        names = sorted({k for p in parts for k in p.attributes})
        return cls(
            **{c: np.concatenate([getattr(p, c) for p in parts]) for c in BASE_COLUMNS},
            attributes={
                k: np.concatenate(
                    [p.attributes.get(k, np.full(len(p), "", dtype=object)) for p in parts]
                )
                for k in names
            },
            unit=np.concatenate([p.unit for p in parts]),
        )


def write_predictions(path: str | Path, predictions: Predictions) -> None:
    """Write a predictions CSV atomically (attribute columns sorted by name)."""
    names = sorted(predictions.attributes)
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow([*BASE_COLUMNS, UNIT_COLUMN, *names])
    for i in range(len(predictions)):
        writer.writerow(
            [
                predictions.dataset[i],
                predictions.video_id[i],
                int(predictions.frame[i]),
                int(predictions.label[i]),
                repr(float(predictions.score[i])),
                predictions.method[i],
                predictions.unit[i],
                *(predictions.attributes[k][i] for k in names),
            ]
        )
    atomic_write_text(path, buffer.getvalue())


def read_predictions(path: str | Path, scores: Literal["prob", "logits"] = "prob") -> Predictions:
    """Read a predictions CSV written by :func:`write_predictions` (or by any tool that follows it).

    ``scores="prob"``: the ``score`` column must be probabilities in [0, 1]; ``"logits"``: it
    holds logits, turned into probabilities with the sigmoid.
    """
    if scores not in SCORE_KINDS:
        raise PredictionsError(f"scores={scores!r}: expected one of {SCORE_KINDS}")
    path = Path(path)
    if not path.is_file():
        raise PredictionsError(f"{path}: predictions file not found")
    with path.open(newline="", encoding="utf-8") as fh:
        reader = csv.reader(fh)
        header = next(reader, None)
        if header is None:
            raise PredictionsError(
                f"{path}: empty file, expected a header {','.join(BASE_COLUMNS)}"
            )
        if tuple(header[: len(BASE_COLUMNS)]) != BASE_COLUMNS:
            raise PredictionsError(
                f"{path}: header must start with {','.join(BASE_COLUMNS)}, got {','.join(header)}"
            )
        rows = list(reader)
    bad = [n + 2 for n, row in enumerate(rows) if len(row) != len(header)]
    if bad:
        raise PredictionsError(
            f"{path}: line {bad[0]} has a different number of cells than the header"
        )
    columns: Mapping[str, list[str]] = {name: [r[i] for r in rows] for i, name in enumerate(header)}
    first_attribute = len(BASE_COLUMNS)
    unit = None
    if header[first_attribute : first_attribute + 1] == [UNIT_COLUMN]:
        unit, first_attribute = columns[UNIT_COLUMN], first_attribute + 1
        bad_unit = sorted(set(unit) - set(UNITS))
        if bad_unit:
            raise PredictionsError(
                f"{path}: column '{UNIT_COLUMN}' must hold {' or '.join(UNITS)}, got "
                f"{bad_unit[0]!r} (an attribute named '{UNIT_COLUMN}' must be renamed)"
            )
    try:
        frame = np.array(columns["frame"], dtype=np.int64)
        label = np.array(columns["label"], dtype=np.int64)
        score = np.array(columns["score"], dtype=np.float64)
    except ValueError as exc:
        raise PredictionsError(
            f"{path}: a frame, label or score cell is not a number: {exc}"
        ) from None
    finite = score[np.isfinite(score)]
    if scores == "logits":
        score = expit(score)
    elif finite.size and (finite.min() < 0.0 or finite.max() > 1.0):
        raise PredictionsError(
            f"{path}: column 'score' must be a probability in [0, 1], found values in "
            f"[{finite.min():g}, {finite.max():g}]; these look like logits: apply a sigmoid "
            "first, or read them with --scores logits (scores='logits')"
        )
    try:
        return Predictions(
            dataset=columns["dataset"],
            video_id=columns["video_id"],
            frame=frame,
            label=label,
            score=score,
            method=columns["method"],
            attributes={k: columns[k] for k in header[first_attribute:]},
            unit=unit,
        )
    except PredictionsError as exc:
        raise PredictionsError(f"{path}: {exc}") from None
