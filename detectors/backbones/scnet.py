"""SCNet-50-v1d with STIL's temporal modules (Gu et al., "Spatiotemporal Inconsistency Learning for
DeepFake Video Detection", ACM MM 2021), as DeepfakeBench v2 builds it in ``stil_detector.py``.

The frame backbone is SCNet-50 v1d (Liu et al., "Improving Convolutional Networks with
Self-Calibrated Convolutions", CVPR 2020): a deep stem (three 3x3 convolutions, widths 32, 32, 64),
average-pool downsampling in the projections (``avg_down``) and an average pool after the strided
3x3 (``avd``). Each bottleneck splits into two halves of ``planes / 2`` channels:

* ``b`` (spatial): the self-calibrated convolution, where ``k3(x) * sigmoid(x + up(f_h(f_w(x))))``
  (``f_w``: 4x4 average pool, 1x3 conv; ``f_h``: 3x1 conv; STIL's factorised form of SCNet's
  ``k2``) gives the spatial cue, then ``k4``;
* ``a`` (temporal): the Temporal Inconsistency Module (TIM: differences between each frame and the
  next along the H-T and T-W planes at two scales, turned into an attention ``x * (1 + att)``), plus
  the Information Supplement Module (ISM: a channel attention of the spatial cue), then a
  learnable temporal shift (a depth-wise ``Conv1d`` over time that starts as TSM's shift of one
  eighth of the channels forward and one eighth back), then ``k1``.

Frames are processed as a batch ``[N * T, 3, H, W]``; the temporal modules fold time back out with
``num_segments``. Key names are SCNet's and DeepfakeBench's (``conv1.0``, ``layer1.0.scconv.k3``...),
so SCNet's ImageNet file loads by name (:data:`STIL_ONLY` lists what it cannot provide).
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

#: modules of the STIL network that an ImageNet SCNet file does not hold (its ``scconv.k2`` is
#: factorised into ``f_w``/``f_h`` here)
STIL_ONLY = (".tim.", ".ism.", ".shift.", ".scconv.f_w.", ".scconv.f_h.")
DEPTHS = (3, 4, 6, 3)
EXPANSION = 4


def _conv_bn(c_in: int, c_out: int, kernel: tuple[int, int], padding: tuple[int, int]) -> nn.Module:
    return nn.Sequential(
        nn.Conv2d(c_in, c_out, kernel, padding=padding, bias=False), nn.BatchNorm2d(c_out)
    )


class TIM(nn.Module):
    """Temporal Inconsistency Module: attention from frame differences along H-T and T-W."""

    def __init__(self, channels: int, segments: int, reduction: int = 16) -> None:
        super().__init__()
        self.segments = segments
        c = channels // reduction
        self.conv1 = nn.Conv2d(channels, c, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(c)
        self.conv_ht = nn.Conv2d(c, c, (3, 1), padding=(1, 0), groups=c, bias=False)
        self.conv_tw = nn.Conv2d(c, c, (1, 3), padding=(0, 1), groups=c, bias=False)
        self.avg_pool_ht = nn.AvgPool2d((2, 1), (2, 1))
        self.avg_pool_tw = nn.AvgPool2d((1, 2), (1, 2))
        self.htie_conv1 = _conv_bn(c, c, (3, 1), (1, 0))
        self.vtie_conv1 = _conv_bn(c, c, (1, 3), (0, 1))
        self.htie_conv2 = _conv_bn(c, c, (3, 1), (1, 0))
        self.vtie_conv2 = _conv_bn(c, c, (1, 3), (0, 1))
        self.ht_up_conv = _conv_bn(c, channels, (1, 1), (0, 0))
        self.tw_up_conv = _conv_bn(c, channels, (1, 1), (0, 0))

    @staticmethod
    def _branch(
        plane: torch.Tensor, conv: nn.Module, pool: nn.Module, tie1: nn.Module, tie2: nn.Module,
        up: nn.Module, time_dim: int,
    ) -> torch.Tensor:  # fmt: skip
        """One branch on ``plane`` [M, c, ., .] whose time axis is ``time_dim`` (2 or 3)."""
        t = plane.shape[time_dim]
        conv_next = conv(plane).narrow(time_dim, 1, t - 1)  # the smoothed next frame
        diff = conv_next - plane.narrow(time_dim, 0, t - 1)
        pad = [0, 1] if time_dim == 3 else [0, 0, 0, 1]
        diff = F.pad(diff, pad, value=0)  # the last frame has no successor
        coarse = F.interpolate(tie1(pool(diff)), diff.shape[2:])
        fine = tie2(diff)
        return torch.sigmoid(up(1 / 3.0 * diff + 1 / 3.0 * coarse + 1 / 3.0 * fine)) - 0.5

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        nt, ch, h, w = x.shape
        z = self.bn1(self.conv1(x))
        z = z.reshape(-1, self.segments, *z.shape[1:])  # [n, t, c, h, w]
        n, t, c = z.shape[:3]
        ht = z.permute(0, 4, 2, 3, 1).reshape(n * w, c, h, t)
        ht = self._branch(
            ht, self.conv_ht, self.avg_pool_ht, self.htie_conv1, self.htie_conv2, self.ht_up_conv, 3
        )
        ht = ht.reshape(n, w, ch, h, t).permute(0, 4, 2, 3, 1).reshape(nt, ch, h, w)
        tw = z.permute(0, 3, 2, 1, 4).reshape(n * h, c, t, w)
        tw = self._branch(
            tw, self.conv_tw, self.avg_pool_tw, self.vtie_conv1, self.vtie_conv2, self.tw_up_conv, 2
        )
        tw = tw.reshape(n, h, ch, t, w).permute(0, 3, 2, 1, 4).reshape(nt, ch, h, w)
        att = 0.5 * (ht + tw)
        return x + x * att


class ISM(nn.Module):
    """Information Supplement Module: ECA-style channel attention (Conv1d over channels)."""

    def __init__(self, kernel: int = 3) -> None:
        super().__init__()
        self.conv = nn.Conv1d(1, 1, kernel, padding=(kernel - 1) // 2, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = x.mean(dim=(2, 3)).unsqueeze(1)  # [NT, 1, C]
        return x * torch.sigmoid(self.conv(y)).transpose(1, 2).unsqueeze(-1)


class Shift(nn.Module):
    """Learnable temporal shift: a depth-wise Conv1d (kernel 3) over time, initialised as a shift of
    the first eighth of the channels from the next frame and the second eighth from the previous."""

    def __init__(self, channels: int, segments: int, div: int = 8) -> None:
        super().__init__()
        self.segments = segments
        fold = channels // div
        width = fold * div
        self.conv = nn.Conv1d(width, width, 3, padding=1, groups=width, bias=False)
        with torch.no_grad():
            self.conv.weight.zero_()
            self.conv.weight[:fold, 0, 2] = 1
            self.conv.weight[fold : 2 * fold, 0, 0] = 1
            self.conv.weight[2 * fold :, 0, 1] = 1

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        nt, c, h, w = x.shape
        n = nt // self.segments
        y = (
            x.reshape(n, self.segments, c, h, w)
            .permute(0, 3, 4, 2, 1)
            .reshape(-1, c, self.segments)
        )
        y = self.conv(y).reshape(n, h, w, c, self.segments)
        return y.permute(0, 4, 3, 1, 2).reshape(nt, c, h, w)


class SCConv(nn.Module):
    """STIL's self-calibrated convolution; returns (output, spatial cue for ISM)."""

    def __init__(self, channels: int, stride: int, pooling: int = 4) -> None:
        super().__init__()
        self.f_w = nn.Sequential(
            nn.AvgPool2d(pooling, pooling),
            nn.Conv2d(channels, channels, (1, 3), padding=(0, 1), bias=False),
            nn.BatchNorm2d(channels),
            nn.ReLU(inplace=True),
        )
        self.f_h = _conv_bn(channels, channels, (3, 1), (1, 0))
        self.k3 = _conv_bn(channels, channels, (3, 3), (1, 1))
        self.k4 = nn.Sequential(
            nn.Conv2d(channels, channels, 3, stride, 1, bias=False), nn.BatchNorm2d(channels)
        )

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        gate = torch.sigmoid(x + F.interpolate(self.f_h(self.f_w(x)), x.shape[2:]))
        cue = self.k3(x) * gate
        return self.k4(cue), cue


class Bottleneck(nn.Module):
    """SCNet bottleneck with STIL's temporal half (see the module docstring)."""

    def __init__(
        self, segments: int, inplanes: int, planes: int, stride: int = 1, avd: bool = False
    ) -> None:
        super().__init__()
        width = planes // 2
        self.conv1_a = nn.Conv2d(inplanes, width, 1, bias=False)
        self.bn1_a = nn.BatchNorm2d(width)
        self.conv1_b = nn.Conv2d(inplanes, width, 1, bias=False)
        self.bn1_b = nn.BatchNorm2d(width)
        self.tim = TIM(width, segments)
        self.shift = Shift(width, segments)
        self.ism = ISM()
        self.avd_layer = nn.AvgPool2d(3, stride, padding=1) if avd else None
        inner_stride = 1 if avd else stride
        self.k1 = nn.Sequential(
            nn.Conv2d(width, width, 3, inner_stride, 1, bias=False), nn.BatchNorm2d(width)
        )
        self.scconv = SCConv(width, inner_stride)
        self.conv3 = nn.Conv2d(2 * width, planes * EXPANSION, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(planes * EXPANSION)
        self.relu = nn.ReLU(inplace=True)
        self.downsample: nn.Module | None = None
        if stride != 1 or inplanes != planes * EXPANSION:
            pool = nn.AvgPool2d(stride, stride, ceil_mode=True, count_include_pad=False)
            self.downsample = nn.Sequential(
                pool,
                nn.Conv2d(inplanes, planes * EXPANSION, 1, bias=False),
                nn.BatchNorm2d(planes * EXPANSION),
            )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out_a = self.relu(self.bn1_a(self.conv1_a(x)))
        out_b = self.relu(self.bn1_b(self.conv1_b(x)))
        out_b, cue = self.scconv(out_b)
        out_b = self.relu(out_b)
        out_a = self.shift(self.tim(out_a) + self.ism(cue))
        out_a = self.relu(self.k1(out_a))
        if self.avd_layer is not None:
            out_a, out_b = self.avd_layer(out_a), self.avd_layer(out_b)
        out = self.bn3(self.conv3(torch.cat([out_a, out_b], dim=1)))
        shortcut = x if self.downsample is None else self.downsample(x)
        return self.relu(out + shortcut)


class STILNet(nn.Module):
    """SCNet-50 v1d with STIL bottlenecks; ``forward`` gives pooled features [N*T, 32 * width]
    (2048). ``width``: the planes of ``layer1`` (64; 128, 256, 512 after it), the stem half of it;
    ``depths``: the bottlenecks of each layer (SCNet-50's 3, 4, 6, 3)."""

    def __init__(self, segments: int, width: int = 64, depths: tuple[int, ...] = DEPTHS) -> None:
        super().__init__()
        stem_width = width // 2
        self.conv1 = nn.Sequential(
            nn.Conv2d(3, stem_width, 3, 2, 1, bias=False),
            nn.BatchNorm2d(stem_width),
            nn.ReLU(inplace=True),
            nn.Conv2d(stem_width, stem_width, 3, 1, 1, bias=False),
            nn.BatchNorm2d(stem_width),
            nn.ReLU(inplace=True),
            nn.Conv2d(stem_width, stem_width * 2, 3, 1, 1, bias=False),
        )
        self.bn1 = nn.BatchNorm2d(stem_width * 2)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, 2, 1)
        inplanes = stem_width * 2
        for i, depth in enumerate(depths):
            planes, stride = width * 2**i, 1 if i == 0 else 2
            blocks = [Bottleneck(segments, inplanes, planes, stride, avd=stride > 1)]
            inplanes = planes * EXPANSION
            blocks += [Bottleneck(segments, inplanes, planes) for _ in range(1, depth)]
            self.add_module(f"layer{i + 1}", nn.Sequential(*blocks))
        self.num_features = inplanes
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.ones_(m.weight)
                nn.init.zeros_(m.bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        for i in range(1, 5):
            x = getattr(self, f"layer{i}")(x)
        return x.mean(dim=(2, 3))
