"""SlowFast's single-pathway 3-D ResNet-50 (I3D), the backbone of i3d, altfreezing and ftcn.

This is the network DeepfakeBench builds with SlowFast's ``video_model_builder.ResNet`` (Feichtenhofer
et al., "SlowFast Networks for Video Recognition", ICCV 2019) from the config text in its
``i3d_detector.py``: ARCH ``i3d``, DEPTH 50, bottleneck blocks, every block with its temporal kernel
(NUM_BLOCK_TEMP_KERNEL [[3], [4], [6], [3]]), no non-local blocks. Input ``[B, 3, T, H, W]``:

* ``s1``: conv 5x7x7 stride (1, 2, 2), BN, ReLU, max-pool 1x3x3 stride (1, 2, 2);
* ``s2``..``s5``: 3, 4, 6, 3 bottlenecks (``a``: Tx1x1, ``b``: 1x3x3 with the stage's spatial stride,
  ``c``: 1x1x1; ``branch1`` 1x1x1 projection where the shape changes); temporal kernels 3 in s2,
  alternating 3/1 in s3 and s4, 1/3 in s5; widths 256, 512, 1024, 2048;
* a temporal max-pool 2x1x1 after ``s2`` (``time_pool``), so T frames leave ``s5`` as T/2.

``temporal_only=True`` is FTCN's change (DeepfakeBench's ``temporal_only_conv``): every convolution
with a spatial kernel gets spatial kernel 1, and every spatial stride 2 becomes stride 1 followed by
a 1x2x2 max-pool after its BN, so the network sees each pixel's time series only. The replaced
convolutions are new modules in DeepfakeBench (PyTorch's default init, not loaded from a pretrained
file); :attr:`ResNet3d.replaced` names them.

Key names follow SlowFast's with the pathway level removed (``s2.pathway0_res0.`` is ``s2.0.``,
``s1.pathway0_stem.`` is ``s1.``); :func:`slowfast_rules` maps SlowFast/DeepfakeBench names onto them.
"""

from __future__ import annotations

from collections.abc import Iterator

import torch
from torch import nn

#: blocks per stage of the 50-layer network
DEPTHS = (3, 4, 6, 3)
#: SlowFast's "i3d" temporal kernel basis per stage, repeated over the stage's blocks
TEMPORAL_KERNELS = ((3,), (3, 1), (3, 1), (1, 3))
STEM_TEMPORAL_KERNEL = 5


def _bn(channels: int) -> nn.BatchNorm3d:
    return nn.BatchNorm3d(channels, eps=1e-5, momentum=0.1)


def _pool(stride: int, temporal_only: bool) -> nn.Module:
    """FTCN's 1x2x2 max-pool that replaces a spatial stride 2 (identity otherwise)."""
    return nn.MaxPool3d((1, 2, 2)) if temporal_only and stride > 1 else nn.Identity()


class Stem(nn.Module):
    """conv 5x7x7 (1, 2, 2) -> BN -> ReLU -> max-pool 1x3x3 (1, 2, 2)."""

    def __init__(self, width: int, temporal_only: bool) -> None:
        super().__init__()
        k, s = (1, 1) if temporal_only else (7, 2)
        kt = STEM_TEMPORAL_KERNEL
        self.conv = nn.Conv3d(
            3, width, (kt, k, k), (1, s, s), (kt // 2, k // 2, k // 2), bias=False
        )
        self.bn = _bn(width)
        self.bn_pool = _pool(2, temporal_only)
        self.relu = nn.ReLU(inplace=True)
        self.pool = nn.MaxPool3d((1, 3, 3), (1, 2, 2), (0, 1, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.pool(self.relu(self.bn_pool(self.bn(self.conv(x)))))


class Bottleneck(nn.Module):
    """``a`` Tx1x1 -> ``b`` 1x3x3 (stride) -> ``c`` 1x1x1, each with BN; ReLU after a and b."""

    def __init__(
        self, dim_in: int, inner: int, dim_out: int, kt: int, stride: int, temporal_only: bool
    ) -> None:
        super().__init__()
        self.a = nn.Conv3d(dim_in, inner, (kt, 1, 1), padding=(kt // 2, 0, 0), bias=False)
        self.a_bn = _bn(inner)
        k, s = (1, 1) if temporal_only else (3, stride)
        self.b = nn.Conv3d(inner, inner, (1, k, k), (1, s, s), (0, k // 2, k // 2), bias=False)
        self.b_bn = _bn(inner)
        self.b_pool = _pool(stride, temporal_only)
        self.c = nn.Conv3d(inner, dim_out, 1, bias=False)
        self.c_bn = _bn(dim_out)
        self.relu = nn.ReLU(inplace=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.relu(self.a_bn(self.a(x)))
        x = self.relu(self.b_pool(self.b_bn(self.b(x))))
        return self.c_bn(self.c(x))


class ResBlock(nn.Module):
    """``relu(branch1(x) + branch2(x))``; ``branch1`` is the identity unless the shape changes."""

    def __init__(
        self, dim_in: int, inner: int, dim_out: int, kt: int, stride: int, temporal_only: bool
    ) -> None:
        super().__init__()
        self.branch1: nn.Module | None = None
        if dim_in != dim_out or stride != 1:
            s = 1 if temporal_only else stride
            self.branch1 = nn.Conv3d(dim_in, dim_out, 1, (1, s, s), bias=False)
            self.branch1_bn = _bn(dim_out)
            self.branch1_pool = _pool(stride, temporal_only)
        self.branch2 = Bottleneck(dim_in, inner, dim_out, kt, stride, temporal_only)
        self.relu = nn.ReLU(inplace=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        shortcut = x
        if self.branch1 is not None:
            shortcut = self.branch1_pool(self.branch1_bn(self.branch1(x)))
        return self.relu(shortcut + self.branch2(x))


class ResNet3d(nn.Module):
    """I3D ResNet-50; ``stages`` of s2..s5 kept (FTCN: 3, up to s4), ``width`` = SlowFast's
    WIDTH_PER_GROUP (64); ``time_pool``: the 2x1x1 max-pool after s2."""

    def __init__(
        self,
        width: int = 64,
        stages: int = 4,
        temporal_only: bool = False,
        time_pool: bool = True,
    ) -> None:
        super().__init__()
        if not 1 <= stages <= 4:
            raise ValueError(f"stages must be 1..4 (s2..s5), got {stages}")
        self.s1 = Stem(width, temporal_only)
        dim_in = width
        for i in range(stages):
            inner, dim_out = width * 2**i, width * 4 * 2**i
            kernels = (TEMPORAL_KERNELS[i] * DEPTHS[i])[: DEPTHS[i]]
            blocks = [
                ResBlock(
                    dim_in if j == 0 else dim_out,
                    inner,
                    dim_out,
                    kernels[j],
                    2 if i > 0 and j == 0 else 1,
                    temporal_only,
                )
                for j in range(DEPTHS[i])
            ]
            self.add_module(f"s{i + 2}", nn.Sequential(*blocks))
            if i == 0:
                self.time_pool = nn.MaxPool3d((2, 1, 1)) if time_pool else nn.Identity()
            dim_in = dim_out
        self.num_stages = stages
        self.num_features = dim_in
        #: names of the convolutions FTCN's ``temporal_only`` rebuilds (spatial kernel or stride)
        self.replaced = frozenset(
            name
            for name, m in self.named_modules()
            if temporal_only and isinstance(m, nn.Conv3d) and _reshaped(m, name)
        )
        self.init_weights()

    def init_weights(self) -> None:
        """SlowFast's init: He-normal (fan_out) convolutions, BN 1/0 with the last BN of each
        bottleneck at 0; convolutions that FTCN rebuilds keep PyTorch's default init, as there."""
        for name, m in self.named_modules():
            if isinstance(m, nn.Conv3d) and name not in self.replaced:
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, nn.BatchNorm3d):
                nn.init.constant_(m.weight, 0.0 if name.endswith("c_bn") else 1.0)
                nn.init.zeros_(m.bias)

    def stages(self) -> Iterator[nn.Module]:
        yield self.s1
        for i in range(self.num_stages):
            yield getattr(self, f"s{i + 2}")
            if i == 0:
                yield self.time_pool

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for stage in self.stages():
            x = stage(x)
        return x


def _reshaped(conv: nn.Conv3d, name: str) -> bool:
    """Whether DeepfakeBench's ``temporal_only_conv`` replaced this convolution: a spatial kernel
    (the stem, every ``b``) or a spatial stride (``branch1`` of the strided blocks)."""
    first_strided = any(name == f"s{i}.0.branch1" for i in (3, 4, 5))
    return name == "s1.conv" or name.endswith(".branch2.b") or first_strided


def slowfast_rules(
    src: str, dst: str, stages: int = 4, temporal_only: bool = False
) -> list[tuple[str, str]]:
    """Prefix rules from SlowFast's names under ``src`` (``s1.pathway0_stem.``,
    ``s2.pathway0_res0.``; FTCN's BN+pool ``Sequential`` as ``bn.0.``) to ours under ``dst``."""
    rules: list[tuple[str, str]] = []
    bn = ".0." if temporal_only else "."
    rules.append((f"{src}s1.pathway0_stem.bn{bn}", f"{dst}s1.bn."))
    rules.append((f"{src}s1.pathway0_stem.", f"{dst}s1."))
    for i in range(stages):
        for j in range(DEPTHS[i]):
            a, b = f"{src}s{i + 2}.pathway0_res{j}.", f"{dst}s{i + 2}.{j}."
            if temporal_only and i > 0 and j == 0:  # the strided block's BNs carry the pool
                rules.append((f"{a}branch1_bn.0.", f"{b}branch1_bn."))
                rules.append((f"{a}branch2.b_bn.0.", f"{b}branch2.b_bn."))
            rules.append((a, b))
    return rules
