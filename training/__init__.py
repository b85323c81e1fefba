"""Dataset reader, augmentations, samplers, the trainer, checkpoints and DDP.

``Trainer``, ``TrainConfig`` and ``load_train_config`` are imported lazily, so importing a
submodule such as ``preprocessing.blending`` does not load the trainer.
"""

from __future__ import annotations

from typing import Any

__all__ = ["TrainConfig", "Trainer", "load_train_config"]


def __getattr__(name: str) -> Any:
    if name == "Trainer":
        from fairforensics.training.trainer import Trainer

        return Trainer
    if name in ("TrainConfig", "load_train_config"):
        from fairforensics.training import config

        return getattr(config, name)
    raise AttributeError(f"module 'training' has no attribute {name!r}")
