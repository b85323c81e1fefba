"""IResNet (Deng et al., ArcFace, CVPR 2019; insightface's ``arcface_torch`` backbones), the face
recognition network that IID uses as its explicit identity extractor and LSDA as its real-face
encoder (DeepfakeBench ``training/networks/iresnet_iid.py`` and ``iresnet.py``).

Parameter names are insightface's (``conv1``, ``bn1``, ``prelu``, ``layer{1-4}.N.{bn1, conv1, bn2,
prelu, conv2, bn3, downsample.0/1}``, ``bn2``, ``fc``, ``features``), so its released
``backbone.pth`` files load as they are. Two heads:

* ``embedding`` (IID, insightface): ``bn2`` -> flatten -> dropout -> ``fc`` (512 x 7 x 7 -> 512) ->
  ``features`` (BatchNorm1d, scale fixed at 1; skipped for a training batch of one); the input
  must be 112 x 112.
* ``map`` (LSDA, DeepfakeBench's ``iresnet.py``): ``bn2`` -> dropout -> 2 x 2 average pooling, a
  [B, 512, H/32, W/32] map (8 x 8 for 256 x 256 faces); no ``fc``/``features``.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Literal

import torch
from torch import nn
from torch.nn import functional as F

from fairforensics.detectors.backbones import (
    PretrainedWeightsError,
    load_state_dict_file,
    read_torch_file,
    strip_module_prefix,
)

log = logging.getLogger(__name__)

#: blocks per stage of each depth (insightface's iresnet18 ... iresnet200)
DEPTHS: dict[int, tuple[int, int, int, int]] = {
    18: (2, 2, 2, 2),
    34: (3, 4, 6, 3),
    50: (3, 4, 14, 3),
    100: (3, 13, 30, 3),
    200: (6, 26, 60, 6),
}
WIDTHS = (64, 128, 256, 512)
EMBEDDING_INPUT = 112  # the ``embedding`` head's fc expects a 7 x 7 map


class IBasicBlock(nn.Module):
    """BN -> conv3x3 -> BN -> PReLU -> conv3x3 (stride) -> BN, plus the (downsampled) input."""

    def __init__(self, cin: int, planes: int, stride: int = 1) -> None:
        super().__init__()
        self.bn1 = nn.BatchNorm2d(cin, eps=1e-5)
        self.conv1 = nn.Conv2d(cin, planes, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes, eps=1e-5)
        self.prelu = nn.PReLU(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, stride, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(planes, eps=1e-5)
        self.downsample = None
        if stride != 1 or cin != planes:
            self.downsample = nn.Sequential(
                nn.Conv2d(cin, planes, 1, stride, bias=False), nn.BatchNorm2d(planes, eps=1e-5)
            )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.bn3(self.conv2(self.prelu(self.bn2(self.conv1(self.bn1(x))))))
        return out + (x if self.downsample is None else self.downsample(x))


class IResNet(nn.Module):
    """insightface's IResNet of ``depth`` (18, 34, 50, 100, 200) with the ``head`` above."""

    def __init__(
        self,
        depth: int = 50,
        head: Literal["embedding", "map"] = "embedding",
        num_features: int = 512,
        dropout: float = 0.0,
    ) -> None:
        super().__init__()
        if depth not in DEPTHS:
            raise ValueError(f"IResNet depth must be one of {sorted(DEPTHS)}, got {depth}")
        if head not in ("embedding", "map"):
            raise ValueError(f"IResNet head must be 'embedding' or 'map', got {head!r}")
        self.depth, self.head = depth, head
        self.conv1 = nn.Conv2d(3, 64, 3, 1, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(64, eps=1e-5)
        self.prelu = nn.PReLU(64)
        cin = 64
        for i, (blocks, planes) in enumerate(zip(DEPTHS[depth], WIDTHS, strict=True)):
            layer = [IBasicBlock(cin, planes, 2)]
            layer += [IBasicBlock(planes, planes) for _ in range(blocks - 1)]
            setattr(self, f"layer{i + 1}", nn.Sequential(*layer))
            cin = planes
        self.bn2 = nn.BatchNorm2d(512, eps=1e-5)
        self.dropout = nn.Dropout(dropout)
        self.num_features = num_features if head == "embedding" else 512
        if head == "embedding":
            self.fc = nn.Linear(512 * 7 * 7, num_features)
            self.features = nn.BatchNorm1d(num_features, eps=1e-5)
            nn.init.constant_(self.features.weight, 1.0)
            self.features.weight.requires_grad = False  # insightface fixes this scale at 1
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.normal_(m.weight, 0, 0.1)
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.constant_(m.weight, 1)
                nn.init.constant_(m.bias, 0)

    def trunk(self, x: torch.Tensor) -> torch.Tensor:
        """conv1 .. layer4 and ``bn2``: a [B, 512, H/16, W/16] map."""
        x = self.prelu(self.bn1(self.conv1(x)))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.bn2(x)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.dropout(self.trunk(x))
        if self.head == "map":
            return F.avg_pool2d(x, kernel_size=2, stride=2)
        if x.shape[-2:] != (7, 7):
            raise ValueError(
                f"IResNet embedding head needs {EMBEDDING_INPUT}x{EMBEDDING_INPUT} inputs "
                f"(a 7x7 map), got a {tuple(x.shape[-2:])} map"
            )
        x = self.fc(x.flatten(1))
        if self.training and x.shape[0] == 1:
            return x  # BatchNorm1d cannot normalise one sample (DeepfakeBench skips it too)
        return self.features(x)


def load_iresnet_file(model: IResNet, path: str | Path) -> None:
    """Load an insightface ``backbone.pth`` (any ``module.`` prefix) onto ``model`` strictly.

    The ``map`` head has no ``fc``/``features``: a face recognition file's tensors of those two are
    left out; every other tensor must be in the file and fit, else one error naming them.
    """
    path = Path(path).expanduser()
    if model.head == "embedding":
        load_state_dict_file(model, path, strict=True)
        return
    state = read_torch_file(path, PretrainedWeightsError, "pass insightface's backbone.pth")
    if isinstance(state, dict) and isinstance(state.get("state_dict"), dict):
        state = state["state_dict"]
    if not isinstance(state, dict):
        raise PretrainedWeightsError(f"{path}: expected a state dict, got {type(state).__name__}")
    state = {
        k: v
        for k, v in strip_module_prefix(state).items()
        if not k.startswith(("fc.", "features."))
    }
    own = model.state_dict()
    missing = sorted(set(own) - set(state))
    unexpected = sorted(set(state) - set(own))
    shapes = sorted(k for k in set(own) & set(state) if own[k].shape != state[k].shape)
    if missing or unexpected or shapes:
        raise PretrainedWeightsError(
            f"{path} is not an IResNet-{model.depth} file: missing {missing[:5]}, "
            f"unexpected {unexpected[:5]}, shape-mismatched {shapes[:5]} "
            f"({len(missing)}/{len(unexpected)}/{len(shapes)} in all)"
        )
    model.load_state_dict(state, strict=True)
    log.info("loaded IResNet-%d from %s", model.depth, path)
