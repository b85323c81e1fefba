"""StA-CLIP's backbone: a CLIP ViT whose every block ends with a spatio-temporal adapter.

DeepfakeBench v2's ``training/detectors/sta_detector.py`` (``ViT_CLIP``, ``ViT_Adapter``). The ViT is
OpenAI CLIP's vision tower (``conv1`` patch embedding without bias, class and position embeddings,
``ln_pre``, pre-norm blocks of ``nn.MultiheadAttention`` and a quick-GELU MLP, ``ln_post``; its
LayerNorms compute in at least float32 whatever the input dtype) plus a learned temporal
embedding added to every token of frame t. Each block ends with an adapter on the
``[B*T, 1+HW, C]`` tokens:

    down (C -> C/2), GELU; patch tokens as a [B, C/2, T, H, W] volume:
    xs = mean of 3 spatial depthwise stacks (1x3x3, 1x5x5, 1x7x7) + volume
    xt = mean of 3 temporal depthwise stacks (3x1x1, 5x1x1, 7x1x1) + volume
    (each stack: 3 x [depthwise Conv3d, BatchNorm3d], ReLU between)
    s2t = attention(query xt, key/value xs), t2s = attention(query xs, key/value xt) (2 heads,
    over T*H*W positions; DeepfakeBench's layout mixes the clips of a batch, see
    :class:`CrossAttention`); GELU((s2t + t2s) / 2); CLS token rejoined;
    up (C/2 -> C), GELU; added to the block's output.

The key names are DeepfakeBench's, which are OpenAI CLIP's for the ViT part.
"""

from __future__ import annotations

from collections import OrderedDict

import torch
from torch import nn
from torch.nn import functional as F


def at_least_float32(x: torch.Tensor) -> torch.Tensor:
    """``x`` in float32 when narrower (fp16/bf16), else as it is (float32, float64)."""
    return x.to(torch.promote_types(x.dtype, torch.float32))


class LayerNorm32(nn.LayerNorm):
    """LayerNorm computed in at least float32 and returned in the input's dtype (CLIP's, for
    fp16/bf16; a float64 model computes in float64)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return super().forward(at_least_float32(x)).to(x.dtype)


class QuickGELU(nn.Module):
    """CLIP's ``x * sigmoid(1.702 x)``."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.sigmoid(1.702 * x)


class DepthwiseStack(nn.Module):
    """Three depthwise ``Conv3d`` + ``BatchNorm3d`` with ReLU between (none after the last),
    computed in at least float32 (also under autocast)."""

    def __init__(self, channels: int, kernel: tuple[int, int, int]) -> None:
        super().__init__()
        pad = tuple(k // 2 for k in kernel)
        for i in (1, 2, 3):
            conv = nn.Conv3d(channels, channels, kernel, padding=pad, groups=channels)
            self.add_module(f"conv{i}", conv)
            self.add_module(f"bn{i}", nn.BatchNorm3d(channels))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # float32 under autocast: PyTorch 2.14's bf16 depthwise Conv3d on the CPU gives a NaN in
        # the weight gradient now and then (seen with a 5x1x1 kernel over 4 frames)
        with torch.autocast(x.device.type, enabled=False):
            x = F.relu(self.bn1(self.conv1(at_least_float32(x))))
            x = F.relu(self.bn2(self.conv2(x)))
            return self.bn3(self.conv3(x))


class CrossAttention(nn.Module):
    """Spatial <-> temporal cross-attention over the positions of [B, C, T, H, W] volumes.

    ``batch_coupled`` (DeepfakeBench's code): the volumes become attention sequences through
    ``permute(2, 0, 3, 1).reshape(T*H*W, B, C)``, which interleaves the clips of a batch, so each
    sequence holds positions of several clips and a clip's output depends on the other clips in its
    batch (with one clip per batch it is the per-clip attention). ``False`` (default): each clip
    attends over its own T*H*W positions.
    """

    def __init__(self, dim: int, heads: int, batch_coupled: bool = False) -> None:
        super().__init__()
        self.batch_coupled = batch_coupled
        self.spatial_to_temporal = nn.MultiheadAttention(dim, heads, batch_first=True)
        self.temporal_to_spatial = nn.MultiheadAttention(dim, heads, batch_first=True)

    def _sequences(self, vol: torch.Tensor) -> torch.Tensor:
        """[B, C, T, H, W] -> [sequences, length, C]."""
        b, c = vol.shape[:2]
        if self.batch_coupled:
            tokens = vol.reshape(b, c, vol.shape[2], -1).permute(2, 0, 3, 1).reshape(-1, b, c)
            return tokens.transpose(0, 1)
        return vol.flatten(2).transpose(1, 2)

    def _volume(self, seq: torch.Tensor, shape: torch.Size) -> torch.Tensor:
        """The inverse of :meth:`_sequences`."""
        b, c, t, h, w = shape
        if self.batch_coupled:
            return seq.transpose(0, 1).reshape(t, h * w, b, c).permute(2, 3, 0, 1).reshape(shape)
        return seq.transpose(1, 2).reshape(shape)

    def forward(
        self, spatial: torch.Tensor, temporal: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        s, t = self._sequences(spatial), self._sequences(temporal)
        s2t = self.spatial_to_temporal(t, s, s, need_weights=False)[0]
        t2s = self.temporal_to_spatial(s, t, t, need_weights=False)[0]
        return self._volume(s2t, spatial.shape), self._volume(t2s, spatial.shape)


class StAdapter(nn.Module):
    """The spatio-temporal adapter at the end of each block (module docstring)."""

    SPATIAL = ((1, 3, 3), (1, 5, 5), (1, 7, 7))
    TEMPORAL = ((3, 1, 1), (5, 1, 1), (7, 1, 1))

    def __init__(
        self, width: int, num_frames: int, heads: int = 2, batch_coupled: bool = False
    ) -> None:
        super().__init__()
        hidden = width // 2
        self.num_frames = num_frames
        self.down = nn.Linear(width, hidden)
        for i, k in enumerate(self.SPATIAL, 1):
            self.add_module(f"s_conv{i}", DepthwiseStack(hidden, k))
        for i, k in enumerate(self.TEMPORAL, 1):
            self.add_module(f"t_conv{i}", DepthwiseStack(hidden, k))
        self.up = nn.Linear(hidden, width)
        self.cross_attention = CrossAttention(hidden, heads, batch_coupled)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        bt, n, _ = x.shape
        side = round((n - 1) ** 0.5)
        h = F.gelu(self.down(x))
        cls, patches = h[:, :1], h[:, 1:]
        vol = patches.reshape(bt // self.num_frames, self.num_frames, side, side, -1)
        vol = vol.permute(0, 4, 1, 2, 3)  # [B, C, T, H, W]
        xs = (self.s_conv1(vol) + self.s_conv2(vol) + self.s_conv3(vol)) / 3 + vol
        xt = (self.t_conv1(vol) + self.t_conv2(vol) + self.t_conv3(vol)) / 3 + vol
        xs, xt = self.cross_attention(xs, xt)
        vol = F.gelu((xs + xt) / 2)
        patches = vol.permute(0, 2, 3, 4, 1).reshape(bt, side * side, -1)
        return x + F.gelu(self.up(torch.cat([cls, patches], dim=1)))


class AdapterBlock(nn.Module):
    """CLIP's residual attention block followed by a :class:`StAdapter`."""

    def __init__(self, width: int, heads: int, num_frames: int, batch_coupled: bool) -> None:
        super().__init__()
        self.ln_1 = LayerNorm32(width)
        self.attn = nn.MultiheadAttention(width, heads, batch_first=True)
        self.ln_2 = LayerNorm32(width)
        self.mlp = nn.Sequential(
            OrderedDict(
                [
                    ("c_fc", nn.Linear(width, 4 * width)),
                    ("gelu", QuickGELU()),
                    ("c_proj", nn.Linear(4 * width, width)),
                ]
            )
        )
        self.Adapter = StAdapter(width, num_frames, batch_coupled=batch_coupled)  # noqa: N815 - DeepfakeBench's key name

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.ln_1(x)
        x = x + self.attn(h, h, h, need_weights=False)[0]
        x = x + self.mlp(self.ln_2(x))
        return self.Adapter(x)


class Transformer(nn.Module):
    """``resblocks``: the stack of :class:`AdapterBlock` (CLIP's key names)."""

    def __init__(
        self, width: int, layers: int, heads: int, num_frames: int, batch_coupled: bool
    ) -> None:
        super().__init__()
        self.resblocks = nn.Sequential(
            *(AdapterBlock(width, heads, num_frames, batch_coupled) for _ in range(layers))
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.resblocks(x)


class StaViT(nn.Module):
    """CLIP ViT with a temporal embedding and adapters: clips [B, T, 3, H, W] -> per-frame CLS
    features [B, T, width] (after ``ln_post``)."""

    def __init__(
        self,
        input_size: int,
        patch_size: int,
        width: int,
        layers: int,
        heads: int,
        num_frames: int,
        batch_coupled: bool = False,
    ) -> None:
        super().__init__()
        grid = input_size // patch_size
        scale = width**-0.5
        self.num_frames = num_frames
        self.conv1 = nn.Conv2d(3, width, patch_size, stride=patch_size, bias=False)
        self.class_embedding = nn.Parameter(scale * torch.randn(width))
        self.positional_embedding = nn.Parameter(scale * torch.randn(grid * grid + 1, width))
        self.temporal_embedding = nn.Parameter(torch.zeros(1, num_frames, width))
        self.ln_pre = LayerNorm32(width)
        self.transformer = Transformer(width, layers, heads, num_frames, batch_coupled)
        self.ln_post = LayerNorm32(width)

    def forward(self, clips: torch.Tensor) -> torch.Tensor:
        b, t = clips.shape[:2]
        x = self.conv1(clips.flatten(0, 1)).flatten(2).transpose(1, 2)  # [B*T, HW, C]
        cls = self.class_embedding.to(x.dtype).expand(x.shape[0], 1, -1)
        x = torch.cat([cls, x], dim=1) + self.positional_embedding.to(x.dtype)
        n, c = x.shape[1:]
        x = (x.reshape(b, t, n, c) + self.temporal_embedding[:, :, None, :]).reshape(b * t, n, c)
        x = self.ln_post(self.transformer(self.ln_pre(x)))
        return x[:, 0].reshape(b, t, c)
