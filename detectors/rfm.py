"""RFM (Wang & Deng, "Representative Forgery Mining for Fake Face Detection", CVPR 2021), as in
DeepfakeBench v2 (``training/detectors/rfm_detector.py``).

The network is Xception with a 2-way head (the ``xception`` detector's, 20,811,050 parameters).
Training adds forgery-attention-guided erasing (Sec. 3.2-3.3), done inside the forward pass:

1. The Forgery Attention Map (FAM) of each training image: with the network in eval mode, the
   absolute gradient of a target with respect to the input, maximum over the colour channels.
2. At the ``erase_points`` (3) most sensitive points not yet erased, in order, a block of random
   size (each side uniform in 1..``erase_max``, 120 pixels at 256 x 256, scaled with the input)
   is placed at a random offset around the point and erased.
3. Erased pixels are replaced by uniform noise over the pixel range (DeepfakeBench: uniform in
   [-1, 1] after 0.5/0.5 normalisation), and the network trains on the erased images with
   cross-entropy.

Variants (``model.variant``), which differ in the FAM's target only:

- ``deepfakebench`` (default): DeepfakeBench's ``cal_fam`` unpacks ``_, output =
  self.backbone(inputs)``, but its Xception returns ``(logits, features)``, so the target is the
  difference of **feature channels** 1 and 0 of the 2048-channel map (after the ReLU that its
  classifier applies in place), summed over positions, not the logit margin. It is what
  DeepfakeBench's RFM results were trained with, hence the default.
- ``paper``: the logit margin ``z_fake - z_real`` (the RFM paper, Sec. 3.2).

DeepfakeBench erases whenever ``forward`` is called with ``inference=False``, in eval mode too,
and then switches the backbone to training mode for the rest of that call and after it (so the
scores come from erased faces through batch-statistics BatchNorm, and the running statistics
move). Its own test loop passes ``inference=True``, so its evaluations never see this; any other
caller that forgets the flag does. Here erasing happens in training mode only (an evaluation must
see the faces as they are); ``erase_in_eval: true`` gives DeepfakeBench's behaviour (erasing, then
the network left in training mode), only to reproduce such a caller.

At evaluation nothing is erased, so RFM's inference is Xception's: DeepfakeBench RFM checkpoints
load like xception ones (``last_linear`` as the head; the unused ``adjust_channel`` dropped). The
random block sizes come from Python's ``random`` (seeded by the trainer) and the noise from
torch's generator, in DeepfakeBench's order, so the same seeds give its erasing exactly.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

import torch

from fairforensics.detectors.registry import register_detector
from fairforensics.detectors.xception import Xception, XceptionConfig

#: DeepfakeBench's erasing block: sides up to 120 pixels of a 256 x 256 face
REFERENCE_SIZE = 256


@dataclass
class RFMConfig(XceptionConfig):
    """``erase_points``: blocks erased per image; ``erase_max``: largest block side in pixels of a
    256 x 256 input (scaled with the input size); ``variant``: the FAM's target;
    ``erase_in_eval``: DeepfakeBench's erasing in eval mode too (module docstring)."""

    variant: Literal["deepfakebench", "paper"] = "deepfakebench"
    erase_in_eval: bool = False
    erase_points: int = 3
    erase_max: int = 120

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.erase_points < 0:
            raise ValueError(f"erase_points must be >= 0, got {self.erase_points}")
        if self.variant not in ("deepfakebench", "paper"):
            raise ValueError(f"variant must be 'deepfakebench' or 'paper', got {self.variant!r}")
        if not 1 <= self.erase_max <= REFERENCE_SIZE:
            raise ValueError(f"erase_max must be in 1..{REFERENCE_SIZE}, got {self.erase_max}")


def forgery_attention(
    model: torch.nn.Module, target: Callable[[torch.Tensor], torch.Tensor], image: torch.Tensor
) -> torch.Tensor:
    """FAM [B, H, W]: max over channels of |d target(image).sum() / d image|, with ``model`` in
    eval mode (``target``: e.g. the logit margin per image). No parameter receives a gradient."""
    was_training = model.training
    model.eval()
    try:
        with torch.enable_grad():
            x = image.detach().clone().requires_grad_(True)
            (grad,) = torch.autograd.grad(target(x).sum(), x)
    finally:
        model.train(was_training)
    return grad.abs().amax(dim=1)


def erase_mask(fam: torch.Tensor, points: int, max_h: int, max_w: int) -> torch.Tensor:
    """Keep-mask [B, 1, H, W] (0 = erased): ``points`` random blocks at the highest-FAM points.

    As DeepfakeBench: each point is the most sensitive pixel neither erased nor chosen before; a
    block of ``h x w`` (uniform in 1..max) covers rows ``y - sh .. y + h - sh`` (``sh`` uniform in
    1..h), likewise for columns, clipped to the image. The sizes and offsets are Python's
    ``random.randint`` draws in DeepfakeBench's order (h, w, sh, sw per point).
    """
    b, height, width = fam.shape
    keep = torch.ones(b, 1, height, width, dtype=fam.dtype, device=fam.device)
    for i in range(b):
        score = fam[i].detach().clone().float()
        for _ in range(min(points, height * width)):
            y, x = divmod(int(torch.argmax(score)), width)
            h = random.randint(1, max_h)
            w = random.randint(1, max_w)
            sh = random.randint(1, h)
            sw = random.randint(1, w)
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

    def fam_target(self, image: torch.Tensor) -> torch.Tensor:
        """The quantity whose input gradient is the FAM, per image (module docstring): the logit
        margin (``paper``) or DeepfakeBench's feature channels 1 minus 0, summed over positions."""
        if self.cfg.variant == "paper":
            logits = self.head(self.drop(self.backbone(image)))
            return logits[:, 1] - logits[:, 0]
        feat = self.backbone.forward_features(image)  # after the final ReLU, as DFB's
        return (feat[:, 1] - feat[:, 0]).flatten(1).sum(1)

    def erase(self, image: torch.Tensor) -> torch.Tensor:
        """The training images with their most forgery-sensitive regions erased by noise."""
        cfg = self.cfg
        if not cfg.erase_points:
            return image
        fam = forgery_attention(self, self.fam_target, image)
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
        if self.training or self.cfg.erase_in_eval:
            image = self.erase(image)
            self.train()  # DeepfakeBench's erasing leaves the network in training mode
        feat = self.backbone(image)
        return self.outputs(self.head(self.drop(feat)), feat)
