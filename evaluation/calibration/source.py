"""Where a calibration to apply comes from, and whether it fits the scores it is applied to.

- a calibration file of ``fairforensics calibrate`` (``--calibration FILE``);
- ``run``: the temperature scaling a training run fitted on its validation frames for the
  checkpoint tested (``validation_threshold.json``), or the one a model package carries
  (``config.json``'s ``calibration``, exported from that record).

A calibration records the detector and the weights' SHA-256 of the scores it was fitted on
(its ``producer``); applying it to another detector's scores, or another run's (other
weights), is refused before any work. A model package's weights are a re-saved copy of the
run's checkpoint, so both hashes identify it.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fairforensics.evaluation.calibration.apply import calibration_record, check_frame_level
from fairforensics.evaluation.calibration.fitting import (
    PRODUCER_KEYS,
    Calibration,
    CalibrationError,
    calibration_from_json,
    read_calibration,
)
from fairforensics.evaluation.provenance import file_sha256

log = logging.getLogger(__name__)

#: ``--calibration run``: the calibration the run (or the model package) stored
STORED = "run"


@dataclass(frozen=True)
class ChosenCalibration:
    """A calibration to apply, where it comes from and that file's SHA-256."""

    calibration: Calibration
    source: str
    sha256: str | None

    def record(self) -> dict[str, Any]:
        """``eval.json``'s ``calibration``."""
        return calibration_record(self.calibration, self.source, self.sha256)

    def describe(self) -> str:
        """One line: the method, its parameters in short, and where it comes from."""
        return f"{describe_calibration(self.calibration)}, from {self.source}"


def describe_calibration(calibration: Calibration) -> str:
    """``temperature T=1.83``, ``platt a=0.71 b=-0.2``, ``isotonic (12 steps)``."""
    p = calibration.params
    if calibration.method == "temperature":
        return f"temperature scaling T={float(p['temperature']):.4g}"
    if calibration.method == "platt":
        return f"Platt scaling a={float(p['a']):.4g} b={float(p['b']):.4g}"
    steps = p.get("distinct_values", len(set(p["y"])))
    return f"isotonic regression ({steps} distinct values)"


def run_calibration(run: str | Path, weights: str = "best") -> Calibration | None:
    """The temperature scaling ``run`` fitted on validation for its ``weights`` checkpoint
    (``best``/``last``), recording the run's detector and that checkpoint's SHA-256; None when
    the run stored none."""
    from fairforensics.evaluation.thresholds import RUN_THRESHOLDS, read_run_thresholds
    from fairforensics.preprocessing.rundir import RunDir

    record = read_run_thresholds(run) or {}
    entry = (record.get("checkpoints") or {}).get(str(weights))
    stored = entry.get("calibration") if isinstance(entry, dict) else None
    if not stored:
        return None
    where = f"{Path(run) / RUN_THRESHOLDS} ({weights} checkpoint)"
    folder = RunDir(run)
    calibration = calibration_from_json({"format": "fairforensics-calibration/1", **stored}, where)
    calibration.fitted_on = {
        "run": Path(run).name,
        "weights": str(weights),
        "step": entry.get("step"),
        "val_data": record.get("val_data") or [],
        "level": stored.get("level", "frame"),
    }
    calibration.producer = {
        "detector": folder.read_config().get("detector"),
        "weights_sha256": file_sha256(folder.checkpoint(weights)),
    }
    return calibration


def package_calibration(config: Mapping[str, Any], ref: str) -> Calibration | None:
    """The calibration a model package's ``config.json`` carries, or None."""
    stored = config.get("calibration")
    if not stored:
        return None
    return calibration_from_json(stored, f"{ref} config.json (calibration)")


def run_producers(run: str | Path, weights: str) -> list[dict[str, Any]]:
    """The identity of a run's checkpoint (detector, weights SHA-256)."""
    from fairforensics.preprocessing.rundir import RunDir

    folder = RunDir(run)
    return [
        {
            "detector": folder.read_config().get("detector"),
            "weights_sha256": file_sha256(folder.checkpoint(weights)),
        }
    ]


def package_producers(config: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The identities of a model package's weights: its ``model.safetensors`` and the
    checkpoint or weights file it was exported from."""
    source = config.get("source") or {}
    hashes = [config.get("weights_sha256"), source.get("checkpoint_sha256"), source.get("sha256")]
    return [{"detector": config.get("detector"), "weights_sha256": h} for h in hashes if h]


def check_producer(
    calibration: Calibration, producers: Sequence[Mapping[str, Any]], where: str, what: str
) -> None:
    """Refuse ``calibration`` (read from ``where``) unless it was fitted on scores of one of
    ``producers`` (``what`` names them); a calibration or scores that record no producer
    cannot be checked, which is logged."""
    mine = {k: calibration.producer.get(k) for k in PRODUCER_KEYS if calibration.producer.get(k)}
    known = [p for p in producers if any(p.get(k) for k in PRODUCER_KEYS)]
    if not mine or not known:
        log.warning(
            "%s: cannot check that it was fitted for %s (%s records no detector or weights)",
            where, what, "the calibration" if not mine else "the scores",
        )  # fmt: skip
        return
    refusals = []
    for producer in known:  # a package: its weights, or the checkpoint they were exported from
        try:
            calibration.check_producer(producer, f"{where} for {what}")
        except CalibrationError as exc:
            refusals.append(exc)
        else:
            return
    raise refusals[0]


def choose_calibration(
    spec: str,
    *,
    run: str | Path | None = None,
    weights: str = "best",
    package_config: Mapping[str, Any] | None = None,
    package_ref: str = "",
    package_folder: Path | None = None,
) -> ChosenCalibration:
    """The calibration ``--calibration spec`` names: a calibration file, or :data:`STORED`
    (the run's, for its ``weights`` checkpoint, or the model package ``package_config``'s, whose
    files lie in ``package_folder``); an error when there is none, or when it is fitted on video
    scores."""
    if spec == STORED:
        if run is not None:
            found = run_calibration(run, weights) if weights in ("best", "last") else None
            if found is None:
                raise CalibrationError(
                    f"--calibration run: run {run} stored no calibration for its {weights} "
                    "checkpoint (an older run, no validation data, or scores that rank fakes "
                    "below reals); fit one with fairforensics calibrate and pass the file"
                )
            from fairforensics.evaluation.thresholds import RUN_THRESHOLDS

            path = Path(run) / RUN_THRESHOLDS
            chosen = ChosenCalibration(
                found, f"run {run} ({weights} checkpoint)", file_sha256(path)
            )
        elif package_config is not None:
            found = package_calibration(package_config, package_ref)
            if found is None:
                raise CalibrationError(
                    f"--calibration run: model package {package_ref} carries no calibration; "
                    "fit one with fairforensics calibrate and pass the file"
                )
            config_file = None if package_folder is None else Path(package_folder) / "config.json"
            sha = file_sha256(config_file) if config_file and config_file.is_file() else None
            chosen = ChosenCalibration(found, f"model package {package_ref}", sha)
        else:
            raise CalibrationError(
                "--calibration run applies the calibration a --run or --model stored; with "
                "other scores pass a calibration file"
            )
    else:
        path = Path(spec)
        chosen = ChosenCalibration(read_calibration(path), str(path), file_sha256(path))
    check_frame_level(chosen.calibration, f"--calibration {spec}")
    return chosen
