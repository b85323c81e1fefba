"""Metamorphic testing of a detector on a dataset index: what ``scripts/metamorphic.py`` calls,
for a trained run (:func:`evaluate_run`) or any loaded detector (:func:`evaluate_detector`)."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from fairforensics.configs import config_to_dict
from fairforensics.configs.crop import CropSpec, expected_crop
from fairforensics.evaluation.predict import clip_size_of
from fairforensics.evaluation.runs import load_run
from fairforensics.evaluation.thresholds import (
    DecisionThreshold,
    decision_threshold,
    warn_if_one_class,
)
from fairforensics.fairness.metamorphic.data import samples_from_index
from fairforensics.fairness.metamorphic.relations import BENCHMARK, load_relations
from fairforensics.fairness.metamorphic.report import write_report
from fairforensics.fairness.metamorphic.runner import detector_scorer, run_metamorphic
from fairforensics.preprocessing.crops import check_crop
from fairforensics.preprocessing.resolve import resolve_index, resolve_index_path

log = logging.getLogger(__name__)


def _run_data_root(run_cfg: dict[str, Any]) -> str:
    data = run_cfg.get("data") if isinstance(run_cfg, dict) else None
    if isinstance(data, dict) and data.get("data_root"):
        return str(data["data_root"])
    return str(run_cfg.get("data_root", "datasets")) if isinstance(run_cfg, dict) else "datasets"


def evaluate_detector(
    detector: Any,
    test_data: str,
    relations: str | Path | None = None,
    *,
    data_root: str | Path = "datasets",
    out_dir: str | Path | None = None,
    out_parent: str | Path = "metamorphic",
    split: str = "test",
    frame_num: int | None = None,
    batch_size: int = 32,
    device: str = "cpu",
    overrides: Iterable[str] = (),
    n_examples: int = 4,
    meta: dict[str, Any] | None = None,
    expected_crop: CropSpec | None = None,
    threshold: DecisionThreshold | None = None,
) -> dict[str, Path]:
    """Test ``detector`` on ``test_data`` under every relation and write the report.

    ``out_dir`` defaults to ``<out_parent>/<test_data name>``; ``meta`` (detector, weights) is
    written into ``metamorphic.json``, with ``model``: the detector's resolved config.
    ``expected_crop``: the crop the detector's weights were trained on; an index cropped otherwise
    is warned about once and noted in the report (as is a partial index). ``threshold`` makes the
    decisions (default: 0.5; the command passes :func:`evaluation.thresholds.decision_threshold`);
    a warning is logged when it puts every untransformed face in one class. Returns the written
    files by name.
    """
    threshold = threshold or decision_threshold()
    config, transforms = load_relations(relations, overrides)
    index_path = resolve_index_path(test_data, data_root)
    out = Path(out_dir) if out_dir is not None else Path(out_parent) / index_path.stem
    log.info("metamorphic test on %s (%s split) -> %s", index_path, split, out)
    log.info("decision threshold: %s", threshold)
    index = resolve_index(index_path, data_root)
    notes = []
    if index.partial:
        notes.append(f"{index.label}: the results are of this subset, not of the dataset")
        log.warning("%s", notes[-1])
    crop_note = check_crop(index, expected_crop)
    if crop_note:
        notes.append(crop_note)
    # the config the detector was built with (a run's, a YAML's, or the checkpoint's)
    meta = {**(meta or {}), "test_data": index.label, "model": config_to_dict(detector.cfg)}
    meta["crop"] = index.crop.to_json() if index.crop else "unknown"
    if expected_crop is not None:
        meta["expected_crop"] = expected_crop.to_json()
    result = run_metamorphic(
        samples_from_index(
            index,
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
        threshold=threshold,
    )
    warn_if_one_class(
        result.scores[BENCHMARK], threshold, f"{index_path.stem}/{split}", y_true=result.labels
    )
    return write_report(result, out, meta=meta, notes=notes)


def evaluate_run(
    run_dir: str | Path,
    test_data: str,
    relations: str | Path | None = None,
    *,
    data_root: str | Path | None = None,
    out_dir: str | Path | None = None,
    weights: str = "best",
    threshold: DecisionThreshold | None = None,
    **options: Any,
) -> dict[str, Path]:
    """:func:`evaluate_detector` with a trained run's detector (``weights``: best, last or a file).

    ``data_root`` defaults to the run config's ``data.data_root``; ``out_dir`` to
    ``<run_dir>/metamorphic/<test_data name>``; ``threshold`` to the run's validation
    threshold of ``weights`` (:func:`evaluation.thresholds.decision_threshold`); ``options`` are
    those of :func:`evaluate_detector`.
    """
    if threshold is None:
        threshold = decision_threshold(run=Path(run_dir), weights=weights)
    detector, run_cfg = load_run(run_dir, weights=weights)
    meta = {"run": str(run_dir), "detector": run_cfg.get("detector"), "weights": str(weights)}
    return evaluate_detector(
        detector,
        test_data,
        relations,
        data_root=data_root or _run_data_root(run_cfg),
        out_dir=out_dir,
        out_parent=Path(run_dir) / "metamorphic",
        meta=meta,
        expected_crop=expected_crop(run_cfg, f"{run_dir} config (crop)"),
        threshold=threshold,
        **options,
    )
