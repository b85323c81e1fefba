"""The shortcut audit's outputs: ``audit.json``, ``audit.md``, ``audit.png``/``.pdf`` and the
out-of-fold scores as a predictions file (``predictions/<dataset>.csv``: the ``metadata``
sanity baseline of a leaderboard, one row per frame of the index, each with its video's score).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import numpy as np

from fairforensics.evaluation.audit.shortcut import WARN_AUC, AuditResult
from fairforensics.evaluation.predictions import Predictions, write_predictions
from fairforensics.evaluation.table_writer import markdown_text
from fairforensics.preprocessing.files import atomic_write_text, write_json

log = logging.getLogger(__name__)

#: where the predictions file lies under the output folder (``<dataset>`` filled in)
PREDICTIONS = "predictions/{dataset}.csv"


def audit_predictions(result: AuditResult, dataset: str) -> Predictions:
    """The out-of-fold scores as a predictions file: every frame of a video scores its video."""
    cols: dict[str, list[Any]] = {k: [] for k in ("video_id", "frame", "label", "score", "method")}
    attrs: list[dict[str, str]] = []
    for video, score in zip(result.table.videos, result.scores, strict=True):
        frames = video.frame_indices or list(range(len(video.frames)))
        for frame in frames:
            cols["video_id"].append(video.id)
            cols["frame"].append(frame)
            cols["label"].append(video.label)
            cols["score"].append(float(score))
            cols["method"].append(video.method)
            attrs.append(video.attributes)
    names = sorted({k for a in attrs for k in a})
    return Predictions(
        dataset=[dataset] * len(cols["label"]),
        **cols,
        attributes={k: [a.get(k, "") for a in attrs] for k in names},
    )


def _cell(entry: dict[str, Any]) -> str:
    if entry["auc"] is None:
        return "n/a"
    low, high = entry["ci"]
    defined = low is not None and np.isfinite(low)
    ci = f" [{low:.2f}, {high:.2f}]" if defined else " [-]"
    mark = " **!**" if defined and entry["auc"] > WARN_AUC else ""
    return f"{entry['auc']:.2f}{ci}{mark}"


_PLURAL = {"identity": "identities", "video": "videos"}


def audit_markdown(summary: dict[str, Any]) -> str:
    """``audit.md``: AUC [95 % interval] of all features and of each alone (rows), for all videos,
    per method and per split (columns); then the warnings, skipped files and unread features."""
    parts = [("all videos", summary)]
    parts += [(f"method {m}", p) for m, p in summary["by_method"].items()]
    parts += [(f"split {s}", p) for s, p in summary["by_split"].items()]
    rows = [["all features", *(_cell(p["overall"]) for _, p in parts)]]
    rows += [
        [name, *(_cell(p["features"][name]) for _, p in parts)] for name in summary["features"]
    ]
    cv = summary["cv"]
    lines = [
        f"# Shortcut audit: {summary['dataset']}",
        "",
        f"Can the label be predicted without looking at a face? A {cv['classifier']} learns it from "
        f"the file metadata and the crops' properties, {cv['folds']}-fold cross-validated with "
        f"{_PLURAL[cv['groups']]} kept apart ({cv['n_groups']} groups); AUC of the out-of-fold "
        f"scores with its 95 % bootstrap interval over videos ({cv['n_boot']} replicates; [-]: "
        f"fewer than 5 videos of a class). 0.5: no shortcut; **!** marks an AUC above {WARN_AUC} "
        "with an interval.",
        "",
        f"Videos audited: {summary['n_videos']}; skipped: {summary['n_skipped']}.",
        "",
        markdown_text(["feature", *(name for name, _ in parts)], rows, lambda i, j, v: v),
        "",
    ]
    if summary["warnings"]:
        lines += ["## Warnings", "", *(f"- {w}" for w in summary["warnings"]), ""]
    else:
        lines += [f"No AUC above {WARN_AUC}.", ""]
    if summary["unavailable"]:
        lines += ["## Features not read", ""]
        lines += [f"- {name}: {why}" for name, why in summary["unavailable"].items()]
        lines.append("")
    if summary["skipped"]:
        lines += ["## Skipped", ""]
        lines += [f"- {s['method']}/{s['id']}: {s['reason']}" for s in summary["skipped"]]
        lines.append("")
    lines += [f"Out-of-fold scores (the `metadata` baseline): `{summary['predictions']}`", ""]
    return "\n".join(lines)


def audit_figure(summary: dict[str, Any], stem: Path) -> list[Path]:
    """Horizontal bars: the AUC of all features and of each alone, with their intervals."""
    from matplotlib.figure import Figure

    from fairforensics.evaluation.plots import save_figure

    entries = [("all features", summary["overall"]), *summary["features"].items()]
    names = [n for n, _ in entries]
    auc = np.array([np.nan if e["auc"] is None else e["auc"] for _, e in entries], dtype=float)
    low = np.array([np.nan if e["ci"][0] is None else e["ci"][0] for _, e in entries], dtype=float)
    high = np.array([np.nan if e["ci"][1] is None else e["ci"][1] for _, e in entries], dtype=float)
    fig = Figure(figsize=(6, 0.35 * len(entries) + 1.2))
    ax = fig.add_subplot()
    pos = np.arange(len(entries))[::-1]
    colours = ["tab:red" if a > WARN_AUC else "tab:blue" for a in np.nan_to_num(auc)]
    ax.barh(pos, np.nan_to_num(auc), color=colours)
    err = np.vstack([auc - low, high - auc])
    ok = np.isfinite(err).all(axis=0)
    ax.errorbar(auc[ok], pos[ok], xerr=err[:, ok], fmt="none", ecolor="black", capsize=3)
    ax.axvline(0.5, color="grey", linestyle=":", label="no shortcut (0.5)")
    ax.axvline(WARN_AUC, color="tab:red", linestyle="--", label=f"warning ({WARN_AUC})")
    ax.set_yticks(pos, names)
    ax.set_xlim(0, 1)
    ax.set_xlabel("out-of-fold AUC (95 % interval)")
    ax.set_title(f"Shortcut audit: {summary['dataset']}")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.18), ncol=2, fontsize="small")
    return save_figure(fig, stem)


def write_audit(
    result: AuditResult, out: str | Path, *, dataset: str, source_root: str | None
) -> dict[str, Any]:
    """Write every output of the audit under ``out``; returns what ``audit.json`` holds."""
    out = Path(out)
    table = result.table
    predictions = PREDICTIONS.format(dataset=dataset)
    summary: dict[str, Any] = {
        "dataset": dataset,
        "source_root": source_root,
        "n_videos": len(table.videos),
        "n_skipped": len(table.skipped),
        **result.summary,
        "unavailable": dict(table.unavailable),
        "skipped": list(table.skipped),
        "predictions": predictions,
    }
    write_predictions(out / predictions, audit_predictions(result, dataset))
    write_json(out / "audit.json", summary)
    atomic_write_text(out / "audit.md", audit_markdown(summary))
    audit_figure(summary, out / "audit")
    return summary
