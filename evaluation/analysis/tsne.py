"""t-SNE of detector features (paper 002 Sec. 4.3, Figure 6).

Features are the ``feat`` outputs (penultimate layer) of a detector on test frames; the paper
samples 5000 frames (2500 real, 2500 fake) and runs t-SNE with default parameters, then colours
the points by real/fake and by manipulation method.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch
from matplotlib.figure import Figure
from sklearn.manifold import TSNE
from threadpoolctl import threadpool_limits

from fairforensics.detectors.base import Detector
from fairforensics.evaluation.analysis.inputs import to_batch
from fairforensics.evaluation.plots import save_figure


@torch.no_grad()
def extract_features(
    detector: Detector, images: Sequence[np.ndarray], batch_size: int = 32, device: str = "cpu"
) -> np.ndarray:
    """float32 [N, D] ``feat`` outputs for uint8 RGB images (eval mode, restored afterwards)."""
    if len(images) == 0:
        raise ValueError("no images to extract features from")
    detector.to(device)
    was_training = detector.training
    detector.eval()
    feats = []
    try:
        for start in range(0, len(images), batch_size):
            x = to_batch(images[start : start + batch_size], detector.cfg, device)
            out = detector(
                {"image": x, "label": torch.zeros(len(x), dtype=torch.long, device=x.device)}
            )
            if "feat" not in out:
                raise KeyError(f"{type(detector).__name__} returns no 'feat' output")
            feats.append(out["feat"].float().flatten(1).cpu().numpy())
    finally:
        detector.train(was_training)
    return np.concatenate(feats)


def tsne_embed(
    features: np.ndarray, seed: int = 0, perplexity: float = 30.0, threads: int | None = None
) -> np.ndarray:
    """2-D t-SNE of ``features`` [N, D] (scikit-learn defaults; perplexity capped below N).

    ``threads`` caps the OpenMP threads of the Barnes-Hut solver (on a busy machine its default
    of one thread per core can be many times slower).
    """
    features = np.asarray(features, dtype=np.float32)
    if features.ndim != 2 or len(features) < 3:
        raise ValueError(f"features must be [N, D] with N >= 3, got {features.shape}")
    perplexity = min(perplexity, (len(features) - 1) / 3.0)
    tsne = TSNE(n_components=2, perplexity=perplexity, random_state=seed, init="pca")
    with threadpool_limits(threads, user_api="openmp"):
        return tsne.fit_transform(features)


def tsne_figure(
    embedding: np.ndarray,
    labels: Sequence[int],
    methods: Sequence[str],
    stem: str | Path,
    title: str = "",
) -> list[Path]:
    """Two panels: points coloured by real/fake, and by manipulation method."""
    emb = np.asarray(embedding)
    labels, methods = np.asarray(labels), np.asarray(methods, dtype=object)
    if emb.shape != (len(labels), 2) or len(methods) != len(labels):
        raise ValueError("embedding must be [N, 2] with one label and one method per point")
    fig = Figure(figsize=(10, 4.5), layout="constrained")
    ax_l, ax_m = fig.subplots(1, 2)
    for value, name, color in ((0, "real", "tab:blue"), (1, "fake", "tab:red")):
        sel = labels == value
        ax_l.scatter(emb[sel, 0], emb[sel, 1], s=4, c=color, label=name, alpha=0.7)
    for n, name in enumerate(sorted(set(methods))):
        sel = methods == name
        ax_m.scatter(emb[sel, 0], emb[sel, 1], s=4, color=f"C{n % 10}", label=name, alpha=0.7)
    for ax, sub in ((ax_l, "real / fake"), (ax_m, "method")):
        ax.set_title(sub)
        ax.set_xticks([])
        ax.set_yticks([])
        ax.legend(fontsize=7, markerscale=3)
    if title:
        fig.suptitle(title)
    return save_figure(fig, stem)
