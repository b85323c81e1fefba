"""RFM (Wang & Deng, "Representative Forgery Mining for Fake Face Detection", CVPR 2021), as in
DeepfakeBench v2 (``training/detectors/rfm_detector.py``).

The network is Xception with a 2-way head (the ``xception`` detector's, 20,811,050 parameters).
Training adds forgery-attention-guided erasing (Sec. 3.2-3.3), done inside the forward pass:

1. The Forgery Attention Map (FAM) of each training image: with the network in eval mode, the
   gradient of the logit margin ``z_fake - z_real`` with respect to the input, absolute value,
   maximum over the colour channels.
2. At the ``erase_points`` (3) most sensitive points not yet erased, in order, a block of random
   size (each side uniform in 1..``erase_max``, 120 pixels at 256 x 256, scaled with the input)
   is placed at a random offset around the point and erased.
3. Erased pixels are replaced by uniform noise over the pixel range (DeepfakeBench: uniform in
   [-1, 1] after 0.5/0.5 normalisation), and the network trains on the erased images with
   cross-entropy.

At evaluation nothing is erased, so RFM's inference is Xception's: DeepfakeBench RFM checkpoints
load like xception ones (``last_linear`` as the head; the unused ``adjust_channel`` dropped). The
random block sizes use torch's generator, so ``torch.manual_seed`` repeats them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from fairforensics.detectors.registry import register_detector
from fairforensics.detectors.xception import Xception, XceptionConfig

#: DeepfakeBench's erasing block: sides up to 120 pixels of a 256 x 256 face
REFERENCE_SIZE = 256


@dataclass
class RFMConfig(XceptionConfig):
    """``erase_points``: blocks erased per image; ``erase_max``: largest block side in pixels of a
    256 x 256 input (scaled with the input size)."""

    erase_points: int = 3
    erase_max: int = 120

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.erase_points < 0:
            raise ValueError(f"erase_points must be >= 0, got {self.erase_points}")
        if not 1 <= self.erase_max <= REFERENCE_SIZE:
            raise ValueError(f"erase_max must be in 1..{REFERENCE_SIZE}, got {self.erase_max}")


def forgery_attention(
    model: torch.nn.Module, classify: Callable[[torch.Tensor], torch.Tensor], image: torch.Tensor
) -> torch.Tensor:
    """FAM [B, H, W]: max over channels of |d(z_fake - z_real) / d image|, with ``model`` in eval
    mode; ``classify`` maps images to [B, 2] logits. No parameter receives a gradient."""
    was_training = model.training
    model.eval()
    try:
        with torch.enable_grad():
            x = image.detach().clone().requires_grad_(True)
            logits = classify(x)
            margin = (logits[:, 1] - logits[:, 0]).sum()
            (grad,) = torch.autograd.grad(margin, x)
    finally:
        model.train(was_training)
    return grad.abs().amax(dim=1)


def erase_mask(fam: torch.Tensor, points: int, max_h: int, max_w: int) -> torch.Tensor:
    """Keep-mask [B, 1, H, W] (0 = erased): ``points`` random blocks at the highest-FAM points.

    As DeepfakeBench: each point is the most sensitive pixel neither erased nor chosen before; a
    block of ``h x w`` (uniform in 1..max) covers rows ``y - sh .. y + h - sh`` (``sh`` uniform in
    1..h), likewise for columns, clipped to the image.
    """
    b, height, width = fam.shape
    keep = torch.ones(b, 1, height, width, dtype=fam.dtype, device=fam.device)
    for i in range(b):
        score = fam[i].detach().clone().float()
        for _ in range(min(points, height * width)):
            y, x = divmod(int(torch.argmax(score)), width)
            h = int(torch.randint(1, max_h + 1, ()))
            w = int(torch.randint(1, max_w + 1, ()))
            sh = int(torch.randint(1, h + 1, ()))
            sw = int(torch.randint(1, w + 1, ()))
            top, bottom = max(y - sh, 0), min(y + h - sh, height)
            left, right = max(x - sw, 0), min(x + w - sw, width)
            keep[i, :, top:bottom, left:right] = 0
            score[top:bottom, left:right] = -torch.inf
            score[y, x] = -torch.inf
    return keep


@register_detector("rfm", family="Spatial")
class RFM(Xception):
    """Xception trained on FAM-guided erased faces (20,811,050 parameters)."""

    Config = RFMConfig
    deepfakebench_name = "rfm"

    def classify(self, image: torch.Tensor) -> torch.Tensor:
        """[B, 2] logits of (normalised) images."""
        return self.head(self.drop(self.backbone(image)))

    def erase(self, image: torch.Tensor) -> torch.Tensor:
        """The training images with their most forgery-sensitive regions erased by noise."""
        cfg = self.cfg
        fam = forgery_attention(self, self.classify, image) if cfg.erase_points else None
        if fam is None:
            return image
        h, w = image.shape[-2:]
        max_h = max(1, round(cfg.erase_max * h / REFERENCE_SIZE))
        max_w = max(1, round(cfg.erase_max * w / REFERENCE_SIZE))
        keep = erase_mask(fam, cfg.erase_points, max_h, max_w).to(image.dtype)
        mean = image.new_tensor(cfg.mean).view(1, -1, 1, 1)
        std = image.new_tensor(cfg.std).view(1, -1, 1, 1)
        noise = (torch.rand_like(image) - mean) / std
        return keep * image + (1 - keep) * noise

    def forward(self, batch: dict[str, Any]) -> dict[str, torch.Tensor]:
        image = batch["image"]
        if self.training:
            image = self.erase(image)
        feat = self.backbone(image)
        return self.outputs(self.head(self.drop(feat)), feat)
