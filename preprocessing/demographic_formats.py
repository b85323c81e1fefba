"""The three public formats of per-frame demographic labels, read into one row model.

The format is recognised from the header (names compared case-insensitively, spaces and ``-``
read as ``_``):

- **AI-Face** (Lin et al., CVPR 2025; AI-Face-FairnessBench's ``train.csv`` / ``test.csv``):
  ``Image Path, [Uncertainty Score Gender, Uncertainty Score Age, Uncertainty Score Race,]
  Ground Truth Gender, Ground Truth Age, Ground Truth Race, Intersection, Target``. Codes: gender
  1 male / 0 female; age 0 young / 1 middle-aged / 2 senior / 3 others; race 0 Asian / 1 White /
  2 Black / 3 others; Target 0 real / 1 fake. A column matches when its name starts with the
  expected one, so headers that carry the code legend also work.
- **Lin et al. CVPR 2024** ("Preserving Fairness Generalization in Deepfake Detection", the
  Fairness-Generalization repository's ``faketrain.csv``, ``realtrain.csv``, ``test.csv``...):
  ``img_path,label,ismale,isasian,iswhite,isblack,intersec_label[,spe_label]``, each ``is*``
  coded 1 / -1 (Celeb-DF and DFD files have no ``isasian``). Race is the one ``is*`` column
  that is 1, ``others`` when all are -1, undefined when several are 1. ``label`` is 0 real /
  1 fake; ``spe_label`` 1-5 names the FF++ method (Deepfakes, Face2Face, FaceSwap,
  NeuralTextures, FaceShifter). No age.
- **Xu et al.** ("A Comprehensive Analysis of AI Biases in DeepFake Detection With Massively
  Annotated Databases", the ``A-FF++.csv``, ``A-Celeb-DF.csv``, ``A-DFD.csv``, ``A-DFDC.csv``
  files of pterhoer/DeepFakeAnnotations): a leading unnamed index column, ``path``,
  ``path_folder``, ``label`` and one column per MAAD-Face attribute (``male``, ``young``,
  ``middle_aged``, ``senior``, ``asian``, ``white``, ``black``, ``shiny_skin``, ``bald``, ...)
  coded 1 (has it) / -1 (has not) / 0 (undefined). Gender from ``male``; age is the one of
  ``young``/``middle_aged``/``senior`` that is 1; race as for Lin et al. ``label`` is not used:
  its coding is not documented, and the path's layout gives the class.

Every row becomes a :class:`FrameLabels` whose labels use the AI-Face vocabulary (``female``,
``middle-aged``, ``Asian``...), ``None`` where the row leaves the attribute undefined.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from fairforensics.preprocessing.datasets.faceforensics import FF_METHODS

CODES: dict[str, dict[str, str]] = {
    "gender": {"0": "female", "1": "male"},
    "age": {"0": "young", "1": "middle-aged", "2": "senior", "3": "others"},
    "race": {"0": "Asian", "1": "White", "2": "Black", "3": "others"},
}
AI_FACE, LIN, XU = "AI-Face", "Lin et al. CVPR 2024", "Xu et al. A-*.csv"
_RACE_COLUMNS = {"Asian": "asian", "White": "white", "Black": "black"}
_AGE_COLUMNS = {"young": "young", "middle-aged": "middle_aged", "senior": "senior"}
KNOWN_HEADERS = (
    f"{AI_FACE} (Image Path, Ground Truth Gender/Age/Race, Intersection, Target), "
    f"{LIN} (img_path,label,ismale,isasian,iswhite,isblack,intersec_label[,spe_label]), "
    f"{XU} (path,path_folder,label,male,young,...,asian,white,black,...)"
)


class DemographicsError(ValueError):
    """A demographics CSV that cannot be read, or that matches too few videos."""


@dataclass
class FrameLabels:
    """One CSV row: the frame's path, its class when the file gives one, its demographic labels
    (``None``: undefined in this row), uncertainty scores, and an FF++ method when given."""

    path: str
    target: int | None
    labels: dict[str, str | None]
    uncertainty: dict[str, float] = field(default_factory=dict)
    method: str | None = None


@dataclass
class DemographicsFile:
    """A read CSV: its format, the attributes it was read for, and its rows."""

    path: Path
    format: str
    attributes: list[str]
    rows: list[FrameLabels]


def _norm(name: str) -> str:
    return re.sub(r"[\s\-]+", "_", (name or "").strip().lower())


def _code(value: str | None) -> str:
    """A code cell as its integer text (``"1.0"`` -> ``"1"``, ``"-1"``); empty when blank."""
    text = (value or "").strip()
    try:
        return str(int(float(text))) if text else ""
    except ValueError:
        return text


class _Row:
    """One CSV row with the file and line, for error messages."""

    def __init__(self, path: Path, line: int, row: dict[str, str]) -> None:
        self.path, self.line, self.row = path, line, row

    def code(self, column: str, allowed: Sequence[str]) -> str:
        value = _code(self.row.get(column))
        if value not in allowed:
            raise DemographicsError(
                f"{self.path} line {self.line}: {column} = {self.row.get(column)!r}; "
                f"expected one of {list(allowed)}"
            )
        return value


def read_demographics_csv(
    path: str | Path, attributes: Sequence[str] | None = None
) -> DemographicsFile:
    """Rows of an AI-Face, Lin et al. or Xu et al. CSV (module doc) for ``attributes``
    (default: every one of gender, age, race that the file has).

    A missing file, an unknown header, an attribute the format lacks or a code outside the
    legend is a :class:`DemographicsError` naming the file (and line and column)."""
    path = Path(path)
    unknown = [a for a in attributes or () if a not in CODES]
    if unknown:
        raise DemographicsError(f"unknown attributes {unknown}; known: {', '.join(CODES)}")
    if not path.is_file():
        raise DemographicsError(f"{path}: demographics CSV not found")
    with path.open(newline="", encoding="utf-8-sig") as fh:
        reader = csv.DictReader(fh)
        header = reader.fieldnames or []
        names = {_norm(h): h for h in header}
        if "img_path" in names and "ismale" in names:
            fmt, reader_fn = LIN, _lin_reader(path, names)
        elif "path" in names and "male" in names:
            fmt, reader_fn = XU, _xu_reader(names)
        elif _prefixed(names, "image_path") and _prefixed(names, "ground_truth_"):
            fmt, reader_fn = AI_FACE, _ai_face_reader(names)
        else:
            raise DemographicsError(
                f"{path}: header {header} is none of the known formats: {KNOWN_HEADERS}"
            )
        available = [a for a in CODES if reader_fn.has(a)]
        chosen = list(attributes) if attributes else available
        lacking = [a for a in chosen if a not in available]
        if lacking or not chosen:
            raise DemographicsError(
                f"{path}: this {fmt} file has no {', '.join(lacking) or 'gender/age/race'} "
                f"column(s); it gives {', '.join(available) or 'none'}; columns: {header}"
            )
        rows = [reader_fn.read(_Row(path, n, row), chosen) for n, row in enumerate(reader, 2)]
    return DemographicsFile(path, fmt, chosen, rows)


def _prefixed(names: dict[str, str], prefix: str) -> str | None:
    return next((orig for norm, orig in names.items() if norm.startswith(prefix)), None)


@dataclass
class _Reader:
    """A format's reader: which attributes it has, and how to read one row."""

    has: Callable[[str], bool]
    read: Callable[[_Row, list[str]], FrameLabels]


def _ai_face_reader(names: dict[str, str]) -> _Reader:
    path_col = _prefixed(names, "image_path")
    label_cols = {a: _prefixed(names, f"ground_truth_{a}") for a in CODES}
    unc_cols = {a: _prefixed(names, f"uncertainty_score_{a}") for a in CODES}
    target_col = _prefixed(names, "target")

    def read(row: _Row, attributes: list[str]) -> FrameLabels:
        labels = {a: CODES[a][row.code(label_cols[a], list(CODES[a]))] for a in attributes}
        target = row.code(target_col, ["", "0", "1"]) if target_col else ""
        uncertainty = {}
        for a in attributes:
            col = unc_cols[a]
            if col and (row.row.get(col) or "").strip():
                try:
                    uncertainty[a] = float(row.row[col])
                except ValueError:
                    raise DemographicsError(
                        f"{row.path} line {row.line}: {col} = {row.row[col]!r} is not a number"
                    ) from None
        return FrameLabels(
            _cell(row, path_col), int(target) if target else None, labels, uncertainty
        )

    return _Reader(lambda a: label_cols[a] is not None, read)


def _one_positive(values: dict[str, str], none_is: str | None) -> str | None:
    """The name whose code is 1 when exactly one is; ``none_is`` when all are -1."""
    positive = [name for name, v in values.items() if v == "1"]
    if len(positive) == 1:
        return positive[0]
    if not positive and values and all(v == "-1" for v in values.values()):
        return none_is
    return None


def _lin_reader(path: Path, names: dict[str, str]) -> _Reader:
    race_cols = {r: names[f"is{c}"] for r, c in _RACE_COLUMNS.items() if f"is{c}" in names}
    if "label" not in names:
        raise DemographicsError(f"{path}: {LIN} file without a 'label' column")

    def read(row: _Row, attributes: list[str]) -> FrameLabels:
        labels: dict[str, str | None] = {}
        if "gender" in attributes:
            labels["gender"] = {"1": "male", "-1": "female"}[row.code(names["ismale"], ["1", "-1"])]
        if "race" in attributes:
            codes = {r: row.code(c, ["1", "-1"]) for r, c in race_cols.items()}
            labels["race"] = _one_positive(codes, "others")
        target = int(row.code(names["label"], ["0", "1"]))
        method = None
        if "spe_label" in names:
            spe = row.code(names["spe_label"], ["", "0", *map(str, range(1, 6))])
            method = FF_METHODS[int(spe) - 1] if target == 1 and spe not in ("", "0") else None
        return FrameLabels(_cell(row, names["img_path"]), target, labels, method=method)

    return _Reader(lambda a: a == "gender" or (a == "race" and bool(race_cols)), read)


def _xu_reader(names: dict[str, str]) -> _Reader:
    groups = {
        "gender": {"male": names["male"]},
        "age": {v: names[c] for v, c in _AGE_COLUMNS.items() if c in names},
        "race": {v: names[c] for v, c in _RACE_COLUMNS.items() if c in names},
    }

    def read(row: _Row, attributes: list[str]) -> FrameLabels:
        labels: dict[str, str | None] = {}
        for a in attributes:
            codes = {v: row.code(c, ["1", "-1", "0"]) for v, c in groups[a].items()}
            if a == "gender":
                labels[a] = {"1": "male", "-1": "female"}.get(codes["male"])
            else:
                labels[a] = _one_positive(codes, "others" if a == "race" else None)
        return FrameLabels(_cell(row, names["path"]), None, labels)

    return _Reader(lambda a: bool(groups[a]), read)


def _cell(row: _Row, column: str | None) -> str:
    value = str(row.row.get(column) or "").strip() if column else ""
    if not value:
        raise DemographicsError(f"{row.path} line {row.line}: empty image path")
    return value
