"""The predictions file: one CSV row per frame or clip, the input of every metric, table, plot.

Header: ``dataset,video_id,frame,label,score,method,unit`` then one column per attribute
(sorted). ``label`` is 0 real / bona fide, 1 fake / attack; ``score`` is the probability of
class 1. ``unit`` says what a row scored: ``frame`` (an image detector's frame) or ``clip`` (a
video detector's clip of consecutive frames, whose first frame is ``frame``); video-level
metrics average a video's rows either way. Files without the ``unit`` column (written before
it existed, or by other tools) are read as frames. An attribute a video does not have is
written as an empty cell. A ``score`` outside [0, 1] is refused when read (logits are not
probabilities); ``read_predictions(path, scores="logits")`` applies the sigmoid for files of
logits. A file whose scores a calibration mapped (``test --calibration``) has a column
``score_uncalibrated`` after ``unit``: the detector's original score (``score`` is then the
calibrated probability); files without it are written byte for byte as before.

In memory the numbers are numpy arrays and the string columns integer codes into their sorted
values (:class:`evaluation.categorical.Categorical`); ``pred.video_id`` and the others read as
object arrays of strings. A file named ``*.parquet`` holds the same columns in Parquet (its
string columns dictionary-encoded); CSV stays the interchange format. Both are read and written
with pyarrow's C readers, without a Python step per row.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterator, Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pa_csv
import pyarrow.parquet as pq
from scipy.special import expit

from fairforensics.configs.filemode import atomic_path
from fairforensics.evaluation.categorical import Categorical
from fairforensics.evaluation.metrics import factorize

BASE_COLUMNS = ("dataset", "video_id", "frame", "label", "score", "method")
UNIT_COLUMN = "unit"  # after BASE_COLUMNS; optional when reading (missing: every row a frame)
UNITS = ("frame", "clip")
#: after UNIT_COLUMN, only in a file whose scores were calibrated: the detector's original score
UNCALIBRATED_COLUMN = "score_uncalibrated"
SCORE_KINDS = ("prob", "logits")
FORMATS = ("csv", "parquet")  # a predictions file's format, chosen by its suffix
_NUMBERS = {"frame": np.int64, "label": np.int64, "score": np.float64}
_STRINGS = ("dataset", "video_id", "method", UNIT_COLUMN)


class PredictionsError(ValueError):
    """A predictions file is missing, malformed, or inconsistent."""


class _Attributes(MutableMapping[str, np.ndarray]):
    """The attribute columns: each read as an object array, held as a :class:`Categorical`."""

    def __init__(self, columns: Mapping[str, Any] | None = None) -> None:
        self.columns: dict[str, Categorical] = {}
        for k, v in (columns or {}).items():
            self[k] = v

    def __getitem__(self, key: str) -> np.ndarray:
        return self.columns[key].values

    def __setitem__(self, key: str, value: Any) -> None:
        self.columns[key] = Categorical.from_values(value)

    def __delitem__(self, key: str) -> None:
        del self.columns[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.columns)

    def __len__(self) -> int:
        return len(self.columns)


def _string_column(name: str) -> property:
    """A string column: an object array to read, any sequence of strings to assign."""

    def get(self: Predictions) -> np.ndarray:
        return self._columns[name].values

    def put(self: Predictions, value: Any) -> None:
        self._columns[name] = Categorical.from_values(value)
        self._video = None

    return property(get, put, doc=f"The ``{name}`` column (a read-only object array).")


def _attribute_columns() -> property:
    """The attribute columns: a mapping of object arrays to read, any mapping to assign."""

    def get(self: Predictions) -> _Attributes:
        return self._attributes

    def put(self: Predictions, value: Mapping[str, Any] | None) -> None:
        self._attributes = _Attributes(value.columns if isinstance(value, _Attributes) else value)

    return property(get, put, doc="The attribute columns by name (object arrays).")


@dataclass(init=False)
class Predictions:
    """Column arrays of a predictions file (all of equal length).

    ``frame``, ``label`` and ``score`` are numpy arrays; ``dataset``, ``video_id``, ``method``,
    ``unit`` and each ``attributes[k]`` read as read-only object arrays of strings (assign a
    whole column to change one) and are held as integer codes (:meth:`codes`)."""

    dataset: np.ndarray = _string_column("dataset")  # type: ignore[assignment]
    video_id: np.ndarray = _string_column("video_id")  # type: ignore[assignment]
    frame: np.ndarray = field(default=None)  # type: ignore[assignment]
    label: np.ndarray = field(default=None)  # type: ignore[assignment]
    score: np.ndarray = field(default=None)  # type: ignore[assignment]
    method: np.ndarray = _string_column("method")  # type: ignore[assignment]
    attributes: MutableMapping[str, np.ndarray] = _attribute_columns()  # type: ignore[assignment]
    unit: np.ndarray = _string_column(UNIT_COLUMN)  # type: ignore[assignment]
    score_uncalibrated: np.ndarray | None = field(default=None)

    def __init__(
        self,
        dataset: Any,
        video_id: Any,
        frame: Any,
        label: Any,
        score: Any,
        method: Any,
        attributes: Mapping[str, Any] | None = None,
        unit: Any = None,
        score_uncalibrated: Any = None,
    ) -> None:
        self._columns: dict[str, Categorical] = {}
        self._video: tuple[np.ndarray, np.ndarray] | None = None
        self.dataset = dataset
        self.video_id = video_id
        self.frame = np.asarray(frame, dtype=np.int64)
        self.label = np.asarray(label, dtype=np.int64)
        self.score = np.asarray(score, dtype=np.float64)
        self.method = method
        self.attributes = attributes or {}
        n = len(self.label)
        self.unit = Categorical(np.zeros(n, np.int32), ["frame"]) if unit is None else unit
        self.score_uncalibrated = (
            None if score_uncalibrated is None else np.asarray(score_uncalibrated, np.float64)
        )
        if UNCALIBRATED_COLUMN in self.attributes:
            raise PredictionsError(
                f"'{UNCALIBRATED_COLUMN}' is a column of its own, not an attribute"
            )
        if UNIT_COLUMN in self.attributes:
            raise PredictionsError(f"'{UNIT_COLUMN}' is a column of its own, not an attribute")
        if n and not np.isin(self._columns[UNIT_COLUMN].categories, UNITS).all():
            raise PredictionsError(f"'{UNIT_COLUMN}' must be one of {UNITS}")
        lengths = {name: len(self._columns[name]) for name in _STRINGS}
        lengths |= {name: len(getattr(self, name)) for name in _NUMBERS}
        lengths |= {k: len(v) for k, v in self._attributes.columns.items()}
        bad = [name for name in (*BASE_COLUMNS, UNIT_COLUMN, *self.attributes)
               if lengths[name] != n]  # fmt: skip
        if self.score_uncalibrated is not None and len(self.score_uncalibrated) != n:
            bad.append(UNCALIBRATED_COLUMN)
        if bad:
            raise PredictionsError(f"columns {bad} do not have {n} rows like 'label'")
        if n and not np.isin(self.label, (0, 1)).all():
            raise PredictionsError("'label' must be 0 (real/bona fide) or 1 (fake/attack)")
        if n and not np.isfinite(self.score).all():
            raise PredictionsError("'score' contains NaN or infinite values")
        if n and self.score_uncalibrated is not None:
            if not np.isfinite(self.score_uncalibrated).all():
                raise PredictionsError(f"'{UNCALIBRATED_COLUMN}' contains NaN or infinite values")

    def __len__(self) -> int:
        return len(self.label)

    def categorical(self, column: str) -> Categorical:
        """The string column ``column`` (``dataset``, ``video_id``, ``method``, ``unit`` or an
        attribute) as codes and sorted values."""
        if column in self._columns:
            return self._columns[column]
        if column in self._attributes.columns:
            return self._attributes.columns[column]
        raise KeyError(f"{column!r}: not a string column of these predictions")

    def codes(self, column: str) -> tuple[np.ndarray, np.ndarray]:
        """Integer codes (int64) of a string column and its sorted distinct values
        (``values[codes]`` is the column, as ``evaluation.metrics.factorize`` gives)."""
        cat = self.categorical(column)
        return cat.codes.astype(np.int64), cat.categories

    def video_codes(self) -> tuple[np.ndarray, np.ndarray]:
        """Per-row integer codes of :attr:`video_key` and the sorted keys: the same as
        ``evaluation.metrics.factorize(pred.video_key)``, from the codes (one string per video)."""
        if self._video is None:
            parts = [self._columns[c] for c in ("dataset", "method", "video_id")]
            combined = np.zeros(len(self), dtype=np.int64)
            for part in parts:
                combined = combined * len(part.categories) + part.codes
            bound = int(np.prod([max(len(p.categories), 1) for p in parts], dtype=float))
            if bound <= 4 * len(self) + 1024:  # dense: one pass, no sort
                present = np.zeros(bound, dtype=bool)
                present[combined] = True
                uniq = np.flatnonzero(present)
                rank = np.cumsum(present) - 1
                inverse = rank[combined]
            else:
                uniq, inverse = np.unique(combined, return_inverse=True)
            rest, v = np.divmod(uniq, len(parts[2].categories) or 1)
            d, m = np.divmod(rest, len(parts[1].categories) or 1)
            names = [
                f"{a}/{b}/{c}"
                for a, b, c in zip(
                    parts[0].categories[d], parts[1].categories[m], parts[2].categories[v],
                    strict=True,
                )
            ]  # fmt: skip
            key_codes, keys = factorize(names)
            self._video = (key_codes[inverse].astype(np.int64), keys)
        return self._video

    @property
    def row_unit(self) -> str:
        """What the rows score: ``frame``, ``clip`` or ``frame+clip`` (a mixed file)."""
        present = set(self._columns[UNIT_COLUMN].categories)
        return "+".join(u for u in UNITS if u in present) or "frame"

    @property
    def video_key(self) -> np.ndarray:
        """Per-row video key ``dataset/method/video_id`` (FF++ fake ids repeat across methods)."""
        codes, keys = self.video_codes()
        return keys[codes]

    def subset(self, rows: np.ndarray) -> Predictions:
        """The rows selected by a boolean mask or index array."""
        return Predictions(
            dataset=self._columns["dataset"].take(rows),
            video_id=self._columns["video_id"].take(rows),
            frame=self.frame[rows],
            label=self.label[rows],
            score=self.score[rows],
            method=self._columns["method"].take(rows),
            attributes={k: v.take(rows) for k, v in self._attributes.columns.items()},
            unit=self._columns[UNIT_COLUMN].take(rows),
            score_uncalibrated=None
            if self.score_uncalibrated is None
            else self.score_uncalibrated[rows],
        )

    @classmethod
    def concat(cls, parts: Sequence[Predictions]) -> Predictions:
        """Rows of several predictions one after the other; missing attributes become ''."""
        names = sorted({k for p in parts for k in p.attributes})

        def column(p: Predictions, name: str) -> Categorical:
            if name in p.attributes:
                return p.categorical(name)
            return Categorical(np.zeros(len(p), np.int32), [""])

        return cls(
            **{c: Categorical.concat([p.categorical(c) for p in parts]) for c in _STRINGS[:3]},
            **{c: np.concatenate([getattr(p, c) for p in parts]) for c in _NUMBERS},
            attributes={k: Categorical.concat([column(p, k) for p in parts]) for k in names},
            unit=Categorical.concat([p.categorical(UNIT_COLUMN) for p in parts]),
            score_uncalibrated=np.concatenate([p.original_score for p in parts])
            if any(p.score_uncalibrated is not None for p in parts)
            else None,
        )

    @property
    def original_score(self) -> np.ndarray:
        """The detector's own score: ``score_uncalibrated`` when a calibration mapped
        ``score``, else ``score``."""
        return self.score if self.score_uncalibrated is None else self.score_uncalibrated


def predictions_format(path: str | Path) -> str:
    """``parquet`` for a ``*.parquet`` file, else ``csv``."""
    return "parquet" if Path(path).suffix.lower() == ".parquet" else "csv"


def slug(name: str) -> str:
    """A test set's name as a file stem (``<folder>/predictions/<slug>.csv``)."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name)


def predictions_file(folder: str | Path, stem: str) -> Path:
    """``folder/<stem>.csv``, or ``folder/<stem>.parquet`` when only that one exists."""
    csv_path = Path(folder) / f"{stem}.csv"
    parquet = csv_path.with_suffix(".parquet")
    return parquet if parquet.is_file() and not csv_path.is_file() else csv_path


def _columns(predictions: Predictions) -> tuple[list[str], list[Categorical | np.ndarray]]:
    """The file's column names (attributes sorted) and their columns."""
    names = sorted(predictions.attributes)
    extra = [UNCALIBRATED_COLUMN] if predictions.score_uncalibrated is not None else []
    header = [*BASE_COLUMNS, UNIT_COLUMN, *extra, *names]
    cols = [
        getattr(predictions, c) if c in _NUMBERS or c in extra else predictions.categorical(c)
        for c in header
    ]
    return header, cols


def _csv_cells(values: Sequence[Any]) -> list[str]:
    """Each value as :mod:`csv` writes it in a row of several cells (quoted when needed)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    out = []
    for value in values:
        buffer.seek(0)
        buffer.truncate()
        writer.writerow([value, ""])
        out.append(buffer.getvalue()[:-2])
    return out


_SCIENTIFIC = (  # Arrow writes 1e-6 <= |x| < 1e-4 in fixed notation, Python in scientific
    (r"^(-?)0\.00000([1-9])(\d+)$", r"\1\2.\3e-06"),
    (r"^(-?)0\.00000([1-9])$", r"\1\2e-06"),
    (r"^(-?)0\.0000([1-9])(\d+)$", r"\1\2.\3e-05"),
    (r"^(-?)0\.0000([1-9])$", r"\1\2e-05"),
    (r"e([+-])(\d)$", r"e\10\2"),  # and exponents of two digits (RE2: \1 then 0)
)


def _large(text: str) -> pa.Scalar:
    """``text`` as an Arrow large string (to join with the columns' cells)."""
    return pa.scalar(text, type=pa.large_string())


def _float_cells(x: np.ndarray) -> pa.Array:
    """``repr(float(v))`` of every value, without a Python step per row: Arrow's shortest
    round-trip digits, rewritten into Python's notation."""
    out = pc.cast(pa.array(x, type=pa.float64()), pa.large_string())
    mag = np.abs(x)
    finite = np.isfinite(x)
    small = finite & (mag < 1e-4) & (mag > 0)
    whole = finite & (mag < 1e9) & (x == np.trunc(x))
    python = ~finite | (mag >= 1e9)  # Arrow and Python disagree on where fixed notation ends
    for mask, fix in ((small, "regex"), (whole, ".0"), (python, "repr")):
        if not mask.any():
            continue
        rows = np.flatnonzero(mask)
        if fix == "repr":
            new = pa.array([repr(float(v)) for v in x[rows]], type=pa.large_string())
        else:
            new = pc.take(out, pa.array(rows))
            if fix == ".0":
                new = pc.binary_join_element_wise(new, _large(".0"), _large(""))
            else:
                for pattern, replacement in _SCIENTIFIC:
                    new = pc.replace_substring_regex(new, pattern, replacement)
        out = pc.replace_with_mask(out, pa.array(mask), new)
    return out


def _csv_bytes(predictions: Predictions) -> tuple[bytes, pa.Array | None]:
    """The header line and the rows (a string array of lines), as :mod:`csv` would write them."""
    header, cols = _columns(predictions)
    head = "".join(_csv_cells([c])[0] + "," for c in header)[:-1] + "\n"
    if not len(predictions):
        return head.encode("utf-8"), None
    cells = []
    for name, col in zip(header, cols, strict=True):
        if isinstance(col, Categorical):
            words = pa.array(_csv_cells(col.categories), type=pa.large_string())
            cells.append(words.take(pa.array(col.codes)))
        elif name in ("score", UNCALIBRATED_COLUMN):
            cells.append(_float_cells(col))
        else:
            cells.append(pc.cast(pa.array(col, type=pa.int64()), pa.large_string()))
    lines = pc.binary_join_element_wise(*cells, _large(","))
    return head.encode("utf-8"), pc.binary_join_element_wise(lines, _large(""), _large("\n"))


def write_predictions(path: str | Path, predictions: Predictions) -> None:
    """Write a predictions file atomically (attribute columns sorted by name): CSV, or Parquet
    when ``path`` ends in ``.parquet``."""
    if predictions_format(path) == "parquet":
        header, cols = _columns(predictions)
        arrays = [c.to_arrow() if isinstance(c, Categorical) else pa.array(c) for c in cols]
        with atomic_path(path) as tmp:
            pq.write_table(pa.table(arrays, names=header), tmp)
        return
    head, lines = _csv_bytes(predictions)
    with atomic_path(path) as tmp, tmp.open("wb") as fh:
        fh.write(head)
        if lines is not None:
            offsets = np.frombuffer(lines.buffers()[1], dtype=np.int64)
            start, end = offsets[lines.offset], offsets[lines.offset + len(lines)]
            fh.write(memoryview(lines.buffers()[2])[start:end])


def read_predictions(path: str | Path, scores: Literal["prob", "logits"] = "prob") -> Predictions:
    """Read a predictions file written by :func:`write_predictions` (or by any tool that follows
    it): CSV, or Parquet when ``path`` ends in ``.parquet``.

    ``scores="prob"``: the ``score`` column must be probabilities in [0, 1]; ``"logits"``: it
    holds logits, turned into probabilities with the sigmoid.
    """
    if scores not in SCORE_KINDS:
        raise PredictionsError(f"scores={scores!r}: expected one of {SCORE_KINDS}")
    path = Path(path)
    if not path.is_file():
        raise PredictionsError(f"{path}: predictions file not found")
    if predictions_format(path) == "parquet":
        header, columns = _read_parquet(path)
    else:
        header, columns = _read_csv(path)
    first_attribute = len(BASE_COLUMNS)
    unit = None
    if header[first_attribute : first_attribute + 1] == [UNIT_COLUMN]:
        unit, first_attribute = columns[first_attribute], first_attribute + 1
        bad_unit = sorted(set(unit.categories) - set(UNITS))
        if bad_unit:
            raise PredictionsError(
                f"{path}: column '{UNIT_COLUMN}' must hold {' or '.join(UNITS)}, got "
                f"{bad_unit[0]!r} (an attribute named '{UNIT_COLUMN}' must be renamed)"
            )
    uncalibrated = None
    if _uncalibrated_index(header) is not None:
        uncalibrated = _probabilities(path, columns[first_attribute], scores, UNCALIBRATED_COLUMN)
        first_attribute += 1
    score = _probabilities(path, columns[BASE_COLUMNS.index("score")], scores, "score")
    by_name = dict(zip(header, columns, strict=True))  # a repeated name: its last column
    try:
        return Predictions(
            **{c: columns[i] for i, c in enumerate(BASE_COLUMNS) if c != "score"},
            score=score,
            attributes={k: by_name[k] for k in header[first_attribute:]},
            unit=unit,
            score_uncalibrated=uncalibrated,
        )
    except PredictionsError as exc:
        raise PredictionsError(f"{path}: {exc}") from None


def _probabilities(path: Path, score: np.ndarray, scores: str, name: str) -> np.ndarray:
    """A score column as probabilities: logits through the sigmoid, or checked in [0, 1]."""
    if scores == "logits":
        return expit(score)
    finite = score[np.isfinite(score)]
    if finite.size and (finite.min() < 0.0 or finite.max() > 1.0):
        raise PredictionsError(
            f"{path}: column '{name}' must be a probability in [0, 1], found values in "
            f"[{finite.min():g}, {finite.max():g}]; these look like logits: apply a sigmoid "
            "first, or read them with --scores logits (scores='logits')"
        )
    return score


def _uncalibrated_index(header: Sequence[str]) -> int | None:
    """Where ``score_uncalibrated`` is in ``header`` (right after the base columns and
    ``unit``), or None."""
    at = len(BASE_COLUMNS) + (header[len(BASE_COLUMNS) : len(BASE_COLUMNS) + 1] == [UNIT_COLUMN])
    return at if header[at : at + 1] == [UNCALIBRATED_COLUMN] else None


def _number_columns(header: Sequence[str]) -> dict[int, Any]:
    """The numeric columns of ``header``: their positions and dtypes."""
    numbers = {i: _NUMBERS[c] for i, c in enumerate(header[: len(BASE_COLUMNS)]) if c in _NUMBERS}
    at = _uncalibrated_index(header)
    if at is not None:
        numbers[at] = np.float64
    return numbers


def _check_header(path: Path, header: list[str] | None) -> list[str]:
    """The header, or the error that says what a predictions file must start with."""
    if header is None:
        raise PredictionsError(f"{path}: empty file, expected a header {','.join(BASE_COLUMNS)}")
    if tuple(header[: len(BASE_COLUMNS)]) != BASE_COLUMNS:
        raise PredictionsError(
            f"{path}: header must start with {','.join(BASE_COLUMNS)}, got {','.join(header)}"
        )
    return header


_DICTIONARY = pa.dictionary(pa.int32(), pa.string())


def _read_csv(path: Path) -> tuple[list[str], list[Categorical | np.ndarray]]:
    """The header and the columns of a CSV file (numbers as arrays, strings as codes)."""
    with path.open(newline="", encoding="utf-8") as fh:
        header = _check_header(path, next(csv.reader(fh), None))
    try:
        table = _arrow_csv(path, header, typed=True)
    except pa.ArrowInvalid:
        _check_row_lengths(path, len(header))
        table = None  # a number Arrow does not read: read as the csv module and numpy would
    if table is None:
        table = _arrow_csv(path, header, typed=False)
        try:
            numbers = {
                i: np.array(table.column(i).to_pylist(), dtype=dtype)
                for i, dtype in _number_columns(header).items()
            }
        except ValueError as exc:
            raise PredictionsError(
                f"{path}: a frame, label or score cell is not a number: {exc}"
            ) from None
    else:
        numbers = {}
    return header, [
        numbers[i] if i in numbers else _from_arrow(table.column(i)) for i in range(len(header))
    ]


def _arrow_csv(path: Path, header: list[str], *, typed: bool) -> pa.Table:
    """The rows below the header, read by Arrow: the base numbers typed when ``typed``, every
    other column (all columns otherwise) dictionary-encoded strings, cells as written."""
    names = [f"c{i}" for i in range(len(header))]
    types = {n: _DICTIONARY for n in names}
    if typed:
        types |= {f"c{i}": pa.from_numpy_dtype(t) for i, t in _number_columns(header).items()}
    return pa_csv.read_csv(
        path,
        read_options=pa_csv.ReadOptions(column_names=names, skip_rows=1),
        parse_options=pa_csv.ParseOptions(newlines_in_values=True, ignore_empty_lines=False),
        convert_options=pa_csv.ConvertOptions(
            column_types=types, null_values=[], strings_can_be_null=False
        ),
    )


def _check_row_lengths(path: Path, width: int) -> None:
    """Raise on the first row whose number of cells differs from the header's."""
    with path.open(newline="", encoding="utf-8") as fh:
        for n, row in enumerate(csv.reader(fh)):
            if len(row) != width:
                raise PredictionsError(
                    f"{path}: line {n + 1} has a different number of cells than the header"
                )


def _from_arrow(column: pa.ChunkedArray) -> Categorical | np.ndarray:
    """A numeric Arrow column as a numpy array, a string one as a :class:`Categorical`."""
    if not pa.types.is_dictionary(column.type):
        return column.to_numpy()
    column = column.unify_dictionaries() if column.num_chunks > 1 else column
    if column.num_chunks == 0:
        return Categorical(np.zeros(0, np.int32), [])
    codes = np.concatenate([c.indices.to_numpy(zero_copy_only=False) for c in column.chunks])
    dictionary = column.chunk(0).dictionary.to_numpy(zero_copy_only=False)
    return Categorical(codes, dictionary)


def _read_parquet(path: Path) -> tuple[list[str], list[Categorical | np.ndarray]]:
    """The header and the columns of a Parquet file written by :func:`write_predictions`."""
    try:
        table = pq.read_table(path)
    except (pa.ArrowException, OSError) as exc:
        raise PredictionsError(f"{path}: not a readable Parquet file: {exc}") from None
    header = _check_header(path, table.column_names or None)
    columns: list[Categorical | np.ndarray] = []
    numbers = _number_columns(header)
    for i, name in enumerate(header):
        col = table.column(i)
        if col.null_count:
            raise PredictionsError(f"{path}: column {name!r} has missing cells")
        want = numbers.get(i)
        if want is None and col.type == _DICTIONARY:
            columns.append(_from_arrow(col))
            continue
        try:
            col = col.cast(pa.from_numpy_dtype(want) if want else pa.string())
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
            raise PredictionsError(
                f"{path}: a frame, label or score cell is not a number: {exc}"
            ) from None
        columns.append(_from_arrow(col if want else col.dictionary_encode()))
    return header, columns
