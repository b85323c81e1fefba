"""The one device resolver and the one precision (AMP) policy of training and prediction."""

from __future__ import annotations

import torch

from fairforensics.configs import ConfigError

PRECISIONS = ("auto", "fp32", "bf16", "fp16")


#: How the commands that read the test/train settings are given a device.
SETTINGS_OPTION = "--set device=cpu"


def resolve_device(
    name: str | torch.device = "auto", local_rank: int = 0, *, option: str = SETTINGS_OPTION
) -> torch.device:
    """``auto`` -> ``cuda:<local_rank>`` when CUDA is available, else ``cpu``; other names as
    given (``cpu``, ``cuda``, ``cuda:1``, ``mps``).

    A device this process cannot use (``cuda`` without CUDA, ``cuda:3`` on a 2-GPU machine,
    ``mps`` off Apple silicon) or a name torch does not know is a one-line :class:`ConfigError`
    that says what to pass instead, never a CPU fallback and never torch's traceback at the
    first ``.to(device)``. ``option``: how the caller's command takes a device (``--device cpu``
    for ``detect`` and ``metamorphic``), named in that error.
    """
    if name == "auto":
        return torch.device(f"cuda:{local_rank}" if torch.cuda.is_available() else "cpu")
    try:
        device = torch.device(name)
    except (RuntimeError, TypeError):
        raise ConfigError(
            f"device {name} is not a device name; use auto, cpu, cuda, cuda:N or mps ({option})"
        ) from None
    check_device(device, option=option)
    return device


def check_device(device: torch.device, *, option: str = SETTINGS_OPTION) -> None:
    """Raise :class:`ConfigError` when ``device`` is not usable in this process; the message
    says to choose cpu or auto with ``option``."""
    fix = f"choose cpu or auto instead ({option})"
    if device.type == "cuda":
        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if count == 0:
            raise ConfigError(
                f"device {device}: torch {torch.__version__} sees no CUDA device in this "
                f"process; {fix}, or run on a machine with CUDA"
            )
        if device.index is not None and device.index >= count:
            raise ConfigError(
                f"device {device}: this machine has {count} CUDA device(s), "
                f"cuda:0 to cuda:{count - 1}; choose one of them, or {fix}"
            )
    elif device.type == "mps" and not torch.backends.mps.is_available():
        raise ConfigError(f"device {device}: MPS is not available on this machine; {fix}")


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
