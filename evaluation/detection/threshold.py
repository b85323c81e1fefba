"""The decision threshold of ``detect``'s verdicts, and where it comes from.

One call, :func:`verdict_threshold`, so that the shared rule of issue 29 item 4
(``evaluation.thresholds.decision_threshold``) replaces it in one place when it lands.
"""

from __future__ import annotations

import json
from pathlib import Path

from fairforensics.configs import ConfigError


def verdict_threshold(
    run: str | Path | None = None,
    weights: str = "best",
    threshold: float | None = None,
    threshold_from: str | Path | None = None,
) -> tuple[float, str]:
    """(threshold, where it comes from): ``threshold`` as given, else the one recorded in
    ``threshold_from`` (an ``eval.json`` of ``test.py``), else the validation threshold of the
    run's own evaluation (``RUN/eval/<weights>/eval.json`` made with ``--val-data``), else 0.5."""
    if threshold is not None:
        if not 0.0 <= threshold <= 1.0:
            raise ConfigError(f"--threshold must be in [0, 1], got {threshold}")
        return float(threshold), "given (--threshold)"
    if threshold_from is not None:
        value, how = _recorded(Path(threshold_from))
        return value, f"{how}, read from {threshold_from}"
    if run is not None:
        label = weights if weights in ("best", "last") else Path(weights).stem
        path = Path(run) / "eval" / label / "eval.json"
        if path.is_file():
            value, how = _recorded(path)
            if "val split" in how:
                return value, f"the run's validation threshold ({how}, {path})"
        return 0.5, "0.5: the run has no validation threshold (test.py --val-data records one)"
    return 0.5, "0.5: no run, so no validation threshold (pass --threshold or --threshold-from)"


def _recorded(path: Path) -> tuple[float, str]:
    """The threshold an ``eval.json`` records and how it was chosen."""
    try:
        info = json.loads(path.read_text(encoding="utf-8"))
        return float(info["threshold"]), str(info.get("threshold_from", "recorded"))
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ConfigError(f"{path}: no decision threshold in it ({exc})") from None
