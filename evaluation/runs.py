"""A trained run's detector: what testing, fairness protocols and metamorphic testing load."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fairforensics.detectors import Detector, load_detector_file
from fairforensics.preprocessing.rundir import RunDir


def load_run(run_dir: str | Path, weights: str = "best") -> tuple[Detector, dict[str, Any]]:
    """The trained detector of a run dir and its resolved config (the ``config.yaml`` that
    ``training.Trainer.from_run`` also resumes from, read by :meth:`RunDir.read_config`).

    ``weights``: ``"best"``, ``"last"`` or a path to a ``.pt`` file.
    """
    run = RunDir(run_dir)
    cfg = run.read_config()
    detector = load_detector_file(cfg["detector"], run.checkpoint(weights), cfg.get("model"))
    return detector, cfg
