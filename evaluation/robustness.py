"""Robustness evaluation: a detector on DeeperForensics-1.0's seven perturbations at five levels.

For each test set every video is decoded once, its faces found once on the clean frames, and
each case (type x level, 35 by default) perturbs the whole frames before the crop
(:mod:`preprocessing.perturbed_faces`; crops mode for indexes of crops only). The crops of all
cases are scored in one pass of the detector, with the test loader's resize and normalisation.
An output folder holds::

    robustness_run.json             the run: detector, weights, test sets, settings, threshold,
                                    robust AUC (what the leaderboard reads)
    predictions/<set>/<case>.csv    one predictions file per case (clean, CS_1, ..., VC_5)
    robustness.{csv,md,json}        one row per detector x test set x case (clean: level 0)
                                    with AUC, AP, EER, ACC and their bootstrap intervals
    robustness_table.{csv,md,json}  the papers' layout: AUC per type averaged over the levels,
                                    and the average of all cases
    robustness_levels.{csv,md,json} AUC per type and level
    figures/robustness_auc.png|pdf  AUC against level per type
    timing.json                     CPU seconds per stage and per video
    manifest.json                   videos left out, with the reason
    report.html

One seed gives the same bytes in every file but ``timing.json`` (measured time): series and
colours follow the case order, figures carry no date, and the report's date is
``SOURCE_DATE_EPOCH`` when that is set (:func:`evaluation.report.write_report`). Known
exception: VC's x264 re-encoding varies slightly from a process's second encoding on
(docs/evaluation.md).

The papers (LipForensics, RealForensics, FTCN, AltFreezing) report video-level AUC per type,
averaged over the five levels; so does ``robustness_table`` (and the frame level beside it).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np

from fairforensics.configs import ConfigError, config_to_dict
from fairforensics.configs.crop import crop_from_mapping
from fairforensics.evaluation import plots
from fairforensics.evaluation.confidence import few_units_note
from fairforensics.evaluation.predict import clip_size_of, predict_images
from fairforensics.evaluation.predictions import (
    Predictions,
    read_predictions,
    write_predictions,
)
from fairforensics.evaluation.provenance import prediction_provenance
from fairforensics.evaluation.report import Section, write_report
from fairforensics.evaluation.results import slug
from fairforensics.evaluation.scoring import evaluate_levels, video_codes
from fairforensics.evaluation.settings import TestConfig
from fairforensics.evaluation.tables import Table
from fairforensics.preprocessing.crops import check_crop
from fairforensics.preprocessing.device import resolve_device
from fairforensics.preprocessing.files import jsonable, write_json
from fairforensics.preprocessing.index import DatasetIndex
from fairforensics.preprocessing.perturbations import (
    LEVELS,
    TYPES,
    Perturbation,
    check_cases,
)
from fairforensics.preprocessing.perturbed_faces import (
    CLEAN,
    VideoCases,
    crop_cases,
    frame_cases,
    has_sources,
)
from fairforensics.preprocessing.resolve import resolve_index, resolve_index_path

log = logging.getLogger(__name__)

METRICS = ("auc", "ap", "eer", "acc")
#: The run's information (detector, weights, settings, robust AUC) in an output folder;
#: ``robustness.json`` is the per-case table's JSON.
RUN_INFO = "robustness_run.json"


@dataclass
class RobustnessConfig:
    """What ``fairforensics robustness`` perturbs and how."""

    types: list[str] = field(default_factory=lambda: list(TYPES))
    levels: list[int] = field(default_factory=lambda: list(LEVELS))
    faces: Literal["clean", "detect"] = "clean"  # the clean frames' faces, or found again
    mode: Literal["auto", "frames", "crops"] = "auto"  # auto: frames when sources are known
    source_root: str | None = None  # where the index's ``source`` paths lie (preprocess root)
    seed: int = 0
    frame_size: list[int] = field(default_factory=lambda: [720, 1280])  # crops mode, BW
    crop_side: float | None = None  # crops mode, BW: frame pixels a crop covers (None: its size)

    def __post_init__(self) -> None:
        self.types, self.levels = check_cases(self.types, self.levels)
        if self.faces not in ("clean", "detect"):
            raise ConfigError(f"faces must be clean or detect, got {self.faces!r}")
        if self.mode not in ("auto", "frames", "crops"):
            raise ConfigError(f"mode must be auto, frames or crops, got {self.mode!r}")
        if len(self.frame_size) != 2 or min(self.frame_size) < 16:
            raise ConfigError(f"frame_size must be [height, width], got {self.frame_size}")

    @property
    def cases(self) -> list[Perturbation]:
        return [Perturbation(t, lv) for t in self.types for lv in sorted(set(self.levels))]


def case_slug(case: str) -> str:
    """``GB:3`` -> ``GB_3`` (file names)."""
    return case.replace(":", "_")


def _split_case(case: str) -> tuple[str, int]:
    if case == CLEAN:
        return CLEAN, 0
    kind, level = case.split(":")
    return kind, int(level)


@dataclass
class _SetResult:
    """One test set: the predictions of every case and what was left out."""

    name: str
    mode: str
    predictions: dict[str, Predictions]
    failed: dict[str, int]  # case -> videos without a score in that case
    skipped: list[dict[str, str]]
    timing: dict[str, float]
    videos: int


def _video_cases(
    index: DatasetIndex, video: Any, mode: str, rcfg: RobustnessConfig, test: TestConfig,
    clip_size: int | None, timing: dict[str, float], on_stage: Callable[[str], None] | None = None,
) -> VideoCases:  # fmt: skip
    common = {"frame_num": test.frame_num, "clip_size": clip_size, "seed": rcfg.seed}
    common["on_stage"] = on_stage
    if mode == "frames":
        return frame_cases(
            index, video, rcfg.source_root, rcfg.cases, faces=rcfg.faces, timing=timing, **common
        )
    return crop_cases(
        index,
        video,
        rcfg.cases,
        frame_size=tuple(rcfg.frame_size),
        crop_side=rcfg.crop_side,
        timing=timing,
        **common,
    )


def _rows(index: DatasetIndex, video: Any, units: list, scores: np.ndarray, unit: str) -> dict:
    n = len(units)
    return {
        "dataset": [index.dataset] * n,
        "video_id": [video.id] * n,
        "frame": [u.frame for u in units],
        "label": [video.label] * n,
        "score": scores.tolist(),
        "method": [video.method] * n,
        "unit": [unit] * n,
        "attributes": [dict(video.attributes)] * n,
    }


def _as_predictions(parts: list[dict]) -> Predictions:
    cols: dict[str, list] = {k: [] for k in ("dataset", "video_id", "frame", "label", "score")}
    cols |= {"method": [], "unit": []}
    attrs: list[dict[str, str]] = []
    for part in parts:
        for k in cols:
            cols[k].extend(part[k])
        attrs.extend(part["attributes"])
    names = sorted({k for a in attrs for k in a})
    return Predictions(**cols, attributes={k: [a.get(k, "") for a in attrs] for k in names})


def predict_cases(
    detector: Any,
    index: DatasetIndex,
    rcfg: RobustnessConfig,
    test: TestConfig,
    device: str = "cpu",
    progress: bool = True,
) -> _SetResult:
    """Every case's predictions on the test split of ``index`` (module docstring)."""
    from tqdm import tqdm

    mode = rcfg.mode
    if mode == "auto":
        mode = "frames" if has_sources(index, rcfg.source_root) else "crops"
    elif mode == "frames" and not has_sources(index, rcfg.source_root):
        raise ConfigError(
            f"{index.dataset}: frames mode needs --source-root and an index made by preprocess "
            "(face settings, and each video's source and frame numbers); use --mode crops"
        )
    if mode == "frames" and rcfg.source_root and not Path(rcfg.source_root).is_dir():
        raise ConfigError(f"--source-root {rcfg.source_root}: not a folder")
    clip_size = clip_size_of(detector)
    unit = "frame" if clip_size is None else "clip"
    names = [CLEAN] + [str(c) for c in rcfg.cases]
    parts: dict[str, list[dict]] = {n: [] for n in names}
    failed = dict.fromkeys(names, 0)
    skipped: list[dict[str, str]] = []
    timing: dict[str, float] = {}
    videos = index.split(test.split)
    if not videos:
        raise ValueError(f"{index.dataset}: split {test.split!r} has no videos")
    bar = tqdm(videos, desc=f"robustness {index.dataset}", disable=None if progress else True)
    for number, video in enumerate(bar, 1):
        started = time.monotonic()
        vid = f"{video.method}/{video.id}"

        def stage(what: str, vid: str = vid) -> None:  # the bar shows the video and its case
            bar.set_postfix_str(f"{vid}: {what}")

        try:
            cases = _video_cases(index, video, mode, rcfg, test, clip_size, timing, stage)
        except (OSError, ValueError, RuntimeError) as exc:
            log.warning("%s/%s: skipped: %s", video.method, video.id, exc)
            skipped.append({"video": f"{video.method}/{video.id}", "reason": str(exc)})
            continue
        if not cases.units.get(CLEAN):
            skipped.append({"video": f"{video.method}/{video.id}", "reason": "no clean crop"})
            continue
        flat = [(n, u) for n in names for u in cases.units.get(n, [])]
        images = [u.crops[0] if clip_size is None else np.stack(u.crops) for _, u in flat]
        t0 = time.process_time()
        scores = predict_images(detector, images, batch_size=test.batch_size, device=device)
        timing["model"] = timing.get("model", 0.0) + time.process_time() - t0
        start = 0
        for n in names:
            units = cases.units.get(n, [])
            if not units:
                failed[n] += 1
                if n in cases.failed:
                    log.info("%s/%s %s: %s", video.method, video.id, n, cases.failed[n])
                continue
            parts[n].append(_rows(index, video, units, scores[start : start + len(units)], unit))
            start += len(units)
        if bar.disable:  # no bar (not a terminal, or --no-progress): a line per video
            log.info("%s: video %d of %d (%s, %d cases) done in %.1f s", index.dataset, number,
                     len(videos), vid, len(names) - 1, time.monotonic() - started)  # fmt: skip
    done = len(videos) - len(skipped)
    if done == 0:
        raise ValueError(f"{index.dataset}: no video could be evaluated (see the log)")
    predictions = {n: _as_predictions(p) for n, p in parts.items() if p}
    return _SetResult(index.dataset, mode, predictions, failed, skipped, timing, done)


def _metric_columns(levels: Sequence[str]) -> list[str]:
    cols = []
    for level in levels:
        for m in METRICS:
            cols += [f"{level}_{m}", f"{level}_{m}_low", f"{level}_{m}_high"]
    return cols


def robustness_rows(
    detector: str, name: str, result: _SetResult, test: TestConfig
) -> list[dict[str, Any]]:
    """One row per case (clean first, level 0) with every metric and its interval, its real
    and fake videos, and a note with the reason of each interval withheld."""
    rows = []
    for case, pred in result.predictions.items():
        kind, level = _split_case(case)
        per = evaluate_levels(
            pred,
            test.levels,
            reduce=test.reduce,
            threshold=test.threshold,
            fpr_targets=(),
            n_boot=test.n_boot,
            confidence=test.confidence,
            seed=test.seed,
        )
        row: dict[str, Any] = {
            "detector": detector,
            "test_data": name,
            "type": kind,
            "level": level,
            "videos": per[test.levels[0]]["n_videos"],
            **dict(zip(("real_videos", "fake_videos"), class_videos(pred), strict=True)),
            "failed": result.failed.get(case, 0),
            "rows": len(pred),
        }
        for lv in test.levels:
            for m in METRICS:
                low, high = per[lv].get("ci", {}).get(m, [np.nan, np.nan])
                row |= {f"{lv}_{m}": per[lv]["metrics"][m], f"{lv}_{m}_low": low}
                row[f"{lv}_{m}_high"] = high
        notes = {
            note: None for lv in test.levels for m, note in per[lv].get("ci_notes", {}).items()
            if m in METRICS
        }  # fmt: skip
        row["note"] = "; ".join(f"no interval: {n}" for n in notes)
        rows.append(row)
    return rows


def class_videos(pred: Predictions) -> tuple[int, int]:
    """The real and the fake videos of ``pred``."""
    codes, _ = video_codes(pred)
    _, first = np.unique(codes, return_index=True)
    labels = np.asarray(pred.label)[first]
    return int((labels == 0).sum()), int((labels == 1).sum())


def _counts(mine: list[dict[str, Any]]) -> list[Any]:
    """The clean case's real and fake videos (the perturbed cases': fewer when some failed)."""
    clean = next((r for r in mine if r["type"] == CLEAN), None)
    return [None, None] if clean is None else [clean["real_videos"], clean["fake_videos"]]


def _few_videos_note(rows: list[dict[str, Any]]) -> str:
    """For a table's title: each test set with too few videos of a class for an interval (the
    small-group rule, :func:`evaluation.confidence.too_few_units`), where its AUCs are 0, 1 or
    near them by chance; ``""`` when none."""
    notes = []
    for (det, name), counts in _by_set(rows).items():
        why = [few_units_note(n, f"{c} videos") for c, n in zip(("real", "fake"), counts,
                                                                  strict=True) if n is not None]  # fmt: skip
        why = [w for w in why if w]
        if why:
            notes.append(f"{det} on {name}: {', '.join(why)}")
    if not notes:
        return ""
    why = "; ".join(notes)
    return f"; too few videos for an interval, so these AUCs can be 0 or 1 by chance: {why}"


def _by_set(rows: list[dict[str, Any]]) -> dict[tuple[str, str], list[Any]]:
    sets = dict.fromkeys((r["detector"], r["test_data"]) for r in rows)
    return {
        key: _counts([r for r in rows if (r["detector"], r["test_data"]) == key]) for key in sets
    }


def _table(rows: list[dict[str, Any]], columns: list[str], title: str) -> Table:
    return Table(columns, [[r.get(c) for c in columns] for r in rows], title=title)


def papers_table(rows: list[dict[str, Any]], level: str) -> Table:
    """LipForensics' layout: per detector and test set, clean AUC, each type's AUC averaged over
    its levels, and the average over every perturbed case."""
    key = f"{level}_auc"
    types = [t for t in TYPES if any(r["type"] == t for r in rows)]
    out = []
    for det, name in dict.fromkeys((r["detector"], r["test_data"]) for r in rows):
        mine = [r for r in rows if r["detector"] == det and r["test_data"] == name]
        clean = next((r[key] for r in mine if r["type"] == CLEAN), np.nan)
        per = [np.mean([r[key] for r in mine if r["type"] == t]) for t in types]
        every = [r[key] for r in mine if r["type"] != CLEAN]
        average = float(np.mean(every)) if every else np.nan
        out.append([det, name, clean, *per, average, *_counts(mine)])
    return Table(
        ["detector", "test_data", "clean", *types, "average", "real", "fake"],
        out,
        title=f"{level}-level AUC under perturbation (each type: mean over its levels; "
        "average: mean over every perturbed case; real, fake: test videos of each class)"
        + _few_videos_note(rows),
    )


def levels_table(rows: list[dict[str, Any]], level: str) -> Table:
    """AUC per type (columns) and level (rows), per detector and test set."""
    key = f"{level}_auc"
    types = [t for t in TYPES if any(r["type"] == t for r in rows)]
    out = []
    for det, name in dict.fromkeys((r["detector"], r["test_data"]) for r in rows):
        mine = {
            (r["type"], r["level"]): r[key]
            for r in rows
            if (r["detector"], r["test_data"]) == (det, name)
        }
        lvls = sorted({lv for t, lv in mine if t != CLEAN})
        clean = mine.get((CLEAN, 0), np.nan)
        counts = _by_set(rows)[(det, name)]
        out.append([det, name, 0, *[clean] * len(types), *counts])
        out += [
            [det, name, lv, *[mine.get((t, lv), np.nan) for t in types], *counts] for lv in lvls
        ]
    return Table(
        ["detector", "test_data", "level", *types, "real", "fake"],
        out,
        title=f"{level}-level AUC per perturbation type and level (level 0: clean; real, fake: "
        "test videos of each class)" + _few_videos_note(rows),
    )


def robustness_figure(rows: list[dict[str, Any]], level: str, stem: Path) -> list[Path]:
    """AUC against level, one line per type (starting at the clean AUC), one panel per test set;
    the types in the order of the rows (the configured case order), so that lines and colours
    are the same in every run."""
    key = f"{level}_auc"
    types = list(dict.fromkeys(x["type"] for x in rows if x["type"] != CLEAN))
    panels: dict[str, dict[str, list]] = {}
    for r in rows:
        panel = panels.setdefault(f"{r['detector']} on {r['test_data']}", {})
        point = (r["level"], r[key], r[f"{key}_low"], r[f"{key}_high"])
        if r["type"] == CLEAN:
            for t in types:
                panel.setdefault(t, []).append(point)
        else:
            panel.setdefault(r["type"], []).append(point)
    return plots.by_level(panels, stem, f"{level}-level AUC", title="AUC under perturbation")


def robust_auc(rows: list[dict[str, Any]], level: str) -> float:
    """The mean AUC over every perturbed case (the leaderboard's ``robust AUC``)."""
    values = [r[f"{level}_auc"] for r in rows if r["type"] != CLEAN]
    return float(np.mean(values)) if values else float("nan")


def _provenance(
    producer: Mapping[str, Any], index_path: Path, test: TestConfig, rcfg: RobustnessConfig
) -> dict[str, Any]:
    prov = prediction_provenance(producer, index_path, test)
    prov["robustness"] = asdict(rcfg)
    return prov


def read_cases(folder: str | Path) -> tuple[dict[str, Any], dict[str, Predictions]]:
    """``cases.json`` of a test set's predictions folder and its case predictions."""
    folder = Path(folder)
    try:
        saved = json.loads((folder / "cases.json").read_text(encoding="utf-8"))
        files = {c: folder / f"{case_slug(c)}.csv" for c in saved["cases"]}
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"{folder}: no readable cases.json of a robustness run ({exc})") from None
    return saved, {c: read_predictions(f) for c, f in files.items()}


def _cached(folder: Path, provenance: dict) -> _SetResult | None:
    """The case predictions in ``folder`` when ``cases.json`` records the same provenance."""
    try:
        saved, predictions = read_cases(folder)
    except (OSError, ValueError):
        return None
    current = json.loads(json.dumps(jsonable(provenance), default=str))
    if saved.get("provenance") != current:
        return None
    return _SetResult(
        saved["test_data"], saved["mode"], predictions, saved["failed"], saved["skipped"], {},
        saved["videos"],
    )  # fmt: skip


def _save(folder: Path, provenance: dict, result: _SetResult) -> None:
    for case, pred in result.predictions.items():
        write_predictions(folder / f"{case_slug(case)}.csv", pred)
    record = {
        "provenance": provenance,
        "test_data": result.name,
        "mode": result.mode,
        "cases": list(result.predictions),
        "failed": result.failed,
        "skipped": result.skipped,
        "videos": result.videos,
    }
    write_json(folder / "cases.json", record, indent=2)


def run_robustness(
    detector: Any,
    detector_name: str,
    test: TestConfig,
    rcfg: RobustnessConfig,
    out_dir: str | Path,
    *,
    train_data: str = "",
    meta: Mapping[str, Any] | None = None,
    extra_sections: Sequence[Section | tuple] = (),
    overwrite: bool = False,
    progress: bool = True,
) -> list[dict[str, Any]]:
    """Evaluate ``detector`` under every case on each ``test.test_data`` set; writes the folder
    of the module docstring and returns the rows of ``robustness.csv``.

    A test set whose case predictions are in ``out_dir`` with the same provenance (weights,
    index, test and robustness settings) is not predicted again, unless ``overwrite``."""
    if not test.test_data:
        raise ConfigError("no test sets: pass --test-data NAME ...")
    out = Path(out_dir)
    device = str(resolve_device(test.device))
    root = Path(test.data_root or "datasets")
    producer = {
        "detector": detector_name,
        **{k: (meta or {}).get(k) for k in ("weights_file", "weights_sha256", "model")},
    }
    rows: list[dict[str, Any]] = []
    skipped: list[dict[str, str]] = []
    timing: dict[str, Any] = {}
    modes: dict[str, str] = {}
    expected = crop_from_mapping((meta or {}).get("expected_crop"), "expected_crop")
    crop_notes: dict[str, str] = {}  # as test.py: a set cropped otherwise than the weights expect
    partial: dict[str, str] = {}  # as test.py: tables name a partial set "<name> (partial: ...)"
    for name in test.test_data:
        index_path = resolve_index_path(name, root)
        index = resolve_index(name, root)
        if index.partial:
            partial[name] = index.partial
        note = check_crop(index, expected)
        if note:
            crop_notes[name] = note
        folder = out / "predictions" / slug(name)
        provenance = _provenance(producer, index_path, test, rcfg)
        cached = None if overwrite else _cached(folder, provenance)
        if cached is not None:
            log.info("%s: reusing the case predictions in %s (same provenance)", name, folder)
            result = cached
        else:
            result = predict_cases(detector, index, rcfg, test, device, progress)
            _save(folder, provenance, result)
            timing[name] = {
                "videos": result.videos,
                "cpu_seconds": result.timing,
                "cpu_seconds_per_video": {
                    k: v / max(result.videos, 1) for k, v in result.timing.items()
                },
            }
        modes[name] = result.mode
        skipped += [{"test_data": name, **s} for s in result.skipped]
        rows += robustness_rows(detector_name, index.label, result, test)
    if crop_notes:
        meta = {**(meta or {}), "crop_notes": crop_notes}
    if partial:
        meta = {**(meta or {}), "partial": partial}
    _write_outputs(rows, out, test, rcfg, detector_name, train_data, meta, modes, skipped,
                   timing, extra_sections)  # fmt: skip
    return rows


def threshold_text(value: float, source: str) -> str:
    """``0.64 (validation threshold of ...)``; a source that starts with the value already
    (``0.5 (default)``, a :class:`evaluation.thresholds.DecisionThreshold`'s) as it is."""
    shown = f"{value:.6g}"
    return source if source.startswith((shown, f"{value:g}")) else f"{shown} ({source})"


def _write_outputs(
    rows: list[dict[str, Any]], out: Path, test: TestConfig, rcfg: RobustnessConfig,
    detector_name: str, train_data: str, meta: Mapping[str, Any] | None, modes: dict[str, str],
    skipped: list[dict[str, str]], timing: dict[str, Any], extra_sections: Sequence,
) -> None:  # fmt: skip
    columns = ["detector", "test_data", "type", "level", "videos", "real_videos", "fake_videos"]
    columns += ["failed", "rows", *_metric_columns(test.levels), "note"]
    conf = (
        f"{test.confidence:.0%} bootstrap intervals over videos" if test.n_boot else "no intervals"
    )
    main = _table(rows, columns, f"Metrics per perturbation case ({conf})")
    main.write(out / "robustness")
    level = "video" if "video" in test.levels else test.levels[0]
    items: list[Any] = []
    for lv in [level] + [x for x in test.levels if x != level]:
        table = papers_table(rows, lv)
        table.write(out / ("robustness_table" if lv == level else f"robustness_table_{lv}"))
        items.append(table)
    per_level = levels_table(rows, level)
    per_level.write(out / "robustness_levels")
    items.append(per_level)
    if test.plots:
        items.append(robustness_figure(rows, level, out / "figures" / "robustness_auc")[0])
    info = {
        "detector": detector_name,
        "train_data": train_data,
        "test_data": list(test.test_data),
        **(meta or {}),
        "modes": modes,
        "robust_auc": {lv: robust_auc(rows, lv) for lv in test.levels},
        "threshold": test.threshold,
        "robustness": config_to_dict(rcfg),
        "settings": config_to_dict(test),
    }
    info.setdefault("threshold_from", "the test settings (key threshold; default 0.5)")
    # robustness.json is the per-case table's JSON (main.write above); the run's own file:
    write_json(out / RUN_INFO, info, indent=2)
    write_json(out / "manifest.json", {"skipped": skipped}, indent=2)
    if timing:
        write_json(out / "timing.json", timing, indent=2)
    threshold = threshold_text(test.threshold, info["threshold_from"])
    text = (
        f"DeeperForensics-1.0's perturbations ({len(rcfg.cases)} cases) applied to "
        + ("whole decoded frames before the crop" if "frames" in modes.values() else "the crops")
        + f", faces: {rcfg.faces}; decision threshold {threshold}."
    )
    text += "".join(f" Note: {n}" for n in info.get("crop_notes", {}).values())
    header = {"detector": detector_name, "weights": str(info.get("weights_file", "-"))}
    header["decision threshold"] = threshold
    if test.report:
        write_report(
            out / "report.html",
            f"Robustness of {detector_name}",
            [Section("Robustness", items, text=text)],
            extra_sections,
            meta={**header, "test data": ", ".join(test.test_data)},
        )
