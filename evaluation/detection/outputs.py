"""What ``detect`` writes and prints: ``detections.csv`` / ``frames.csv`` / ``detections.json``,
``report.html`` (face crops embedded, score-over-time plots beside it in ``figures/``, so it
opens offline and moves with its folder) and the terminal table."""

from __future__ import annotations

import base64
import csv
import html
import io
from pathlib import Path
from typing import Any

import cv2
import numpy as np

from fairforensics.evaluation.detection.inputs import other_files_note
from fairforensics.evaluation.detection.results import (
    DETECTION_COLUMNS,
    FRAME_COLUMNS,
    DetectResult,
    FileResult,
    with_calibrated,
)
from fairforensics.evaluation.report import Section, write_report
from fairforensics.preprocessing.files import atomic_write_text, write_json


def write_outputs(result: DetectResult, out: str | Path, report: bool = True) -> dict[str, Path]:
    """Write every output into the folder ``out``; returns their paths by name."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    paths = {
        "detections.csv": out / "detections.csv",
        "frames.csv": out / "frames.csv",
        "detections.json": out / "detections.json",
    }
    rows = [f.row(result.threshold) for f in result.files]
    files, frames = DETECTION_COLUMNS, FRAME_COLUMNS
    if result.calibration is not None:  # score_calibrated after score
        files, frames = with_calibrated(files), with_calibrated(frames)
    atomic_write_text(paths["detections.csv"], _csv(files, rows))
    atomic_write_text(paths["frames.csv"], _csv(frames, result.frame_rows()))
    write_json(paths["detections.json"], result.to_json())
    if report:
        paths["report.html"] = write_detect_report(result, out)
    return paths


def _csv(columns: tuple[str, ...], rows: list[dict[str, Any]]) -> str:
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=columns, lineterminator="\n", extrasaction="ignore")
    writer.writeheader()
    writer.writerows(rows)
    return buf.getvalue()


def terminal_table(result: DetectResult) -> str:
    """One line per file: path, faces scored, score, the calibrated probability (with a
    calibration), verdict (or why there is none)."""
    calibrated = result.calibration is not None
    header = ("file", "faces", "score", *(("calibrated",) if calibrated else ()), "verdict")
    lines = [
        (
            str(f.path),
            str(f.n_faces) if f.status == "scored" else "-",
            f"{f.score:.4f}" if f.score is not None else "-",
            *((f"{f.calibrated:.4f}" if f.calibrated is not None else "-",) if calibrated else ()),
            f.verdict if f.status == "scored" else f"{f.status}: {f.reason}",
        )
        for f in result.files
    ]
    width = [max(len(r[k]) for r in [header, *lines]) for k in range(len(header) - 1)]
    text = [
        f"{r[0]:<{width[0]}}"
        + "".join(f"  {r[k]:>{width[k]}}" for k in range(1, len(header) - 1))
        + f"  {r[-1]}"
        for r in [header, *lines]
    ]
    counts = result.counts()
    skipped = f"; skipped {other_files_note(result.other_files)}" if result.other_files else ""
    text.append(
        f"{counts['scored']} scored, {counts['no_face']} without a face, {counts['failed']} "
        f"failed{skipped}; decision threshold: {result.threshold_source}"
    )
    if calibrated:
        text.append(
            f"calibrated: P(fake) through {result.calibration['description']}; the verdict "
            "stays at the threshold on the raw score"
        )
    text += [f"warning: {w}" for w in result.warnings]
    return "\n".join(text)


# ---------------------------------------------------------------- report


def _data_uri(rgb: np.ndarray) -> str:
    ok, buf = cv2.imencode(
        ".jpg", cv2.cvtColor(rgb, cv2.COLOR_RGB2BGR), [cv2.IMWRITE_JPEG_QUALITY, 90]
    )
    if not ok:
        raise ValueError("cannot encode a thumbnail")
    return "data:image/jpeg;base64," + base64.b64encode(buf.tobytes()).decode("ascii")


def _strip(f: FileResult, overlays: bool) -> str:
    figures = []
    for face, thumb, cam in f.strip:
        image = cam if overlays else thumb
        if image is None:
            continue
        where = (
            f"frames {face.frames[0]}-{face.frames[-1]}"
            if len(face.frames) > 1
            else f"frame {face.frame}"
        )
        track = f", track {face.track}" if len(f.track_scores) > 1 else ""
        figures.append(
            f"<figure><img src='{_data_uri(image)}' alt='{where}'>"
            f"<figcaption>{where}{track}: {face.score:.3f}</figcaption></figure>"
        )
    return f"<div class='strip'>{''.join(figures)}</div>" if figures else ""


def _timeline(f: FileResult, threshold: float, path: Path) -> Path | None:
    """The score of each scored face against its frame number, one line per track."""
    if len({face.frame for face in f.faces}) < 2:
        return None
    from matplotlib.figure import Figure

    from fairforensics.evaluation.plots import save_figure

    fig = Figure(figsize=(6.0, 2.2))
    ax = fig.subplots()
    for track in sorted(f.track_scores):
        faces = [face for face in f.faces if face.track == track]
        ax.plot([x.frame for x in faces], [x.score for x in faces], marker="o", ms=3,
                label=f"track {track}" if len(f.track_scores) > 1 else None)  # fmt: skip
    ax.axhline(threshold, color="grey", ls="--", lw=1, label="threshold")
    ax.set_xlabel("frame")
    ax.set_ylabel("score")
    ax.set_ylim(-0.02, 1.02)
    ax.legend(loc="upper right", fontsize=7)
    return save_figure(fig, path.with_suffix(".png"))[0]


def _file_html(f: FileResult, result: DetectResult, figures: Path, n: int) -> list[str | Path]:
    name = html.escape(str(f.path))
    if f.status != "scored":
        label = "no face" if f.status == "no_face" else "failed"
        return [f"<h3>{name}</h3><p><b>{label}</b>: {html.escape(f.reason or '')}</p>"]
    side = "at or above" if f.score >= result.threshold else "below"
    tracks = (
        f" (the highest of {len(f.track_scores)} face tracks: "
        + ", ".join(f"{t}: {s:.3f}" for t, s in sorted(f.track_scores.items()))
        + ")"
        if len(f.track_scores) > 1
        else ""
    )
    frames = f"; {f.frames_sampled} of {f.frames_total} frames decoded" if f.kind == "video" else ""
    calibrated = "" if f.calibrated is None else f" (calibrated P(fake) {f.calibrated:.4f})"
    parts: list[str | Path] = [
        f"<h3>{name}</h3><p><b>{html.escape(f.verdict or '')}</b>: score {f.score:.4f}{tracks}, "
        f"{side} the threshold {result.threshold:.4g}{calibrated}. {f.n_faces} face(s) "
        f"scored{frames}.</p>",
    ]
    if f.notes:
        parts.append("<p class='meta'>" + html.escape("; ".join(f.notes)) + "</p>")
    parts.append(_strip(f, overlays=False))
    if any(cam is not None for _, _, cam in f.strip):
        parts.append("<p class='meta'>Grad-CAM (class fake)</p>" + _strip(f, overlays=True))
    plot = _timeline(f, result.threshold, figures / f"scores_{n:04d}")
    if plot is not None:
        parts.append(plot)
    return parts


#: the summary table's columns of numbers (right-aligned); text is left-aligned
_NUMBER_COLUMNS = ("faces", "score", "calibrated")


def _align(column: str) -> str:
    return "" if column in _NUMBER_COLUMNS else " style='text-align:left'"


def write_detect_report(result: DetectResult, out: Path) -> Path:
    """``out/report.html``: a summary table, then per file its verdict, the score against the
    threshold, a strip of scored faces (and Grad-CAM overlays) and the score over time."""
    calibrated = result.calibration is not None
    columns = ("file", "status", "faces", "score", *(("calibrated",) if calibrated else ()),
               "verdict", "reason")  # fmt: skip
    summary = ["<table><tr>" + "".join(f"<th{_align(c)}>{c}</th>" for c in columns) + "</tr>"]
    for f in result.files:
        cal = ("" if f.calibrated is None else f"{f.calibrated:.4f}",) if calibrated else ()
        cells = (
            str(f.path), f.status, str(f.n_faces), "" if f.score is None else f"{f.score:.4f}",
            *cal, f.verdict or "", f.reason or "",
        )  # fmt: skip
        summary.append(
            "<tr>"
            + "".join(
                f"<td{_align(c)}>{html.escape(v)}</td>" for c, v in zip(columns, cells, strict=True)
            )
            + "</tr>"
        )
    summary.append("</table>")
    items: list[str | Path] = ["<style>.strip figure{margin:2px} .strip img{width:112px}</style>"]
    for n, f in enumerate(result.files):
        items += _file_html(f, result, out / "figures", n)
    counts = result.counts()
    meta = {
        "detector": result.detector,
        "weights": result.weights,
        "decision threshold": result.threshold_source,
        "face crops": result.face_settings_source,
        "files": f"{counts['scored']} scored, {counts['no_face']} without a face, "
        f"{counts['failed']} failed",
        "device": result.device,
    }
    if result.other_files:
        meta["skipped"] = other_files_note(result.other_files)
    if result.calibration is not None:
        meta["calibration"] = (
            f"{result.calibration['description']}: the calibrated column; verdicts at the "
            "threshold on the raw score"
        )
    if result.warnings:
        meta["warning"] = "; ".join(result.warnings)
    if result.explain:
        meta["Grad-CAM"] = result.explain
    sections = [Section("Summary", ["\n".join(summary)]), Section("Files", items)]
    return write_report(out / "report.html", f"Detect: {result.detector}", sections, meta=meta)
