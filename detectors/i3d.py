"""I3D (Carreira & Zisserman, CVPR 2017) and AltFreezing (Wang et al., CVPR 2023), video detectors
of DeepfakeBench v2 (``training/detectors/i3d_detector.py``, ``altfreezing_detector.py``).

Both are SlowFast's I3D ResNet-50 (:mod:`detectors.backbones.resnet3d`) on clips of ``clip_size``
frames (16) at 224x224, mean = std = 0.5, with SlowFast's head: average pool over (T, H, W), dropout
0.5, ``Linear(2048, 1)``. DeepfakeBench returns ``sigmoid(z)`` and trains it with ``BCELoss``; here
``logits = [0, z]``, whose softmax probability of class 1 is ``sigmoid(z)`` and whose cross-entropy
is that BCE. ``feat`` is the pooled 2048-d feature.

AltFreezing trains the same network while freezing one kind of convolution at a time: the
"spatial" 1x3x3 ones or the "temporal" 3x1x1 ones (the stem, the 1x1x1 convolutions, BN and the
head always train). DeepfakeBench sets ``requires_grad`` after each training forward pass: spatial
mode when its batch counter is 0 mod 21, temporal mode when it is 1 mod 21. As autograd reads
``requires_grad`` again at backward time, a group trains in a step only when it is on both before
and after that switch: ``freeze_schedule: deepfakebench`` (the default) reproduces this exactly,
which trains the spatial convolutions in the first step only, neither group in the two steps
around each later switch, and the temporal ones in the other 19 of every 21 steps.
``freeze_schedule: alternate`` is the schedule that code intends: one spatial-only step, then 20
temporal-only steps. A frozen weight takes no gradient (``torch.func.functional_call`` with
detached tensors), so Adam leaves it and its moments untouched, as with ``requires_grad=False``;
under DDP this needs ``train.ddp_find_unused: true`` (its YAML sets it). The step counter is a
buffer, so a resumed run continues the schedule.

``pretrained``: a local copy of DeepfakeBench's ``I3D_8x8_R50.pth`` (SlowFast's Kinetics-400 I3D
8x8 ResNet-50 state dict, keys with or without ``resnet.``), loaded strictly as DeepfakeBench does;
its 400-way head is cut to its first row, as there.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import torch
from torch import nn
from torch.func import functional_call

from fairforensics.detectors.backbones import (
    PretrainedWeightsError,
    read_torch_file,
    strip_module_prefix,
)
from fairforensics.detectors.backbones.coverage import fitting_tensors
from fairforensics.detectors.backbones.resnet3d import ResNet3d, slowfast_rules
from fairforensics.detectors.base import ClipDetectorConfig, Detector
from fairforensics.detectors.dfb_keys import UnmappedKeys, remap
from fairforensics.detectors.registry import register_detector

KINETICS_FILE = "I3D_8x8_R50.pth"
_HOW = f"pass a local copy of DeepfakeBench's {KINETICS_FILE} or set 'pretrained: false'"
I3D_FILE = "SlowFast I3D ResNet-50 state dict"


@dataclass
class I3DConfig(ClipDetectorConfig):
    """``width``: SlowFast's WIDTH_PER_GROUP (64; smaller only for quick tests); ``dropout``: before
    the head (SlowFast's DROPOUT_RATE)."""

    clip_size: int = 16
    input_size: int = 224
    width: int = 64
    dropout: float = 0.5

    def __post_init__(self) -> None:
        if self.clip_size < 2:
            raise ValueError(f"clip_size must be >= 2 (a 2x1x1 time pool), got {self.clip_size}")
        if self.width < 1:
            raise ValueError(f"width must be >= 1, got {self.width}")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {self.dropout}")


def read_slowfast_file(path: str | Path) -> dict[str, torch.Tensor]:
    """A SlowFast-named state dict from ``path`` (plain, or under ``model_state``/``state_dict``/
    ``model``; ``module.`` and ``resnet.`` prefixes removed)."""
    path = Path(path).expanduser()
    data = read_torch_file(path, PretrainedWeightsError, _HOW)
    for key in ("model_state", "state_dict", "model"):
        if isinstance(data, dict) and isinstance(data.get(key), dict):
            data = data[key]
    if not isinstance(data, dict) or not all(isinstance(v, torch.Tensor) for v in data.values()):
        raise PretrainedWeightsError(f"{path}: expected a state dict of tensors; {_HOW}")
    state = strip_module_prefix(data)
    return {k.removeprefix("resnet."): v for k, v in state.items()}


class I3DBase(Detector):
    """Shared body: the I3D ResNet-50 on ``[B, T, 3, H, W]`` clips, one logit per clip."""

    Config = I3DConfig
    input_kind = "clip"
    test_input_size = 32
    test_clip_size = 4

    def __init__(self, cfg: I3DConfig) -> None:
        super().__init__(cfg)
        self.backbone = ResNet3d(cfg.width)
        self.drop = nn.Dropout(cfg.dropout)
        self.head = nn.Linear(self.backbone.num_features, 1)
        nn.init.normal_(self.head.weight, std=0.01)  # SlowFast's FC_INIT_STD
        nn.init.zeros_(self.head.bias)
        if cfg.pretrained not in (False, None, "", "false", "none"):
            self.load_kinetics(cfg.pretrained)

    def load_kinetics(self, path: str | Path) -> None:
        """Load SlowFast's Kinetics I3D (``I3D_8x8_R50.pth``) strictly, the head cut to one row."""
        if path is True or path == "timm":
            raise PretrainedWeightsError(f"{self.name} has no hub weights; {_HOW}")
        state = read_slowfast_file(path)
        head = {k for k in state if k.startswith("head.projection.")}
        head_rows = {k: v[:1] for k, v in state.items() if k in head}
        mapped = remap(  # unknown keys pass unchanged and are reported as unexpected
            {k: v for k, v in state.items() if k not in head},
            [*slowfast_rules("", "backbone."), ("", "")],
        )
        mapped |= {"head." + k.removeprefix("head.projection."): v for k, v in head_rows.items()}
        own = {k: v for k, v in self.state_dict().items() if k.startswith(("backbone.", "head."))}
        self.load_state_dict(fitting_tensors(path, mapped, own, own, I3D_FILE, _HOW), strict=False)

    def run(
        self, clips: torch.Tensor, detached: dict[str, torch.Tensor] | None = None
    ) -> dict[str, torch.Tensor]:
        """The outputs for clips [B, T, 3, H, W]; ``detached``: backbone weights used without
        gradient (by name in the backbone)."""
        x = clips.transpose(1, 2)
        maps = functional_call(self.backbone, detached, (x,)) if detached else self.backbone(x)
        feat = maps.mean(dim=(2, 3, 4))
        z = self.head(self.drop(feat))
        return self.outputs(torch.cat([torch.zeros_like(z), z], dim=1), feat)

    def forward(self, batch: dict[str, Any]) -> dict[str, torch.Tensor]:
        return self.run(batch["image"])

    def map_deepfakebench_state_dict(
        self, state_dict: dict[str, torch.Tensor]
    ) -> dict[str, torch.Tensor]:
        """DeepfakeBench's ``resnet.*`` (SlowFast names) onto ours; a Kinetics file (400-way head)
        is not a detector checkpoint."""
        head = state_dict.get("resnet.head.projection.weight")
        if head is not None and head.shape[0] != 1:
            # recognised=0: not laid out as a DeepfakeBench detector; the backbone loader takes it
            raise UnmappedKeys(
                [
                    f"resnet.head.projection.weight ({head.shape[0]} outputs, not 1: a Kinetics file)"
                ],
                recognised=0,
            )
        rules = [("resnet.head.projection.", "head."), *slowfast_rules("resnet.", "backbone.")]
        return remap(state_dict, rules)


@register_detector("i3d", family="Video")
class I3D(I3DBase):
    """I3D ResNet-50 with a 1-logit head (27,225,921 parameters)."""

    deepfakebench_name = "i3d"


@dataclass
class AltFreezingConfig(I3DConfig):
    """``freeze_schedule``: DeepfakeBench's effective schedule or the alternation it intends."""

    freeze_schedule: Literal["deepfakebench", "alternate"] = "deepfakebench"


@register_detector("altfreezing", family="Video")
class AltFreezing(I3DBase):
    """I3D ResNet-50 trained with alternating spatial/temporal freezing (27,225,921 parameters)."""

    Config = AltFreezingConfig
    deepfakebench_name = "altfreezing"
    #: DeepfakeBench switches to spatial mode at step 0 and to temporal mode at step 1 of each cycle
    cycle = 21

    def __init__(self, cfg: AltFreezingConfig) -> None:
        super().__init__(cfg)
        self.register_buffer("train_steps", torch.zeros((), dtype=torch.long))
        convs = {
            f"{name}.weight": m.kernel_size
            for name, m in self.backbone.named_modules()
            if isinstance(m, nn.Conv3d)
        }
        self.groups = {
            "spatial": frozenset(k for k, size in convs.items() if size == (1, 3, 3)),
            "temporal": frozenset(k for k, size in convs.items() if size == (3, 1, 1)),
        }

    @property
    def late_params(self) -> frozenset[str]:  # type: ignore[override]
        """The temporal convolutions: frozen in the first training step by either schedule."""
        return frozenset(f"backbone.{k}" for k in self.groups["temporal"])

    def _mode_after(self, step: int, before: str) -> str:
        """DeepfakeBench's mode after the forward pass of ``step``."""
        return {0: "spatial", 1: "temporal"}.get(step % self.cycle, before)

    def trained(self, step: int) -> set[str]:
        """The groups (``spatial``/``temporal``) whose weights train at step ``step`` (0-based)."""
        if self.cfg.freeze_schedule == "alternate":
            return {"spatial" if step % self.cycle == 0 else "temporal"}
        before = "both" if step == 0 else self._mode_after(step - 1, "temporal")
        after = self._mode_after(step, before)
        on = {"both": {"spatial", "temporal"}, "spatial": {"spatial"}, "temporal": {"temporal"}}
        return on[before] & on[after]

    def forward(self, batch: dict[str, Any]) -> dict[str, torch.Tensor]:
        if not self.training:
            return super().forward(batch)
        trained = self.trained(int(self.train_steps))
        self.train_steps += 1
        frozen = set().union(*(names for g, names in self.groups.items() if g not in trained))
        params = dict(self.backbone.named_parameters())
        return self.run(batch["image"], {k: params[k].detach() for k in frozen})

    def map_deepfakebench_state_dict(
        self, state_dict: dict[str, torch.Tensor]
    ) -> dict[str, torch.Tensor]:
        """As :class:`I3D`; the step counter starts at 0, as DeepfakeBench's on loading."""
        mapped = super().map_deepfakebench_state_dict(state_dict)
        return {**mapped, "train_steps": torch.zeros((), dtype=torch.long)}
