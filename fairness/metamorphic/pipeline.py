"""Metamorphic testing of a trained run: what ``scripts/metamorphic.py`` calls."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from fairforensics.evaluation.predict import clip_size_of
from fairforensics.evaluation.runs import load_run
from fairforensics.fairness.metamorphic.data import samples_from_index
from fairforensics.fairness.metamorphic.relations import load_relations
from fairforensics.fairness.metamorphic.report import write_report
from fairforensics.fairness.metamorphic.runner import detector_scorer, run_metamorphic
from fairforensics.preprocessing.resolve import resolve_index, resolve_index_path

log = logging.getLogger(__name__)


def _run_data_root(run_cfg: dict[str, Any]) -> str:
    data = run_cfg.get("data") if isinstance(run_cfg, dict) else None
    if isinstance(data, dict) and data.get("data_root"):
        return str(data["data_root"])
    return str(run_cfg.get("data_root", "datasets")) if isinstance(run_cfg, dict) else "datasets"


def evaluate_run(
    run_dir: str | Path,
    test_data: str,
    relations: str | Path | None = None,
    *,
    data_root: str | Path | None = None,
    out_dir: str | Path | None = None,
    weights: str = "best",
    split: str = "test",
    frame_num: int | None = None,
    batch_size: int = 32,
    device: str = "cpu",
    overrides: Iterable[str] = (),
    n_examples: int = 4,
) -> dict[str, Path]:
    """Load a run's detector, test it on ``test_data`` under every relation, write the report.

    ``data_root`` defaults to the run config's ``data.data_root``; ``out_dir`` to
    ``<run_dir>/metamorphic/<test_data name>``. Returns the written files by name.
    """
    config, transforms = load_relations(relations, overrides)
    detector, run_cfg = load_run(run_dir, weights=weights)
    root = data_root or _run_data_root(run_cfg)
    index_path = resolve_index_path(test_data, root)
    out = Path(out_dir) if out_dir is not None else Path(run_dir) / "metamorphic" / index_path.stem
    log.info("metamorphic test of %s on %s (%s split) -> %s", run_dir, index_path, split, out)
    result = run_metamorphic(
        samples_from_index(
            resolve_index(index_path, root),
            split,
            frame_num=frame_num,
            max_yaw=config.max_yaw,
            clip_size=clip_size_of(detector),  # a video detector: makeup on every clip frame
        ),
        config,
        transforms,
        detector_scorer(detector, batch_size=batch_size, device=device),
        chunk_size=max(batch_size, 1),
        n_examples=n_examples,
    )
    return write_report(result, out)
