"""Calibration: what a score means as a probability (ECE, MCE, Brier, NLL, reliability) and the
post-hoc maps fitted on validation (temperature, Platt, isotonic) that make it mean it."""

from fairforensics.evaluation.calibration.fitting import (
    METHODS,
    Calibration,
    CalibrationError,
    calibration_from_json,
    fit_calibration,
    read_calibration,
    write_calibration,
)
from fairforensics.evaluation.calibration.metrics import (
    ReliabilityBins,
    brier,
    calibration_summary,
    ece,
    mce,
    nll,
    reliability_bins,
)

__all__ = [
    "METHODS",
    "Calibration",
    "CalibrationError",
    "ReliabilityBins",
    "brier",
    "calibration_from_json",
    "calibration_summary",
    "ece",
    "fit_calibration",
    "mce",
    "nll",
    "read_calibration",
    "reliability_bins",
    "write_calibration",
]
