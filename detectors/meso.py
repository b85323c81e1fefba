"""MesoNet (Afchar et al., "MesoNet: a Compact Facial Video Forgery Detection Network", WIFS 2018).

Exact layer sizes of the authors' Keras model: convolutions with bias and ReLU, each followed by
batch norm and max pooling; dropout 0.5, a 16-unit dense layer with LeakyReLU(0.1), dropout 0.5
and one sigmoid output. Inputs are scaled to [0, 1] (mean 0, std 1). MesoInception-4 replaces the first two blocks by
Inception modules (Szegedy et al. 2015) with 1x1, 3x3 and dilated (2, 3) 3x3 branches (Sec. 3.2 of
the paper; 28,615 trainable parameters at 256x256). The single output ``z`` is
returned as logits ``[0, z]`` so that ``softmax(logits)[:, 1] = sigmoid(z)`` and cross-entropy on
them equals the original binary cross-entropy; Meso4 has 27,977 trainable parameters at 256x256.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from detectors.base import Detector, DetectorConfig
from detectors.registry import register_detector


@dataclass
class MesoConfig(DetectorConfig):
    mean: tuple[float, float, float] = (0.0, 0.0, 0.0)
    std: tuple[float, float, float] = (1.0, 1.0, 1.0)
    dropout: float = 0.5


def _conv_block(cin: int, cout: int, kernel: int, pool: int) -> nn.Sequential:
    """Keras ``Conv2D(relu, padding='same') -> BatchNormalization -> MaxPooling2D``."""
    return nn.Sequential(
        nn.Conv2d(cin, cout, kernel, padding=kernel // 2),
        nn.ReLU(inplace=True),
        nn.BatchNorm2d(cout, eps=1e-3, momentum=0.01),
        nn.MaxPool2d(pool, pool, ceil_mode=True),
    )


class _MesoHead(nn.Module):
    """Flatten -> Dropout -> Dense(16) -> LeakyReLU(0.1) -> Dropout -> Dense(1)."""

    def __init__(self, in_features: int, dropout: float) -> None:
        super().__init__()
        self.drop1 = nn.Dropout(dropout)
        self.fc1 = nn.Linear(in_features, 16)
        self.act = nn.LeakyReLU(0.1)
        self.drop2 = nn.Dropout(dropout)
        self.fc2 = nn.Linear(16, 1)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        feat = self.act(self.fc1(self.drop1(torch.flatten(x, 1))))
        z = self.fc2(self.drop2(feat))
        return torch.cat([torch.zeros_like(z), z], dim=1), feat


class _MesoNet(Detector):
    """Four blocks ending in 16 channels at 1/32 of the input side, then the dense head."""

    Config = MesoConfig

    def __init__(self, cfg: MesoConfig, features: nn.Sequential) -> None:
        super().__init__(cfg)
        self.features = features
        side = -(-cfg.input_size // 32)  # ceil: pools of 2, 2, 2, 4
        self.head = _MesoHead(16 * side * side, cfg.dropout)

    def forward(self, batch: dict[str, Any]) -> dict[str, torch.Tensor]:
        logits, feat = self.head(self.features(batch["image"]))
        return self.outputs(logits, feat)


@register_detector("meso4", family="Naive")
class Meso4(_MesoNet):
    """Meso-4: four convolution blocks (8, 8, 16, 16 filters) and the dense head."""

    def __init__(self, cfg: MesoConfig) -> None:
        blocks = [_conv_block(3, 8, 3, 2), _conv_block(8, 8, 5, 2)]
        blocks += [_conv_block(8, 16, 5, 2), _conv_block(16, 16, 5, 4)]
        super().__init__(cfg, nn.Sequential(*blocks))


class _InceptionLayer(nn.Module):
    """MesoNet's ``InceptionLayer(a, b, c, d)``: four ReLU branches concatenated.

    1x1 (a); 1x1 -> 3x3 (b); 1x1 -> 3x3 dilation 2 (c); 1x1 -> 3x3 dilation 3 (d), all with bias
    and 'same' padding.
    """

    def __init__(self, cin: int, a: int, b: int, c: int, d: int) -> None:
        super().__init__()

        def conv(i: int, o: int, k: int, dil: int = 1) -> nn.Sequential:
            return nn.Sequential(
                nn.Conv2d(i, o, k, padding=dil * (k // 2), dilation=dil), nn.ReLU(inplace=True)
            )

        self.branches = nn.ModuleList(
            [
                conv(cin, a, 1),
                nn.Sequential(conv(cin, b, 1), conv(b, b, 3)),
                nn.Sequential(conv(cin, c, 1), conv(c, c, 3, 2)),
                nn.Sequential(conv(cin, d, 1), conv(d, d, 3, 3)),
            ]
        )
        self.out_channels = a + b + c + d

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cat([branch(x) for branch in self.branches], dim=1)


def _inception_block(cin: int, widths: tuple[int, int, int, int]) -> nn.Sequential:
    """``InceptionLayer -> BatchNormalization -> MaxPooling2D(2, 'same')``."""
    layer = _InceptionLayer(cin, *widths)
    return nn.Sequential(
        layer,
        nn.BatchNorm2d(layer.out_channels, eps=1e-3, momentum=0.01),
        nn.MaxPool2d(2, 2, ceil_mode=True),
    )


@register_detector("meso_inception4", family="Naive")
class MesoInception4(_MesoNet):
    """MesoInception-4: Inception(1, 4, 4, 2), Inception(2, 4, 4, 2), two 5x5 blocks, dense head."""

    def __init__(self, cfg: MesoConfig) -> None:
        blocks = [_inception_block(3, (1, 4, 4, 2)), _inception_block(11, (2, 4, 4, 2))]
        blocks += [_conv_block(12, 16, 5, 2), _conv_block(16, 16, 5, 4)]
        super().__init__(cfg, nn.Sequential(*blocks))
