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
    mark = " †" if entry["note"] else " **!**" if entry["auc"] > WARN_AUC else ""
    return f"{entry['auc']:.2f}{mark}"


_PLURAL = {"identity": "identities", "video": "videos"}


def not_read_line(summary: dict[str, Any]) -> str:
    """The first line of an audit that could not read the file metadata (``""`` when it did)."""
    if summary["files_read"]:
        return ""
    why = summary["unavailable"].get("width", "no source root")
    read = ", ".join(summary["features"])
    return (
        f"The file metadata was not read ({why}): only {read} was audited, so this audit says "
        "nothing about shortcuts in the files' resolution, codec, bit rate, size or length."
    )


def _above_sentence(cells: list[dict[str, Any]]) -> str:
    """What the table's AUCs above :data:`WARN_AUC` are, counted from the table's own cells."""
    above = [c for c in cells if c["auc"] is not None and c["auc"] > WARN_AUC]
    if not above:
        return f"No AUC in the table is above {WARN_AUC}."
    small = sum(bool(c["note"]) for c in above)
    warned = len(above) - small
    text = f"{len(above)} of the table's {len(cells)} AUCs are above {WARN_AUC}: "
    text += f"{warned} warned of (**!**)"
    if small:
        text += f", {small} on fewer than 5 videos of a class (†, not warned of)"
    return text + "."


def audit_markdown(summary: dict[str, Any]) -> str:
    """``audit.md``: first what was not read and the verdict; then the out-of-fold AUCs of all
    features and of each alone (rows) for all videos, per method and per split (columns), with
    each column's video counts; then the warnings, scikit-learn's warnings (each kind once),
    skipped files and unread features."""
    parts = [("all videos", summary)]
    parts += [(f"method {m}", p) for m, p in summary["by_method"].items()]
    parts += [(f"split {s}", p) for s, p in summary["by_split"].items()]
    counts = [f"{p['overall']['n_real']} / {p['overall']['n_fake']}" for _, p in parts]
    rows = [["videos (real / fake)", *counts]]
    rows += [["all features", *(_cell(p["overall"]) for _, p in parts)]]
    rows += [
        [name, *(_cell(p["features"][name]) for _, p in parts)] for name in summary["features"]
    ]
    cells = [p["overall"] for _, p in parts]
    cells += [p["features"][name] for _, p in parts for name in summary["features"]]
    cv, perm = summary["cv"], summary["permutation"]
    lines = [f"# Shortcut audit: {summary['dataset']}", ""]
    if not summary["files_read"]:
        lines += [f"**{summary['not_read']}**", ""]
    lines += [
        f"**Verdict.** {summary['verdict']}",
        "",
        f"Can the label be predicted without looking at a face? A {cv['classifier']} learns it from "
        f"the features read, {cv['folds']}-fold cross-validated with {_PLURAL[cv['groups']]} kept "
        f"apart ({cv['n_groups']} groups); each cell is the AUC of the out-of-fold scores "
        "(0.5: no shortcut). The evidence is the permutation p of the AUC of all features on all "
        f"videos: the whole cross-fitting refitted {perm['n_perm']} times with the labels "
        f"permuted within {'identities' if perm['within'] == 'identity' else 'all videos'} "
        f"(null: {perm['null']}). No interval is shown: a bootstrap of out-of-fold scores "
        "ignores that each score depends on the other videos' labels through the forests, and "
        f"was too narrow. **!**: an AUC above {WARN_AUC} on at least 5 videos of each class; "
        "†: fewer than 5 videos of a class (shown, not warned of).",
        "",
        f"Videos audited: {summary['n_videos']}; skipped: {summary['n_skipped']}.",
        "",
        markdown_text(["feature", *(name for name, _ in parts)], rows, lambda i, j, v: v),
        "",
        _above_sentence(cells),
        "",
    ]
    if summary["warnings"]:
        lines += ["## Warnings", "", *(f"- {w}" for w in summary["warnings"]), ""]
    if summary["fit_warnings"]:
        lines += ["## scikit-learn's warnings (each kind once)", ""]
        lines += [f"- {w}" for w in summary["fit_warnings"]] + [""]
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
    """Write :func:`figure` as ``stem``.png/.pdf."""
    from fairforensics.evaluation.plots import save_figure

    return save_figure(figure(summary), stem)


def figure(summary: dict[str, Any]) -> Any:
    """Horizontal bars: the out-of-fold AUC of all features and of each alone (no intervals:
    the audit has none); hatched where it rests on fewer than 5 videos of a class."""
    from matplotlib.figure import Figure
    from matplotlib.patches import Patch

    entries = [("all features", summary["overall"]), *summary["features"].items()]
    auc = np.array([np.nan if e["auc"] is None else e["auc"] for _, e in entries], dtype=float)
    small = np.array([bool(e["note"]) for _, e in entries])
    fig = Figure(figsize=(6, 0.35 * len(entries) + 1.4))
    ax = fig.add_subplot()
    pos = np.arange(len(entries))[::-1]
    colours = ["tab:red" if a > WARN_AUC else "tab:blue" for a in np.nan_to_num(auc)]
    bars = ax.barh(pos, np.nan_to_num(auc), color=colours)
    handles = [
        ax.axvline(0.5, color="grey", linestyle=":", label="no shortcut (0.5)"),
        ax.axvline(WARN_AUC, color="tab:red", linestyle="--", label=f"warning ({WARN_AUC})"),
    ]
    for bar, few in zip(bars, small, strict=True):
        if few:
            bar.set_hatch("//")
    if small.any():
        handles.append(Patch(facecolor="white", hatch="//", label="< 5 videos of a class"))
    ax.set_yticks(pos, [n for n, _ in entries])
    ax.set_xlim(0, 1)
    ax.set_xlabel("out-of-fold AUC")
    p = summary["permutation"]["p_value"]
    tail = "cannot tell (too little data)" if p is None else f"permutation p = {p:.3g}"
    ax.set_title(f"Shortcut audit: {summary['dataset']} ({tail})")
    ax.legend(
        handles=handles, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=3, fontsize="small"
    )
    return fig


def write_audit(
    result: AuditResult,
    out: str | Path,
    *,
    dataset: str,
    source_root: str | None,
    source_root_from: str | None = None,
) -> dict[str, Any]:
    """Write every output of the audit under ``out``; returns what ``audit.json`` holds."""
    out = Path(out)
    table = result.table
    predictions = PREDICTIONS.format(dataset=dataset)
    summary: dict[str, Any] = {
        "dataset": dataset,
        "source_root": source_root,
        "source_root_from": source_root_from,
        "n_videos": len(table.videos),
        "n_skipped": len(table.skipped),
        **result.summary,
        "unavailable": dict(table.unavailable),
        "skipped": list(table.skipped),
        "predictions": predictions,
    }
    summary["not_read"] = not_read_line(summary)
    write_predictions(out / predictions, audit_predictions(result, dataset))
    write_json(out / "audit.json", summary)
    atomic_write_text(out / "audit.md", audit_markdown(summary))
    audit_figure(summary, out / "audit")
    return summary
