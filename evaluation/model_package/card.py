"""The model card (``README.md``) of a model package: the Hugging Face Hub's metadata (YAML
front matter with a ``model-index`` of each test set's metrics and intervals), then what the
weights expect, their threshold, how to use them and the checksums of the package's files."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import yaml

#: metrics of an evaluation folder's ``metrics/<set>.json`` shown in the card
CARD_METRICS = ("auc", "ap", "eer", "acc")


def evaluation_results(eval_dir: Path | None) -> list[dict[str, Any]]:
    """One entry per test set of an evaluation folder of ``fairforensics test``:
    ``{dataset, level, metrics: {name: value}, ci: {name: [low, high]}, ci_notes: {name: why
    no interval}, confidence}`` at the video level where it was evaluated, else the frame
    level."""
    if eval_dir is None or not (eval_dir / "metrics").is_dir():
        return []
    found = []
    for path in sorted((eval_dir / "metrics").glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        level = "video" if "video" in data else "frame"
        if level not in data:
            continue
        entry = data[level]
        found.append(
            {
                "dataset": data.get("test_data", path.stem),
                "level": level,
                "metrics": {k: entry["metrics"][k] for k in CARD_METRICS if k in entry["metrics"]},
                "ci": {k: v for k, v in (entry.get("ci") or {}).items() if k in CARD_METRICS},
                "ci_notes": {
                    k: v for k, v in (entry.get("ci_notes") or {}).items() if k in CARD_METRICS
                },
                "confidence": entry.get("confidence"),
            }
        )
    return found


def _finite(value: Any) -> bool:
    return isinstance(value, (int, float)) and math.isfinite(value)


def _model_index(name: str, results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    entries = []
    for r in results:
        metrics = []
        for metric, value in r["metrics"].items():
            if not _finite(value):
                continue
            label = f"{r['level']}-level {metric.upper()}"
            low, high = (r["ci"].get(metric) or [None, None])[:2]
            if _finite(low) and _finite(high):
                level = r.get("confidence") or 0.95
                label += f" ({level:.0%} CI {low:.4f}-{high:.4f})"
            elif r.get("ci_notes", {}).get(metric):
                label += f" (no interval: {r['ci_notes'][metric]})"
            metrics.append({"type": metric, "value": round(float(value), 6), "name": label})
        entries.append(
            {
                "task": {"type": "image-classification", "name": "Deepfake detection"},
                "dataset": {"name": r["dataset"], "type": r["dataset"], "split": "test"},
                "metrics": metrics,
            }
        )
    return [{"name": name, "results": entries}] if entries else []


def model_card(
    config: dict[str, Any],
    checksums: dict[str, str],
    results: list[dict[str, Any]],
    *,
    fairness: str | None = None,
) -> str:
    """The ``README.md`` text of a package with ``config`` (its ``config.json``),
    ``checksums`` (file name -> SHA-256), ``results`` (:func:`evaluation_results`) and
    ``fairness`` (the ``summary.md`` table of ``fairforensics fairness``, if any)."""
    name = config["detector"]
    train = [d["name"] for d in config.get("train_data") or []]
    meta: dict[str, Any] = {
        "library_name": "fairforensics",
        "tags": ["deepfake-detection", "fairforensics", name],
    }
    if train:
        meta["datasets"] = train
    index = _model_index(f"{name} ({'+'.join(train) or 'imported weights'})", results)
    if index:
        meta["model-index"] = index
    threshold = config.get("threshold")
    crop = config.get("crop")
    lines = [
        "---",
        yaml.safe_dump(meta, sort_keys=False).rstrip(),
        "---",
        "",
        f"# {name}: a FairForensics model package",
        "",
        f"Exported by fairforensics {config.get('fairforensics_version')} from "
        f"{_describe_source(config.get('source') or {})}.",
        "",
        "## What the weights expect",
        "",
        f"- input: {config.get('input_size')} px, normalised with mean {config.get('mean')} and "
        f"std {config.get('std')}",
        f"- face crop: {_describe_crop(crop)}",
        f"- face-crop settings: {config.get('face_settings_source') or 'DeepfakeBench defaults'}",
        f"- frames per video: {frames_per_video(config)}; a video's score is the "
        f"{config.get('reduce', 'mean')} of its faces'",
        "- decision threshold: "
        + (
            f"{threshold['value']:.6g} ({threshold.get('source', '')})"
            if threshold
            else "none recorded (decisions use 0.5 and say so)"
        ),
        f"- calibration: {_describe_calibration(config)}",
        "- training data: "
        + (", ".join(_describe_data(d) for d in config.get("train_data") or []) or "unknown"),
        "- validation data: "
        + (", ".join(_describe_data(d) for d in config.get("val_data") or []) or "unknown"),
        "",
        "## Results",
        "",
    ]
    if results:
        lines += ["| test set | level | " + " | ".join(CARD_METRICS) + " |"]
        lines += ["|---|---|" + "---|" * len(CARD_METRICS)]
        for r in results:
            cells = [_cell(r, m) for m in CARD_METRICS]
            lines.append(f"| {r['dataset']} | {r['level']} | " + " | ".join(cells) + " |")
    else:
        lines.append("No evaluation was exported with these weights.")
    if fairness:
        lines += ["", "## Fairness", "", fairness.strip()]
    lines += [
        "",
        "## Use",
        "",
        "```bash",
        "fairforensics detect VIDEO_OR_IMAGE --model THIS_FOLDER_OR_hf:OWNER/NAME",
        "fairforensics test --model THIS_FOLDER_OR_hf:OWNER/NAME --test-data DATASET",
        "```",
        "",
        "## Files",
        "",
        "| file | SHA-256 |",
        "|---|---|",
        *(f"| {f} | {sha} |" for f, sha in checksums.items()),
        "",
    ]
    return "\n".join(lines)


def frames_per_video(config: dict[str, Any]) -> str:
    """The frames of a video that ``detect`` and ``test`` score with the package: ``frame_num``
    of those the face-crop settings sample (``sampling``; DeepfakeBench's 32 when not
    recorded), all of them when ``frame_num`` is unset."""
    sampling = (config.get("face_settings") or {}).get("sampling") or {}
    mode = sampling.get("mode", "fixed_num_frames")
    if mode == "fixed_num_frames":
        sampled = int(sampling.get("num_frames", 32))
        what = f"{sampled} sampled evenly"
    elif mode == "clips":
        sampled = int(sampling.get("num_clips", 1)) * int(sampling.get("clip_size", 1))
        what = f"{sampled}: {sampling.get('num_clips')} clips of {sampling.get('clip_size')}"
    else:
        return f"every {sampling.get('stride')}th frame, {config.get('frame_num') or 'all'} scored"
    frame_num = config.get("frame_num")
    if not frame_num or frame_num >= sampled:
        return what
    return f"{frame_num} of the {what}"


def _cell(result: dict[str, Any], metric: str) -> str:
    value = result["metrics"].get(metric)
    if not _finite(value):
        return "-"
    low, high = (result["ci"].get(metric) or [None, None])[:2]
    ci = f" [{low:.4f}, {high:.4f}]" if _finite(low) and _finite(high) else " (no interval)"
    return f"{value:.4f}{ci}"


def _describe_calibration(config: dict[str, Any]) -> str:
    from fairforensics.evaluation.calibration.source import (
        describe_calibration,
        package_calibration,
    )

    found = package_calibration(config, "config.json")
    if found is None:
        return "none (scores are the detector's own)"
    data = "+".join(found.fitted_on.get("val_data") or []) or "its validation data"
    return (
        f"{describe_calibration(found)}, fitted on {data} (`--calibration run` of test applies "
        "it; detect prints the calibrated probability beside the score)"
    )


def _describe_crop(crop: dict[str, Any] | None) -> str:
    if not crop:
        return "not recorded (DeepfakeBench's, margin 1.3, 256 px)"
    return f"{crop['method']}, scale {crop['scale']:g}, {crop['size']} px"


def _describe_data(entry: dict[str, Any]) -> str:
    sha = entry.get("index_sha256")
    return f"{entry['name']} (index SHA-256 {sha[:12]})" if sha else f"{entry['name']}"


def _describe_source(source: dict[str, Any]) -> str:
    if source.get("kind") == "run":
        return f"run {source.get('run')} ({source.get('weights')} checkpoint)"
    preset = source.get("preset")
    return f"weights file {source.get('file')}" + (f" (preset {preset})" if preset else "")
