"""MesoNet (Afchar et al., "MesoNet: a Compact Facial Video Forgery Detection Network", WIFS 2018).

Two variants (``variant``). ``deepfakebench`` (the default) is DeepfakeBench's
``training/networks/mesonet.py``: convolutions without bias, ReLU then BatchNorm (eps 1e-5) where
Meso-4 shares one BN across blocks 1-2 and another across blocks 3-4, MesoInception-4 has no
ReLU and no bias in its inception branches and reuses ``bn1`` after both 5x5 convolutions, and a
2-way final layer (27,898 and 28,525 parameters); inputs normalised with mean = std = 0.5.
DeepfakeBench's ``Dropout2d`` on the flat features is a plain dropout here (training only).

``paper``: the authors' Keras model, whose released weights (``.h5``) load with
``pretrained: /path/Meso4_DF.h5`` (:mod:`detectors.keras_meso`; their sigmoid is P(real), turned
into our P(fake) on import, ``keras_output``). Convolutions with bias and
ReLU, each followed by batch norm (eps 1e-3) and max pooling; dropout 0.5, a 16-unit dense layer
with LeakyReLU(0.1), dropout 0.5 and one sigmoid output. Inputs are scaled to [0, 1] (mean 0,
std 1). MesoInception-4 replaces the first two blocks by
Inception modules (Szegedy et al. 2015) with 1x1, 3x3 and dilated (2, 3) 3x3 branches (Sec. 3.2 of
the paper; 28,615 trainable parameters at 256x256). The single output ``z`` is
returned as logits ``[0, z]`` so that ``softmax(logits)[:, 1] = sigmoid(z)`` and cross-entropy on
them equals the original binary cross-entropy; Meso4 has 27,977 trainable parameters at 256x256.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import torch
from torch import nn

from fairforensics.configs.filekind import file_kind
from fairforensics.detectors.backbones import PretrainedWeightsError
from fairforensics.detectors.base import Detector, DetectorConfig
from fairforensics.detectors.dfb_keys import remap
from fairforensics.detectors.registry import register_detector


@dataclass
class MesoConfig(DetectorConfig):
    """``variant``: DeepfakeBench's model (default) or the authors' Keras model (``paper``).

    ``keras_output``: what the sigmoid of a Keras ``.h5`` given as ``pretrained`` is the
    probability of; ``p_real`` for the authors' released files (see :mod:`detectors.keras_meso`).
    """

    variant: Literal["deepfakebench", "paper"] = "deepfakebench"
    dropout: float = 0.5
    keras_output: Literal["p_real", "p_fake"] = "p_real"


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


class _DFBMeso(nn.Module):
    """DeepfakeBench's MesoNet body: ``features`` -> flat [B, 1024] and ``classifier`` -> [B, 2]."""

    def __init__(self, side: int, dropout: float) -> None:
        super().__init__()
        self.relu = nn.ReLU(inplace=True)
        self.pool2 = nn.MaxPool2d(2)
        self.pool4 = nn.MaxPool2d(4)
        self.dropout = nn.Dropout(dropout)
        self.fc1 = nn.Linear(16 * side * side, 16)
        self.leakyrelu = nn.LeakyReLU(0.1)
        self.fc2 = nn.Linear(16, 2)

    def block(
        self, x: torch.Tensor, conv: nn.Module, bn: nn.Module, pool: nn.Module
    ) -> torch.Tensor:
        return pool(bn(self.relu(conv(x))))

    def classifier(self, feat: torch.Tensor) -> torch.Tensor:
        return self.fc2(self.dropout(self.leakyrelu(self.fc1(self.dropout(feat)))))


class _DFBMeso4(_DFBMeso):
    def __init__(self, side: int, dropout: float) -> None:
        super().__init__(side, dropout)
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 8, 5, padding=2, bias=False)
        self.bn2 = nn.BatchNorm2d(16)
        self.conv3 = nn.Conv2d(8, 16, 5, padding=2, bias=False)
        self.conv4 = nn.Conv2d(16, 16, 5, padding=2, bias=False)

    def features(self, x: torch.Tensor) -> torch.Tensor:
        x = self.block(x, self.conv1, self.bn1, self.pool2)
        x = self.block(x, self.conv2, self.bn1, self.pool2)
        x = self.block(x, self.conv3, self.bn2, self.pool2)
        return torch.flatten(self.block(x, self.conv4, self.bn2, self.pool4), 1)


class _DFBMesoInception4(_DFBMeso):
    _BRANCHES = ("conv1", "conv2_1", "conv2_2", "conv3_1", "conv3_2", "conv4_1", "conv4_2")

    def __init__(self, side: int, dropout: float) -> None:
        super().__init__(side, dropout)
        for i, (cin, (a, b, c, d)) in enumerate(((3, (1, 4, 4, 2)), (11, (2, 4, 4, 2))), 1):
            p = f"Incption{i}_"
            setattr(self, p + "conv1", nn.Conv2d(cin, a, 1, bias=False))
            setattr(self, p + "conv2_1", nn.Conv2d(cin, b, 1, bias=False))
            setattr(self, p + "conv2_2", nn.Conv2d(b, b, 3, padding=1, bias=False))
            setattr(self, p + "conv3_1", nn.Conv2d(cin, c, 1, bias=False))
            setattr(self, p + "conv3_2", nn.Conv2d(c, c, 3, padding=2, dilation=2, bias=False))
            setattr(self, p + "conv4_1", nn.Conv2d(cin, d, 1, bias=False))
            setattr(self, p + "conv4_2", nn.Conv2d(d, d, 3, padding=3, dilation=3, bias=False))
            setattr(self, p + "bn", nn.BatchNorm2d(a + b + c + d))
        self.conv1 = nn.Conv2d(12, 16, 5, padding=2, bias=False)
        self.bn1 = nn.BatchNorm2d(16)
        self.conv2 = nn.Conv2d(16, 16, 5, padding=2, bias=False)

    def inception(self, x: torch.Tensor, i: int) -> torch.Tensor:
        """Linear branches (no ReLU, no bias) -> concat -> BN -> max-pool 2."""
        c = {n: getattr(self, f"Incption{i}_{n}") for n in self._BRANCHES}
        y = torch.cat(
            [
                c["conv1"](x),
                c["conv2_2"](c["conv2_1"](x)),
                c["conv3_2"](c["conv3_1"](x)),
                c["conv4_2"](c["conv4_1"](x)),
            ],
            dim=1,
        )
        return self.pool2(getattr(self, f"Incption{i}_bn")(y))

    def features(self, x: torch.Tensor) -> torch.Tensor:
        x = self.inception(self.inception(x, 1), 2)
        x = self.block(x, self.conv1, self.bn1, self.pool2)
        return torch.flatten(self.block(x, self.conv2, self.bn1, self.pool4), 1)


def _is_keras_file(weights: Any) -> bool:
    """A ``pretrained`` value naming a Keras ``.h5`` (by its suffix or, if it exists, content)."""
    if not isinstance(weights, str):
        return False
    path = Path(weights).expanduser()
    if path.is_file() and path.stat().st_size:
        return file_kind(path) == "hdf5"
    return weights.lower().endswith(".h5")


class _MesoNet(Detector):
    """Four blocks ending in 16 channels at 1/32 of the input side, then the dense head."""

    Config = MesoConfig
    _dfb_body: type[_DFBMeso] = _DFBMeso
    #: ``pretrained:`` and ``load_detector_file`` accept the authors' Keras ``.h5`` files.
    keras_weights = True

    def __init__(self, cfg: MesoConfig, features: nn.Sequential) -> None:
        super().__init__(cfg)
        weights = cfg.pretrained
        if weights not in (False, None, "", "false", "none"):
            if not _is_keras_file(weights):
                raise PretrainedWeightsError(
                    f"{type(self).name}: pretrained {weights!r}: MesoNets have no ImageNet "
                    "backbone; give a whole-detector checkpoint or the authors' Keras .h5 file "
                    "(variant: paper), or 'pretrained: false'"
                )
            if cfg.variant != "paper":
                raise PretrainedWeightsError(
                    f"{weights}: Keras MesoNet weights fit 'variant: paper' "
                    f"(configs/detectors/paper/{type(self).name}.yaml), not {cfg.variant!r}"
                )
            if tuple(cfg.mean) != (0.0, 0.0, 0.0) or tuple(cfg.std) != (1.0, 1.0, 1.0):
                raise PretrainedWeightsError(
                    f"{weights}: Keras MesoNet weights expect RGB in [0, 1] (the authors' "
                    f"rescale=1/255): set mean [0, 0, 0] and std [1, 1, 1], not mean "
                    f"{list(cfg.mean)} and std {list(cfg.std)}"
                )
        if cfg.variant == "deepfakebench":
            self.backbone = self._dfb_body(cfg.input_size // 32, cfg.dropout)
            return
        self.features = features
        side = -(-cfg.input_size // 32)  # ceil: pools of 2, 2, 2, 4
        self.head = _MesoHead(16 * side * side, cfg.dropout)
        if _is_keras_file(weights):
            from fairforensics.detectors.keras_meso import load_keras_mesonet

            load_keras_mesonet(self, weights, (side, side, 16), cfg.keras_output)

    def forward(self, batch: dict[str, Any]) -> dict[str, torch.Tensor]:
        if self.cfg.variant == "deepfakebench":
            feat = self.backbone.features(batch["image"])
            return self.outputs(self.backbone.classifier(feat), feat)
        logits, feat = self.head(self.features(batch["image"]))
        return self.outputs(logits, feat)

    def map_deepfakebench_state_dict(
        self, state_dict: dict[str, torch.Tensor]
    ) -> dict[str, torch.Tensor]:
        """Same names as DeepfakeBench under ``backbone.`` (the ``deepfakebench`` variant)."""
        if self.cfg.variant != "deepfakebench":
            raise KeyError("DeepfakeBench weights need 'variant: deepfakebench'")
        return remap(state_dict, {"backbone.": "backbone."})


@register_detector("meso4", family="Naive")
class Meso4(_MesoNet):
    """Meso-4: four convolution blocks (8, 8, 16, 16 filters) and the dense head."""

    deepfakebench_name = "meso4"
    _dfb_body = _DFBMeso4

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

    deepfakebench_name = "meso4Inception"
    _dfb_body = _DFBMesoInception4

    def __init__(self, cfg: MesoConfig) -> None:
        blocks = [_inception_block(3, (1, 4, 4, 2)), _inception_block(11, (2, 4, 4, 2))]
        blocks += [_conv_block(12, 16, 5, 2), _conv_block(16, 16, 5, 4)]
        super().__init__(cfg, nn.Sequential(*blocks))
