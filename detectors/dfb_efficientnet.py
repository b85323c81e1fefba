"""DeepfakeBench's EfficientNet-B4 backbone, run stage by stage (sbi, sia, multi_attention, lrl).

DeepfakeBench v2's detectors built on ``training/networks/efficientnetb4.py`` reach into
efficientnet_pytorch's model: they run its 32 MBConv blocks (``_blocks.0`` .. ``_blocks.31``) one by
one, tap intermediate outputs, and some skip the Swish after the stem and head BatchNorms. Here the
backbone is timm's ``efficientnet_b4`` with efficientnet_pytorch's numerics
(:func:`detectors.efficientnet.efficientnet_pytorch_numerics`: unpadded stem, static "same"
padding of a 380x380 input, BatchNorm eps 1e-3 / momentum 0.01), and the helpers below expose the
same pieces: :func:`flat_blocks` (efficientnet_pytorch's flat block index), :func:`stem` and
:func:`head` (with or without the Swish). ``drop_connect`` is efficientnet_pytorch's drop-connect
rate (0.2 where DeepfakeBench calls the blocks with it; 0 where it calls ``block(x)`` bare).

``pretrained``: ``false``, ``timm`` (hub) or a local file in timm's layout or in
efficientnet_pytorch's (``efficientnet-b4-6ed6700e.pth``, the file DeepfakeBench's configs name),
loaded strictly (its 1000-class ``_fc`` is ignored). A one-channel stem (LRL's ``idct`` encoder)
gets the RGB stem summed over its input channels, timm's rule (DeepfakeBench re-draws it at random).
"""

from __future__ import annotations

from functools import partial

import torch
from torch import nn

from fairforensics.detectors.backbones import (
    PretrainedWeightsError,
    create_timm_backbone,
    load_state_dict_file,
)
from fairforensics.detectors.dfb_keys import remap
from fairforensics.detectors.efficientnet import (
    efficientnet_b4_rules,
    efficientnet_pytorch_numerics,
)

ARCH = "efficientnet_b4"
#: DeepfakeBench's global drop-connect rate (efficientnet_pytorch's B4 default), scaled by block.
DROP_CONNECT = 0.2
#: Output channels of the 32 blocks (stages of 2, 4, 4, 6, 6, 8, 2 blocks) and of the head.
BLOCK_CHANNELS = (
    (24,) * 2 + (32,) * 4 + (56,) * 4 + (112,) * 6 + (160,) * 6 + (272,) * 8 + (448,) * 2
)
HEAD_CHANNELS = 1792
_NOT_A_FILE = ("", "timm", "false", "none", "true")


def _timm_names(state: dict[str, torch.Tensor], in_chans: int) -> dict[str, torch.Tensor]:
    """A B4 state dict in timm's names (efficientnet_pytorch's layout is renamed), with the stem
    summed over its RGB channels for a model of ``in_chans`` = 1."""
    if any(k.startswith("_blocks.") for k in state):
        rules = efficientnet_b4_rules("", "") | {"_fc.": "classifier."}
        try:
            state = remap(state, rules)
        except KeyError as exc:
            raise PretrainedWeightsError(
                f"not an efficientnet_pytorch EfficientNet-B4 file: {exc.args[0]}"
            ) from None
    stem = state.get("conv_stem.weight")
    if in_chans == 1 and stem is not None and stem.shape[1] == 3:
        state = {**state, "conv_stem.weight": stem.sum(dim=1, keepdim=True)}
    return state


def build_efficientnet_b4(
    pretrained: bool | str = False,
    in_chans: int = 3,
    drop_connect: float = DROP_CONNECT,
    same_stem: bool = False,
) -> nn.Module:
    """timm's ``efficientnet_b4`` (no classifier) with efficientnet_pytorch's numerics;
    ``same_stem``: efficientnet_pytorch's own "same"-padded stem (LSDA builds the model with
    ``EfficientNet.from_pretrained``) instead of DeepfakeBench's unpadded one."""
    kwargs = {"num_classes": 0, "in_chans": in_chans, "drop_path_rate": drop_connect}
    if isinstance(pretrained, str) and pretrained.lower() not in _NOT_A_FILE:
        model = create_timm_backbone(ARCH, False, **kwargs)
        load_state_dict_file(model, pretrained, rename=partial(_timm_names, in_chans=in_chans))
    else:
        model = create_timm_backbone(ARCH, pretrained, **kwargs)
    return efficientnet_pytorch_numerics(model, same_stem=same_stem)


def flat_blocks(net: nn.Module) -> list[nn.Module]:
    """The 32 MBConv blocks in efficientnet_pytorch's flat order (``_blocks.0`` .. ``_blocks.31``)."""
    return [block for stage in net.blocks for block in stage]


def _bn(bn: nn.Module, x: torch.Tensor, act: bool) -> torch.Tensor:
    """timm's BatchNorm + Swish (``act``), or the BatchNorm alone."""
    return bn(x) if act else nn.BatchNorm2d.forward(bn, x)


def stem(net: nn.Module, x: torch.Tensor, act: bool = True) -> torch.Tensor:
    """``_conv_stem`` + ``_bn0`` (+ Swish)."""
    return _bn(net.bn1, net.conv_stem(x), act)


def head(net: nn.Module, x: torch.Tensor, act: bool = True) -> torch.Tensor:
    """``_conv_head`` + ``_bn1`` (+ Swish): the 1792-channel feature map."""
    return _bn(net.bn2, net.conv_head(x), act)


def run_blocks(net: nn.Module, x: torch.Tensor, start: int, stop: int) -> torch.Tensor:
    """Blocks ``start`` .. ``stop - 1`` in efficientnet_pytorch's flat order."""
    for block in flat_blocks(net)[start:stop]:
        x = block(x)
    return x


def backbone_rules(src: str, dst: str) -> dict[str, str]:
    """Key rules of DeepfakeBench's ``EfficientNetB4`` under ``src`` (its ``efficientnet.*``;
    ``last_layer`` is left to the caller) onto a backbone built here under ``dst``."""
    return efficientnet_b4_rules(src + "efficientnet.", dst)
