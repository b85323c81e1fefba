"""Post-hoc calibration fitted on a validation predictions file, and applied to others.

- ``temperature`` (Guo et al. 2017, Sec. 4.2): ``P = sigmoid(z / T)`` with ``z`` the detector's
  logit (``logit(score)``); one parameter, so the ranking of scores (AUC) is unchanged. Its
  interval is a cluster-robust (sandwich) interval of ``1 / T`` with videos as clusters, with a
  t reference on (videos - 1) degrees of freedom, inverted to ``T``.
- ``platt`` (Platt 1999): ``P = sigmoid(a z + b)``, fitted by unpenalised logistic regression
  (scikit-learn); monotone when ``a > 0`` (a negative ``a`` is refused: it would reverse the
  ranking).
- ``isotonic`` (Zadrozny and Elkan 2002): the non-decreasing step function of the score that
  best fits the labels (scikit-learn's IsotonicRegression), interpolated linearly between its
  thresholds. It is monotone but not strictly: scores in one flat step get one value, so AUC can
  change (a pair tied counts one half, whichever way it was ranked); the fitted map says how
  many distinct values it has.

A calibration records what it was fitted for (the detector and its weights' SHA-256 from the
validation file's provenance, when there is one); applying it to another detector's scores is
refused (:func:`Calibration.check_producer`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from scipy import optimize, stats
from scipy.special import expit, logit

from fairforensics.evaluation.calibration.metrics import EPS
from fairforensics.evaluation.metrics import check_scores
from fairforensics.preprocessing.files import write_json

METHODS = ("temperature", "platt", "isotonic")
FORMAT = "fairforensics-calibration/1"
#: provenance keys that must agree between the validation scores and the scores calibrated
PRODUCER_KEYS = ("detector", "weights_sha256")


class CalibrationError(ValueError):
    """A calibration cannot be fitted, read or applied (the message says why)."""


def to_logit(y_score: np.ndarray) -> np.ndarray:
    """The detector's logit of a probability (clipped to [1e-7, 1 - 1e-7])."""
    return logit(np.clip(y_score, EPS, 1 - EPS))


@dataclass
class Calibration:
    """A fitted map from a detector's P(fake) to a calibrated P(fake)."""

    method: str
    params: dict[str, Any]
    fitted_on: dict[str, Any] = field(default_factory=dict)
    producer: dict[str, Any] = field(default_factory=dict)
    note: str = ""

    def apply(self, y_score: Sequence) -> np.ndarray:
        """Calibrated probabilities of ``y_score`` (probabilities of fake)."""
        s = np.asarray(y_score, dtype=np.float64)
        z = logit(s)  # unclipped (0 and 1 go to -inf and inf, and back): no ties made here
        if self.method == "temperature":
            return expit(z / self.params["temperature"])
        if self.method == "platt":
            return expit(self.params["a"] * z + self.params["b"])
        x, y = np.asarray(self.params["x"]), np.asarray(self.params["y"])
        return np.interp(s, x, y)

    def check_producer(self, producer: Mapping[str, Any] | None, what: str) -> None:
        """Refuse scores of another detector or weights than the ones this was fitted on."""
        if not self.producer or not producer:
            return
        for key in PRODUCER_KEYS:
            mine, theirs = self.producer.get(key), producer.get(key)
            if mine is not None and theirs is not None and mine != theirs:
                other = " (other weights: another run or checkpoint)" if key != "detector" else ""
                raise CalibrationError(
                    f"{what}: the calibration was fitted for {key} {mine!r}, these scores come "
                    f"from {theirs!r}{other}; fit one on this detector's validation predictions "
                    "(fairforensics calibrate)"
                )

    def to_json(self) -> dict[str, Any]:
        return {"format": FORMAT, "method": self.method, "params": self.params,
                "fitted_on": self.fitted_on, "producer": self.producer, "note": self.note}  # fmt: skip


def _fit_temperature(
    y: np.ndarray, z: np.ndarray, clusters: np.ndarray, confidence: float
) -> dict[str, Any]:
    """``1 / T`` by maximum likelihood (Newton on the convex NLL), with a cluster-robust
    interval: ``Var = H^-1 (sum_v g_v^2) H^-1``, g_v the score of video v, H the information."""

    informative = z != 0
    if not informative.any() or np.all((z[informative] > 0) == (y[informative] == 1)):
        raise CalibrationError(
            "the validation scores separate reals from fakes at 0.5 (or are all 0.5): the "
            "likelihood grows without bound as T -> 0, so no temperature is fitted; use more "
            "validation videos or --method platt|isotonic"
        )

    def nll(beta: float) -> float:
        return float(np.sum(np.logaddexp(0.0, beta * z) - y * beta * z))

    beta = optimize.minimize_scalar(nll, bounds=(1e-4, 1e4), method="bounded",
                                    options={"xatol": 1e-10}).x  # fmt: skip
    for _ in range(20):  # polish: Newton steps on the exact optimum
        p = expit(beta * z)
        grad, hess = float(np.sum((p - y) * z)), float(np.sum(p * (1 - p) * z * z))
        if hess <= 0:
            break
        step = grad / hess
        beta -= step
        if abs(step) < 1e-13 * max(1.0, abs(beta)):
            break
    if beta <= 0:
        raise CalibrationError(
            "the validation scores rank fakes below reals (fitted 1/T <= 0): no temperature "
            "makes them probabilities of fake"
        )
    p = expit(beta * z)
    hess = float(np.sum(p * (1 - p) * z * z))
    _, codes = np.unique(clusters, return_inverse=True)
    per_video = np.bincount(codes, weights=(p - y) * z)
    n_videos = len(per_video)
    se = float(np.sqrt(np.sum(per_video**2) * n_videos / max(n_videos - 1, 1)) / hess)
    t = stats.t.ppf(0.5 + confidence / 2, df=max(n_videos - 1, 1))
    lo_beta, hi_beta = beta - t * se, beta + t * se
    return {
        "temperature": 1.0 / beta,
        "temperature_low": 1.0 / hi_beta,
        "temperature_high": 1.0 / lo_beta if lo_beta > 0 else float("inf"),
        "confidence": confidence,
        "interval": "cluster-robust (videos) interval of 1/T, t with videos - 1 df, inverted",
    }


def _fit_platt(y: np.ndarray, z: np.ndarray) -> dict[str, Any]:
    from sklearn.linear_model import LogisticRegression

    model = LogisticRegression(C=np.inf).fit(z[:, None], y)
    a, b = float(model.coef_[0, 0]), float(model.intercept_[0])
    if a <= 0:
        raise CalibrationError(
            f"Platt scaling fitted a slope {a:.3g} <= 0: it would reverse the ranking of scores"
        )
    return {"a": a, "b": b}


def _fit_isotonic(y: np.ndarray, s: np.ndarray) -> dict[str, Any]:
    from sklearn.isotonic import IsotonicRegression

    iso = IsotonicRegression(y_min=0.0, y_max=1.0, out_of_bounds="clip").fit(s, y)
    x, v = iso.X_thresholds_.astype(float), iso.y_thresholds_.astype(float)
    if x[0] > 0.0:
        x, v = np.r_[0.0, x], np.r_[v[0], v]
    if x[-1] < 1.0:
        x, v = np.r_[x, 1.0], np.r_[v, v[-1]]
    return {"x": x.tolist(), "y": v.tolist(), "distinct_values": int(len(np.unique(v)))}


def fit_calibration(
    y_true: Sequence,
    y_score: Sequence,
    method: str,
    *,
    clusters: Sequence | None = None,
    confidence: float = 0.95,
) -> Calibration:
    """Fit ``method`` on validation labels and P(fake) scores; ``clusters`` (video ids) make the
    temperature's interval clustered by video (default: every row its own video)."""
    if method not in METHODS:
        raise CalibrationError(
            f"unknown calibration method {method!r}; choose one of {', '.join(METHODS)}"
        )
    y, s = check_scores(y_true, y_score)
    classes = np.unique(y)
    if len(classes) < 2:
        kind = "fakes" if classes[0] == 1 else "reals"
        raise CalibrationError(
            f"the validation scores hold only {kind}: a calibration needs reals and fakes"
        )
    clusters = np.arange(len(y)) if clusters is None else np.asarray(clusters)
    note = ""
    if method == "temperature":
        params = _fit_temperature(y, to_logit(s), clusters, confidence)
    elif method == "platt":
        params = _fit_platt(y, to_logit(s))
    else:
        params = _fit_isotonic(y, s)
        note = (
            f"isotonic: a step function with {params['distinct_values']} distinct values; "
            "scores in one step are tied after calibration, so AUC can change"
        )
    return Calibration(method=method, params=params, note=note)


def write_calibration(path: str | Path, calibration: Calibration) -> None:
    """Write a calibration JSON atomically."""
    write_json(Path(path), calibration.to_json())


def read_calibration(path: str | Path) -> Calibration:
    """Read a calibration JSON; a missing file, another format or an unknown method is an
    error that names the file."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CalibrationError(f"{path}: calibration file not found") from None
    except IsADirectoryError:
        raise CalibrationError(f"{path}: a folder, not a calibration file") from None
    except (OSError, ValueError) as exc:
        raise CalibrationError(f"{path}: not a calibration JSON ({exc})") from None
    return calibration_from_json(data, str(path))


def calibration_from_json(data: Any, where: str) -> Calibration:
    """The calibration of a mapping written by :meth:`Calibration.to_json` (a calibration
    file, a model package's ``calibration``); another format, an unknown method or missing
    parameters are errors naming ``where``."""
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise CalibrationError(f"{where}: not a calibration file (format {FORMAT!r} expected)")
    method = data.get("method")
    if method not in METHODS:
        raise CalibrationError(
            f"{where}: unknown calibration method {method!r}; choose one of {', '.join(METHODS)}"
        )
    needed = {"temperature": ("temperature",), "platt": ("a", "b"), "isotonic": ("x", "y")}
    params = data.get("params") or {}
    missing = [k for k in needed[method] if k not in params]
    if missing:
        raise CalibrationError(f"{where}: {method} calibration without {', '.join(missing)}")
    problem = _params_problem(method, params)
    if problem:
        raise CalibrationError(f"{where}: {method} calibration with {problem}")
    return Calibration(
        method=method,
        params=params,
        fitted_on=data.get("fitted_on") or {},
        producer=data.get("producer") or {},
        note=data.get("note", ""),
    )


def _params_problem(method: str, params: dict[str, Any]) -> str:
    """What makes ``params`` no increasing map of probabilities ("": nothing)."""
    try:
        if method == "temperature":
            t = float(params["temperature"])
            return "" if np.isfinite(t) and t > 0 else f"temperature {t:g} (must be > 0)"
        if method == "platt":
            a, b = float(params["a"]), float(params["b"])
            return "" if np.isfinite([a, b]).all() and a > 0 else f"slope a={a:g} (must be > 0)"
        x = np.asarray(params["x"], dtype=np.float64)
        y = np.asarray(params["y"], dtype=np.float64)
    except (TypeError, ValueError):
        return "parameters that are not numbers"
    if x.ndim != 1 or x.shape != y.shape or len(x) < 2:
        return "x and y of different lengths (or fewer than 2 points)"
    if np.any(np.diff(x) < 0) or np.any(np.diff(y) < 0):
        return "x or y not non-decreasing"
    if not (np.isfinite(y).all() and y.min() >= 0 and y.max() <= 1):
        return "y outside [0, 1]"
    return ""
