"""The one device resolver and the one precision (AMP) policy of training and prediction."""

from __future__ import annotations

import torch

PRECISIONS = ("auto", "fp32", "bf16", "fp16")


def resolve_device(name: str = "auto", local_rank: int = 0) -> torch.device:
    """``auto`` -> ``cuda:<local_rank>`` when CUDA is available, else ``cpu``; other names as
    given (``cpu``, ``cuda``, ``cuda:1``)."""
    if name == "auto":
        return torch.device(f"cuda:{local_rank}" if torch.cuda.is_available() else "cpu")
    return torch.device(name)


def amp_dtype(precision: str, device: torch.device | str) -> torch.dtype | None:
    """The autocast dtype for ``precision`` on ``device`` (``None`` = fp32, no autocast).

    ``auto``: bf16 on a CUDA device that supports it, else fp16 on CUDA; fp32 on the CPU.
    """
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {PRECISIONS}, got {precision!r}")
    if precision == "auto":
        if torch.device(device).type != "cuda":
            return None
        return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
    return {"fp32": None, "bf16": torch.bfloat16, "fp16": torch.float16}[precision]


def to_channels_last(module: torch.nn.Module) -> torch.nn.Module:
    """``module`` with its 4-D weights in channels_last (NHWC) format, in place.

    ``module.to(memory_format=torch.channels_last)`` refuses the 5-D weights of 3-D
    convolutions (video detectors: I3D, FTCN...); those stay as they are here.
    """
    return module._apply(
        lambda t: t.contiguous(memory_format=torch.channels_last) if t.dim() == 4 else t
    )
