"""Tiny batches that satisfy a detector's ``requires`` (see detectors/base.py), for tests."""

from __future__ import annotations

from typing import Any

import torch

from fairforensics.detectors.base import Detector


def make_batch(
    detector: Detector | type[Detector], size: int, batch_size: int = 4, seed: int = 0
) -> dict[str, Any]:
    """A fixed random batch at ``size`` x ``size`` with every key the detector requires.

    Half the samples are real (label 0), half fake. Detectors that train on online blends
    (``blend:<name>``) get the pipeline's layout: the first half real, the second half fakes.
    Detectors that train on domain groups (``method_groups``) get whole groups: a real and one fake
    per method (``method_label`` 0..K), as many groups as fit in ``batch_size`` (at least one).
    Video detectors (``input_kind == "clip"``) get clips [B, T, 3, H, W] of ``test_clip_size`` frames.
    """
    gen = torch.Generator().manual_seed(seed)
    requires = set(detector.requires)
    n = batch_size
    group_label = None
    if "method_groups" in requires:  # LSDA: groups of a real and one fake per method
        group = len(detector.cfg.methods) + 1
        n = group * max(1, n // group)
        group_label = torch.arange(group).repeat(n // group)
        label = (group_label > 0).long()
    elif any(r.startswith("blend:") for r in requires):
        label = torch.tensor([0] * (n // 2) + [1] * (n - n // 2))
    else:
        label = torch.tensor([i % 2 for i in range(n)])
    clip = (detector.test_clip_size,) if detector.input_kind == "clip" else ()
    image = torch.randn(n, *clip, 3, size, size, generator=gen)
    # Make the classes separable so that a few optimiser steps can lower the loss.
    image[label == 1] += 0.5
    batch: dict[str, Any] = {
        "image": image,
        "label": label,
        "video_id": [f"v{i}" for i in range(n)],
        "method": ["real" if y == 0 else "fake" for y in label.tolist()],
        "dataset": ["test"] * n,
        "frame": list(range(n)),
        "attributes": {
            "gender": ["female" if i % 2 else "male" for i in range(n)],
            "race": [("Asian", "White", "Black", "others")[i % 4] for i in range(n)],
        },
    }
    if "mask" in requires:
        mask = (torch.rand(n, 1, size, size, generator=gen) > 0.5).float()
        mask[label == 0] = 0.0
        batch["mask"] = mask
        batch["has_mask"] = label == 1
    if "landmarks" in requires:
        batch["landmarks"] = size * (0.2 + 0.6 * torch.rand(n, 68, 2, generator=gen))
    if "method_label" in requires:
        batch["method_label"] = torch.where(
            label == 1, 1 + torch.arange(n) % 2, torch.zeros(n, dtype=torch.long)
        )
    if group_label is not None:
        batch["method_label"] = group_label
    if "identity" in requires:
        batch["identity"] = torch.arange(n) % 3
    if "views" in requires:
        noise = 0.05 * torch.randn(n, 2, 3, size, size, generator=gen)
        batch["views"] = image.unsqueeze(1) + noise
    if "pairs" in requires:
        batch["pair_index"] = torch.arange(n) ^ 1
    if "blend:xray" in requires:
        m = torch.zeros(n, 1, size, size)
        m[label == 1, :, size // 4 : 3 * size // 4, size // 4 : 3 * size // 4] = 1.0
        batch["mask"] = m
        batch["xray"] = 4 * m * (1 - m)
    return batch


def spread_batch_norm_statistics(detector: torch.nn.Module, batch: dict[str, Any]) -> None:
    """Set every batch norm's running statistics from one forward pass of ``batch``, so that a
    randomly initialised detector's scores differ between samples.

    At random weights, eval-mode batch norms with their initial statistics (mean 0, variance 1)
    let activations shrink layer after layer, so every sample gets nearly the same score (equal
    to float rounding for some detectors), and a check that compares scores cannot see a
    coupling between samples. Here each batch norm, on its first call, takes the per-channel mean
    of its input and one variance for all channels (their mean; a per-channel variance would blow
    up nearly constant channels): activations keep their scale and samples stay apart. The
    statistics are fixed afterwards, so scores still do not depend on the batch."""
    from torch.nn.modules.batchnorm import _BatchNorm

    def first_call(module: _BatchNorm, args: tuple[torch.Tensor, ...]) -> None:
        if module in done or module.running_mean is None:
            return
        x = args[0].detach().float()
        dims = [d for d in range(x.dim()) if d != 1]
        module.running_mean.copy_(x.mean(dims))
        module.running_var.fill_(x.var(dims).mean().item())
        done.add(module)

    done: set[torch.nn.Module] = set()
    hooks = [
        m.register_forward_pre_hook(first_call)
        for m in detector.modules()
        if isinstance(m, _BatchNorm)
    ]
    try:
        with torch.no_grad():
            detector(batch)
    finally:
        for hook in hooks:
            hook.remove()
