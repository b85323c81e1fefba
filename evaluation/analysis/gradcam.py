"""Grad-CAM (Selvaraju et al., ICCV 2017) for any detector with a convolutional layer.

The class score ``y = logits[:, c]`` (``c = 1``: fake) is back-propagated to the activations
``A`` of a target layer; the channel weights are the spatially averaged gradients and the map is
``ReLU(sum_k w_k A_k)``, upsampled bilinearly to the input and scaled to [0, 1] per image.
The default target is the last ``nn.Conv2d`` of the model (paper 002 Sec. 3.2 uses Grad-CAM to
highlight the regions a detector relies on).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch
from matplotlib import colormaps
from torch import nn
from torch.nn import functional as F

from fairforensics.detectors.base import Detector
from fairforensics.evaluation.analysis.inputs import to_batch


def last_conv(model: nn.Module) -> str:
    """Name of the last ``nn.Conv2d`` of ``model`` (in registration order)."""
    names = [name for name, m in model.named_modules() if isinstance(m, nn.Conv2d)]
    if not names:
        raise ValueError(
            f"{type(model).__name__} has no Conv2d layer; pass target_layer explicitly"
        )
    return names[-1]


def grad_cam(
    detector: Detector,
    images: torch.Tensor,
    target_layer: str | None = None,
    target_class: int = 1,
) -> np.ndarray:
    """Grad-CAM maps float32 [B, H, W] in [0, 1] for normalised ``images`` [B, 3, H, W].

    ``target_layer``: a name from ``detector.named_modules()`` whose output is [B, C, h, w]
    (default: :func:`last_conv`). The model is run in eval mode and restored afterwards.
    """
    name = target_layer or last_conv(detector)
    layer = dict(detector.named_modules()).get(name)
    if layer is None:
        raise KeyError(f"no module named {name!r} in {type(detector).__name__}")
    store: dict[str, torch.Tensor] = {}

    def hook(_module: nn.Module, _inputs: tuple, output: torch.Tensor) -> torch.Tensor:
        if not isinstance(output, torch.Tensor) or output.dim() != 4:
            raise ValueError(
                f"layer {name!r} must output [B, C, h, w], got {getattr(output, 'shape', type(output))}"
            )
        store["act"] = output.detach().clone()  # values before any later in-place op
        out = (
            output.clone()
        )  # the hook sits on a fresh tensor that in-place ops downstream may edit;
        out.register_hook(
            lambda g: store.__setitem__("grad", g)
        )  # it still gets d(score)/d(this output)
        return out

    was_training = detector.training
    detector.eval()
    handle = layer.register_forward_hook(hook)
    try:
        with torch.enable_grad():
            x = images.detach().requires_grad_(False)
            batch = {"image": x, "label": torch.zeros(len(x), dtype=torch.long, device=x.device)}
            logits = detector(batch)["logits"]
            detector.zero_grad(set_to_none=True)
            logits[:, target_class].sum().backward()
    finally:
        handle.remove()
        detector.train(was_training)
    if "grad" not in store:
        raise RuntimeError(f"layer {name!r} did not take part in computing the logits")
    act, grad = store["act"].detach(), store["grad"].detach()
    weights = grad.mean(dim=(2, 3), keepdim=True)
    cam = F.relu((weights * act).sum(dim=1, keepdim=True))
    cam = F.interpolate(cam, size=images.shape[-2:], mode="bilinear", align_corners=False)[:, 0]
    flat = cam.flatten(1)
    lo, hi = flat.min(1).values[:, None, None], flat.max(1).values[:, None, None]
    cam = torch.where(hi > lo, (cam - lo) / (hi - lo).clamp_min(1e-12), torch.zeros_like(cam))
    return cam.float().cpu().numpy()


def overlay(rgb: np.ndarray, cam: np.ndarray, alpha: float = 0.45, cmap: str = "jet") -> np.ndarray:
    """uint8 RGB image with the heat map ``cam`` ([0, 1], resized to the image) blended on top."""
    import cv2

    if rgb.dtype != np.uint8 or rgb.ndim != 3 or rgb.shape[2] != 3:
        raise ValueError(f"rgb must be uint8 HxWx3, got {rgb.dtype} {rgb.shape}")
    cam = cv2.resize(
        np.asarray(cam, dtype=np.float32),
        (rgb.shape[1], rgb.shape[0]),
        interpolation=cv2.INTER_LINEAR,
    )
    heat = (colormaps[cmap](np.clip(cam, 0, 1))[..., :3] * 255).astype(np.float32)
    return np.clip((1 - alpha) * rgb.astype(np.float32) + alpha * heat, 0, 255).astype(np.uint8)


def grad_cam_images(
    detector: Detector,
    images: Sequence[np.ndarray],
    target_layer: str | None = None,
    target_class: int = 1,
    device: str = "cpu",
    batch_size: int = 16,
) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Grad-CAM of uint8 RGB face crops: (maps at the detector's input size, overlays on the
    faces at their own size)."""
    detector.to(device)
    maps: list[np.ndarray] = []
    for start in range(0, len(images), batch_size):
        chunk = images[start : start + batch_size]
        maps += list(
            grad_cam(detector, to_batch(chunk, detector.cfg, device), target_layer, target_class)
        )
    return maps, [overlay(np.asarray(img), m) for img, m in zip(images, maps, strict=True)]


def grad_cam_figure(
    images: Sequence[np.ndarray],
    overlays: Sequence[np.ndarray],
    stem: str | Path,
    titles: Sequence[str] = (),
) -> list[Path]:
    """Faces (top row) and their Grad-CAM overlays (bottom row), saved as PNG and PDF."""
    from matplotlib.figure import Figure

    from fairforensics.evaluation.plots import save_figure

    n = len(images)
    if n == 0 or n != len(overlays):
        raise ValueError(f"need as many overlays as images (>0), got {n} and {len(overlays)}")
    fig = Figure(figsize=(2.2 * n, 4.6))
    axes = np.asarray(fig.subplots(2, n)).reshape(2, n)
    for j in range(n):
        for i, img in enumerate((images[j], overlays[j])):
            axes[i, j].imshow(img)
            axes[i, j].set_axis_off()
        if j < len(titles):
            axes[0, j].set_title(titles[j], fontsize=8)
    return save_figure(fig, stem)
