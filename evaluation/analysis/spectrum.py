"""Average frequency spectra of real and fake faces (paper 002, A.4, after Wang et al. CVPR 2020).

Each image is converted to grayscale, high-pass filtered (the image minus its 3x3 median filter,
Wang et al.'s filter), Fourier transformed with the zero frequency shifted to the centre, and
the magnitudes are averaged over the images. Figures show ``log(1 + mean |F|)`` for real, fake
and their difference (fake minus real, in that log scale).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import cv2
import numpy as np
from matplotlib.figure import Figure
from scipy.ndimage import median_filter

from fairforensics.evaluation.plots import save_figure


def highpass(gray: np.ndarray) -> np.ndarray:
    """Grayscale float image minus its 3x3 median filter."""
    gray = np.asarray(gray, dtype=np.float32)
    return gray - median_filter(gray, size=3, mode="reflect")


def image_spectrum(rgb: np.ndarray, size: int = 256) -> np.ndarray:
    """Centred magnitude spectrum [size, size] of one uint8 RGB image (resized to ``size``)."""
    rgb = np.asarray(rgb)
    if rgb.dtype != np.uint8 or rgb.ndim != 3 or rgb.shape[2] != 3:
        raise ValueError(f"image must be uint8 HxWx3 RGB, got {rgb.dtype} {rgb.shape}")
    gray = cv2.cvtColor(rgb, cv2.COLOR_RGB2GRAY).astype(np.float32) / 255.0
    if gray.shape != (size, size):
        gray = cv2.resize(gray, (size, size), interpolation=cv2.INTER_AREA)
    return np.abs(np.fft.fftshift(np.fft.fft2(highpass(gray)))).astype(np.float64)


def average_spectrum(images: Iterable[np.ndarray], size: int = 256) -> np.ndarray:
    """Mean magnitude spectrum over ``images`` (uint8 RGB); at least one image."""
    total, count = np.zeros((size, size)), 0
    for img in images:
        total += image_spectrum(img, size)
        count += 1
    if count == 0:
        raise ValueError("average_spectrum needs at least one image")
    return total / count


def spectra_figure(
    real: np.ndarray, fake: np.ndarray, stem: str | Path, title: str = ""
) -> list[Path]:
    """Three panels: average real spectrum, average fake spectrum, their difference (log scale)."""
    if real.shape != fake.shape:
        raise ValueError(f"spectra differ in shape: {real.shape} vs {fake.shape}")
    log_real, log_fake = np.log1p(real), np.log1p(fake)
    diff = log_fake - log_real
    fig = Figure(figsize=(11, 3.8), layout="constrained")
    axes = fig.subplots(1, 3)
    top = max(log_real.max(), log_fake.max())
    for ax, data, name in ((axes[0], log_real, "real"), (axes[1], log_fake, "fake")):
        im = ax.imshow(data, cmap="viridis", vmin=0, vmax=top)
        ax.set_title(name)
    fig.colorbar(im, ax=axes[:2].tolist(), shrink=0.8)
    lim = float(np.abs(diff).max()) or 1.0
    im = axes[2].imshow(diff, cmap="coolwarm", vmin=-lim, vmax=lim)
    axes[2].set_title("fake - real")
    fig.colorbar(im, ax=axes[2], shrink=0.8)
    for ax in axes:
        ax.set_xticks([])
        ax.set_yticks([])
    if title:
        fig.suptitle(title)
    return save_figure(fig, stem)
