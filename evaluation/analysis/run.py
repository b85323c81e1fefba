"""All analysis figures of one detector on one dataset index: Grad-CAM, t-SNE, spectra."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np

from fairforensics.detectors.base import Detector
from fairforensics.evaluation.analysis.gradcam import grad_cam_figure, grad_cam_images
from fairforensics.evaluation.analysis.inputs import read_frames, sample_frames
from fairforensics.evaluation.analysis.spectrum import average_spectrum, spectra_figure
from fairforensics.evaluation.analysis.tsne import extract_features, tsne_embed, tsne_figure
from fairforensics.preprocessing.index import DatasetIndex
from fairforensics.preprocessing.resolve import resolve_index

log = logging.getLogger(__name__)


def run_analysis(
    detector: Detector,
    index: DatasetIndex | str | Path,
    out_dir: str | Path,
    *,
    gradcam: int = 8,
    tsne: int = 2500,
    spectra: int = 2000,
    split: str = "test",
    seed: int = 0,
    device: str = "cpu",
    batch_size: int = 32,
) -> list[Path]:
    """Figures (PNG paths) for ``gradcam`` faces per class, t-SNE of ``tsne`` frames per class
    (paper 002 Sec. 4.3: 2500) and average spectra of ``spectra`` frames per class (A.4: 2000).
    A count of 0 skips that tool; a tool that fails is logged and skipped."""
    if not isinstance(index, DatasetIndex):
        index = resolve_index(index, Path(index).parent)
    out = Path(out_dir)
    name = index.dataset
    figures: list[Path] = []
    if gradcam > 0:
        frames = sample_frames(index, gradcam, split, seed)
        images, kept = read_frames(frames)
        if images:
            _, overlays = grad_cam_images(detector, images, device=device, batch_size=batch_size)
            titles = [f"{frames[i].method} {frames[i].video_id}" for i in kept]
            figures.append(grad_cam_figure(images, overlays, out / f"gradcam_{name}", titles)[0])
    if tsne > 0:
        frames = sample_frames(index, tsne, split, seed)
        images, kept = read_frames(frames)
        if len(images) >= 3:
            feats = extract_features(detector, images, batch_size=batch_size, device=device)
            emb = tsne_embed(
                feats, seed=seed, threads=1 if len(feats) < 5000 else None
            )  # small: 1 is faster
            labels = np.array([frames[i].label for i in kept])
            methods = np.array([frames[i].method for i in kept], dtype=object)
            figures.append(
                tsne_figure(emb, labels, methods, out / f"tsne_{name}", title=f"t-SNE: {name}")[0]
            )
        else:
            log.warning("%s: fewer than 3 readable frames; no t-SNE", name)
    if spectra > 0:
        frames = sample_frames(index, spectra, split, seed)
        per_class = {}
        for label in (0, 1):
            images, _ = read_frames([f for f in frames if f.label == label])
            if images:
                per_class[label] = average_spectrum(images)
        if len(per_class) == 2:
            stem = out / f"spectra_{name}"
            figures.append(
                spectra_figure(per_class[0], per_class[1], stem, title=f"Average spectra: {name}")[
                    0
                ]
            )
        else:
            log.warning("%s: spectra need readable real and fake frames; skipped", name)
    return figures
