"""Checkpoint selection and early stopping.

``val`` (default) picks the evaluation with the best validation metric, averaged over the
validation datasets: the test sets never influence the choice. ``test-top3`` reproduces
DeepfakeBench's protocol (paper 002 Sec. 4.1: "the average value of the top-3 metrics"): the best
checkpoint is the evaluation with the best mean test metric, and the summary reports, per test
dataset, the best value and the mean of the three best values over all evaluations. That
protocol selects on the test sets and is offered only to compare with the published tables.

A metric that is NaN (AUC, AP and EER of a set holding one class, see
:func:`evaluation.metrics.summarize`) is "not available": it is left out of every mean, exactly
as a metric that was not computed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

LOWER_IS_BETTER = frozenset({"eer"})


@dataclass
class Selector:
    """Tracks evaluations; ``update`` says whether the latest one is the new best."""

    mode: str = "val"
    metric: str = "auc"
    level: str = "frame"
    patience: int | None = None
    history: list[dict[str, Any]] = field(default_factory=list)
    best_step: int | None = None
    best_value: float | None = None
    bad_evals: int = 0

    def __post_init__(self) -> None:
        if self.mode not in ("val", "test-top3"):
            raise ValueError(f"selection must be 'val' or 'test-top3', got {self.mode!r}")

    @property
    def key(self) -> str:
        return f"{self.level}/{self.metric}"

    def _available(self, m: dict[str, float]) -> bool:
        """Whether the selection metric was computed on this dataset (present and not NaN)."""
        return self.key in m and not math.isnan(m[self.key])

    def _better(self, value: float, than: float | None) -> bool:
        if than is None:
            return True
        return value < than if self.metric in LOWER_IS_BETTER else value > than

    def score(self, metrics: dict[str, dict[str, dict[str, float]]]) -> float | None:
        """Mean selection metric over the datasets of the split that selection uses."""
        split = "val" if self.mode == "val" else "test"
        values = [m[self.key] for m in metrics.get(split, {}).values() if self._available(m)]
        if not values:
            return None
        return float(sum(values) / len(values))

    def update(
        self, step: int, epoch: int, metrics: dict[str, dict[str, dict[str, float]]]
    ) -> bool:
        """Record one evaluation ``{"val"|"test": {dataset: {"frame/auc": ...}}}``; True if best."""
        value = self.score(metrics)
        if value is None:
            split = "val" if self.mode == "val" else "test"
            raise ValueError(
                f"selection '{self.mode}' needs metric {self.key!r} on the {split} set(s); "
                f"none was computed (give --{split}-data, and both classes in it)"
            )
        self.history.append({"step": step, "epoch": epoch, "value": value, "metrics": metrics})
        if self._better(value, self.best_value):
            self.best_value, self.best_step, self.bad_evals = value, step, 0
            return True
        self.bad_evals += 1
        return False

    @property
    def should_stop(self) -> bool:
        """Early stopping: ``patience`` evaluations in a row without improvement."""
        return self.patience is not None and self.bad_evals >= self.patience

    def summary(self) -> dict[str, Any]:
        """Best step/value, and with ``test-top3`` the best and top-3 mean per test dataset."""
        out: dict[str, Any] = {
            "selection": self.mode,
            "metric": self.key,
            "best_step": self.best_step,
            "best_value": self.best_value,
            "evaluations": len(self.history),
        }
        best = next((h for h in self.history if h["step"] == self.best_step), None)
        if best is not None:
            out["best_epoch"] = best["epoch"]
            out["best_metrics"] = best["metrics"]
        if self.mode == "test-top3":
            per_ds: dict[str, list[float]] = {}
            for h in self.history:
                for ds, m in h["metrics"].get("test", {}).items():
                    if self._available(m):
                        per_ds.setdefault(ds, []).append(m[self.key])
            reverse = self.metric not in LOWER_IS_BETTER
            out["test_top3"] = {
                ds: {
                    "best": sorted(v, reverse=reverse)[0],
                    "top3_mean": sum(sorted(v, reverse=reverse)[:3]) / len(sorted(v)[:3]),
                }
                for ds, v in per_ds.items()
            }
        return out

    def state_dict(self) -> dict[str, Any]:
        return {
            "history": self.history,
            "best_step": self.best_step,
            "best_value": self.best_value,
            "bad_evals": self.bad_evals,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.history = list(state["history"])
        self.best_step = state["best_step"]
        self.best_value = state["best_value"]
        self.bad_evals = state["bad_evals"]
