"""The decision threshold behind every "fake"/"real" decision, and where it came from.

A score at or above the threshold is a fake (attack) decision. Every command that turns scores
into decisions resolves its threshold here (:func:`decision_threshold`), in this order:

1. ``threshold``: a number the user gave (``--threshold``);
2. ``threshold_from``: an ``eval.json`` of ``scripts/test.py`` (the threshold it decided with),
   a run directory (its validation threshold) or a model package (a folder or
   ``hf:OWNER/NAME[@REV]``: the threshold it records);
3. ``run``: the validation threshold the training run recorded (below), or ``packaged``: the
   threshold a model package records (``config.json``, exported from that record);
4. ``predictions``: the ``eval.json`` of the evaluation folder a predictions file
   ``<eval>/predictions/<set>.csv`` of ``scripts/test.py`` lies in;
5. ``default`` (0.5), saying why nothing better was found.

The run's validation threshold: after every evaluation the trainer chooses a threshold on its
validation sets (pooled) with the EER rule, at the level it selects checkpoints on
(``train.selection_level``), by :func:`predictions_threshold` (the function
``scripts/test.py --val-data`` uses), and records the one of the evaluation each checkpoint was
saved at in ``<run>/validation_threshold.json`` (:data:`RUN_THRESHOLDS`)::

    {"rule": "eer", "level": "frame", "reduce": "mean", "val_data": ["demo"],
     "checkpoints": {"best": {"threshold": 0.71, "step": 120, "epoch": 14},
                     "last": {"threshold": 0.70, "step": 160, "epoch": 19}}}

A checkpoint saved at a step that was not evaluated (``last`` after ``eval_every_steps``) has
no entry; an evaluation whose validation data hold one class records ``threshold: null`` and
the ``reason``.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from fairforensics.configs import ConfigError
from fairforensics.evaluation.metrics import choose_threshold, factorize, video_scores
from fairforensics.evaluation.model_package.schema import is_package
from fairforensics.evaluation.predictions import Predictions
from fairforensics.preprocessing.files import write_json

log = logging.getLogger(__name__)

#: The file of a run directory that records its validation thresholds.
RUN_THRESHOLDS = "validation_threshold.json"
#: The threshold when neither the user nor a run gives one.
DEFAULT_THRESHOLD = 0.5


@dataclass(frozen=True)
class DecisionThreshold:
    """A decision threshold and, for the reader, where it came from."""

    value: float
    source: str

    def __str__(self) -> str:
        """``0.71 (validation threshold of run ...)``; a default's source already starts
        with its value."""
        value = f"{self.value:g}"
        return self.source if self.source.startswith(value) else f"{value} ({self.source})"


def predictions_threshold(
    preds: Sequence[Predictions], level: str = "frame", reduce: str = "mean", rule: str = "eer"
) -> float:
    """The threshold ``rule`` (``eer`` or ``youden``) chooses on ``preds`` pooled, scored at
    ``level`` (``video``: each video's frame scores reduced with ``reduce``, videos keyed by
    dataset/method/id). Raises :class:`~evaluation.metrics.SingleClassError` on one class."""
    labels, scores = [], []
    for pred in preds:
        y, s = pred.label, pred.score
        if level == "video":
            y, s, _ = video_scores(y, s, factorize(pred.video_key)[0], reduce=reduce)
        labels.append(np.asarray(y))
        scores.append(np.asarray(s, dtype=np.float64))
    if not labels:
        raise ValueError("no predictions to choose a threshold on")
    return choose_threshold(np.concatenate(labels), np.concatenate(scores), rule)


def validation_record(
    preds: Sequence[Predictions], level: str, step: int, epoch: int
) -> dict[str, Any]:
    """One evaluation's entry of :data:`RUN_THRESHOLDS` (EER rule, mean-reduced videos)."""
    try:
        value: float | None = predictions_threshold(preds, level, "mean", "eer")
    except ValueError as exc:  # one class (SingleClassError), or no rows
        return {"threshold": None, "step": step, "epoch": epoch, "reason": str(exc)}
    record: dict[str, Any] = {"threshold": value, "step": step, "epoch": epoch}
    calibration = validation_temperature(preds)
    if calibration is not None:
        record["calibration"] = calibration
    return record


def validation_temperature(preds: Sequence[Predictions]) -> dict[str, Any] | None:
    """Temperature scaling fitted on the pooled validation frames (interval clustered by video):
    ``{"method": "temperature", "params": {...}}``, or ``None`` when it cannot be fitted (the
    scores rank fakes below reals)."""
    from fairforensics.evaluation.calibration import CalibrationError, fit_calibration

    labels = np.concatenate([p.label for p in preds])
    scores = np.concatenate([p.score for p in preds])
    videos = np.concatenate([p.video_key for p in preds])
    try:
        fitted = fit_calibration(labels, scores, "temperature", clusters=videos)
    except CalibrationError as exc:
        log.warning("no temperature scaling on the validation data: %s", exc)
        return None
    return {"method": "temperature", "params": fitted.params, "level": "frame"}


def run_calibration(run_dir: str | Path, weights: str = "best") -> dict[str, Any] | None:
    """The temperature scaling a run fitted on validation for its ``weights`` checkpoint, or
    ``None`` (an older run, no validation data, or none could be fitted)."""
    data = read_run_thresholds(run_dir)
    entry = (data or {}).get("checkpoints", {}).get(str(weights))
    return entry.get("calibration") if isinstance(entry, dict) else None


def write_run_thresholds(
    run_dir: str | Path, level: str, val_data: Sequence[str], checkpoints: dict[str, Any]
) -> Path:
    """Write ``<run_dir>/validation_threshold.json`` (atomically); ``checkpoints`` maps
    ``best``/``last`` to a :func:`validation_record` (or ``None``: not evaluated)."""
    path = Path(run_dir) / RUN_THRESHOLDS
    write_json(
        path,
        {
            "rule": "eer",
            "level": level,
            "reduce": "mean",
            "val_data": list(val_data),
            "checkpoints": {k: v for k, v in checkpoints.items() if v is not None},
        },
        indent=2,
    )
    return path


def read_run_thresholds(run_dir: str | Path) -> dict[str, Any] | None:
    """The run's :data:`RUN_THRESHOLDS`, or ``None`` when it has none (an older run, no
    validation data); an unreadable file is a :class:`~configs.ConfigError` naming it."""
    path = Path(run_dir) / RUN_THRESHOLDS
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(data.get("checkpoints"), dict):
            raise ValueError("no 'checkpoints' mapping")
    except (OSError, ValueError, AttributeError) as exc:
        raise ConfigError(f"{path}: not a validation threshold record ({exc})") from None
    return data


def run_threshold(
    run_dir: str | Path, weights: str = "best"
) -> tuple[DecisionThreshold | None, str]:
    """The validation threshold a run recorded for its ``weights`` checkpoint, or ``None`` and
    why there is none."""
    if str(weights) not in ("best", "last"):
        return None, f"run {run_dir} records validation thresholds of best and last only"
    data = read_run_thresholds(run_dir)
    if data is None:
        return None, f"run {run_dir} records no validation threshold"
    entry = data["checkpoints"].get(str(weights))
    if not isinstance(entry, dict):
        return None, f"run {run_dir} records no validation threshold of its {weights} checkpoint"
    value = entry.get("threshold")
    if value is None or not math.isfinite(float(value)):
        why = entry.get("reason", "undefined")
        return None, f"run {run_dir}'s validation threshold of {weights} is undefined: {why}"
    sets = "+".join(data.get("val_data") or []) or "its validation data"
    source = (
        f"validation threshold of run {run_dir} ({weights} checkpoint, step {entry.get('step')}; "
        f"{str(data.get('rule', 'eer')).upper()} rule, {data.get('level', 'frame')} level, "
        f"on {sets}/val)"
    )
    return DecisionThreshold(float(value), source), ""


def eval_json_threshold(path: str | Path) -> DecisionThreshold:
    """The threshold an ``eval.json`` of ``scripts/test.py`` decided with."""
    try:
        info = json.loads(Path(path).read_text(encoding="utf-8"))
        value = float(info["settings"]["threshold"])
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ConfigError(f"{path}: no decision threshold in it ({exc})") from None
    how = info.get("threshold_from") if isinstance(info, dict) else None
    return DecisionThreshold(value, f"eval.json of {path}" + (f": {how}" if how else ""))


def _checked(value: float, what: str) -> float:
    value = float(value)
    if not (math.isfinite(value) and 0.0 <= value <= 1.0):
        raise ConfigError(f"{what}: a threshold on probabilities must be in [0, 1], got {value:g}")
    return value


def decision_threshold(
    *,
    run: Path | None = None,
    threshold: float | None = None,
    threshold_from: Path | None = None,
    default: float = DEFAULT_THRESHOLD,
    weights: str = "best",
    predictions: Path | None = None,
    packaged: DecisionThreshold | None = None,
) -> DecisionThreshold:
    """The decision threshold, in the order of the module docstring. ``threshold_from`` is an
    ``eval.json`` (a file), a run directory (its ``best`` validation threshold; an error when
    it has none) or a model package (its threshold; an error when it records none);
    ``weights`` picks the checkpoint of ``run`` (``best`` or ``last``); ``packaged``: a model
    package's threshold (:attr:`LoadedModel.threshold`)."""
    if threshold is not None and threshold_from is not None:
        raise ConfigError("give --threshold or --threshold-from, not both")
    if threshold is not None:
        value = _checked(threshold, "--threshold")
        return DecisionThreshold(value, f"--threshold {value:g}")
    if threshold_from is not None:
        path = Path(threshold_from)
        if str(threshold_from).startswith("hf:") or is_package(path):
            from fairforensics.evaluation.model_package.hub import resolve_model_ref
            from fairforensics.evaluation.model_package.load import package_threshold
            from fairforensics.evaluation.model_package.schema import read_package_config

            config = read_package_config(resolve_model_ref(threshold_from))
            found = package_threshold(config, str(threshold_from))
            if found is None:
                raise ConfigError(f"--threshold-from {threshold_from}: the package records none")
            return found
        if path.is_dir():
            found, why = run_threshold(path, "best")
            if found is None:
                raise ConfigError(f"--threshold-from {path}: {why}")
            return found
        if not path.is_file():
            raise ConfigError(f"--threshold-from {path}: no such eval.json or run directory")
        return eval_json_threshold(path)
    why = ""
    if run is not None:
        found, why = run_threshold(run, weights)
        if found is not None:
            return found
    if packaged is not None:
        return packaged
    beside = eval_json_beside(predictions) if predictions is not None else None
    if beside is not None:
        return eval_json_threshold(beside)
    return DecisionThreshold(
        float(default), f"{default:g} (default" + (f": {why})" if why else ")")
    )


#: How an evaluation's threshold was chosen, in a few words (``eval.json``'s
#: ``threshold_chosen_by``; the tables' ``Chosen by`` column)
CHOSEN_BY = {
    "run": "run's validation threshold",
    "val_data": "chosen on validation data (--val-data)",
    "package": "model package's threshold",
    "given": "given (--set threshold / --config)",
    "default": "default 0.5 (no validation threshold)",
}


def threshold_chosen_by(info: dict[str, Any]) -> str:
    """How the threshold of an ``eval.json`` was chosen (:data:`CHOSEN_BY`): its
    ``threshold_chosen_by``, else read from its ``threshold_from`` (folders written before)."""
    key = info.get("threshold_chosen_by")
    if key in CHOSEN_BY:
        return CHOSEN_BY[key]
    how = str(info.get("threshold_from") or "")
    for words, key in (
        ("validation threshold of run", "run"),
        ("val split of", "val_data"),
        ("model package", "package"),
    ):
        if words in how:
            return CHOSEN_BY[key]
    value = info.get("threshold", DEFAULT_THRESHOLD)
    return CHOSEN_BY["default" if value == DEFAULT_THRESHOLD else "given"]


def eval_json_beside(predictions: str | Path) -> Path | None:
    """``<eval>/eval.json`` when ``predictions`` is ``<eval>/predictions/<set>.csv`` of an
    evaluation folder of ``scripts/test.py``; else ``None``."""
    folder = Path(predictions).parent
    if folder.name != "predictions":  # e.g. "." inside the folder: name it absolutely
        folder = folder.resolve()
    found = folder.parent / "eval.json"
    return found if folder.name == "predictions" and found.is_file() else None


def warn_if_one_class(
    y_score: Any, threshold: DecisionThreshold, what: str, *, y_true: Any | None = None
) -> bool:
    """Log a warning when every score of ``what`` falls on one side of ``threshold`` (every
    decision is "fake", or every one "real") although ``y_true`` holds both classes; True if so.

    All decisions on one side are right when the set holds one class (only real videos), so
    then nothing is logged; with ``y_true=None`` (labels unknown, e.g. ``detect``) what the
    decisions were is logged as information, without advice."""
    scores = np.asarray(y_score, dtype=np.float64).reshape(-1)
    if scores.size == 0:
        return False
    fake = scores >= threshold.value
    if fake.all() != fake.any():  # mixed decisions
        return False
    decided = "fake" if fake.all() else "real"
    side = "at or above" if fake.all() else "below"
    stated = (
        f"{what}: all {scores.size} decisions are {decided}: every score "
        f"({scores.min():.4g} to {scores.max():.4g}) is {side} the decision threshold {threshold}"
    )
    if y_true is None:
        log.info("%s", stated)
        return False
    if len(np.unique(np.asarray(y_true).reshape(-1))) < 2:
        return False
    log.warning(
        "%s, on a set of real and fake; give a threshold chosen on validation data "
        "(--threshold-from, --threshold)",
        stated,
    )
    return True
