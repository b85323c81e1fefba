"""CLIP vision-tower weights under OpenAI CLIP's key names, from the files users have.

OpenAI's layout (``conv1``, ``class_embedding``, ``positional_embedding``, ``ln_pre``,
``transformer.resblocks.N.{ln_1, attn.in_proj_weight, attn.out_proj, ln_2, mlp.c_fc, mlp.c_proj}``,
``ln_post``, ``proj``) is what :mod:`detectors.backbones.sta_vit` uses. :func:`openai_visual_state`
converts:

* a whole OpenAI / open_clip CLIP state dict (``visual.*`` kept, the text tower left out) or the
  visual tower's own state dict (as it is);
* Hugging Face ``CLIPModel`` / ``CLIPVisionModel`` tensors (with or without ``vision_model.``; the
  text tower and projections are left out): ``q_proj``/``k_proj``/``v_proj`` are stacked into
  ``in_proj_weight``/``in_proj_bias``, the other names are renamed one to one.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

import torch

_HF_NAMES = {
    "embeddings.class_embedding": "class_embedding",
    "embeddings.patch_embedding.weight": "conv1.weight",
    "embeddings.position_embedding.weight": "positional_embedding",
}
_HF_PREFIXES = {"pre_layrnorm.": "ln_pre.", "post_layernorm.": "ln_post."}
_HF_BLOCK = {
    "layer_norm1.": "ln_1.",
    "layer_norm2.": "ln_2.",
    "mlp.fc1.": "mlp.c_fc.",
    "mlp.fc2.": "mlp.c_proj.",
    "self_attn.out_proj.": "attn.out_proj.",
}
_HF_LAYER = re.compile(r"^encoder\.layers\.(\d+)\.(.+)$")
_QKV = re.compile(r"^self_attn\.([qkv])_proj\.(weight|bias)$")


def is_hf_clip(keys: list[str]) -> bool:
    """True for Hugging Face CLIP key names."""
    return any(k.endswith("embeddings.patch_embedding.weight") for k in keys)


def _hf_to_openai(state: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    out: dict[str, torch.Tensor] = {}
    qkv: dict[tuple[str, str], dict[str, torch.Tensor]] = {}
    for key, value in state.items():
        layer = _HF_LAYER.match(key)
        if key in _HF_NAMES:
            out[_HF_NAMES[key]] = value
        elif key.startswith(tuple(_HF_PREFIXES)):
            src = next(p for p in _HF_PREFIXES if key.startswith(p))
            out[_HF_PREFIXES[src] + key[len(src) :]] = value
        elif layer is not None:
            block, rest = f"transformer.resblocks.{layer.group(1)}.", layer.group(2)
            part = _QKV.match(rest)
            if part is not None:
                qkv.setdefault((block, part.group(2)), {})[part.group(1)] = value
                continue
            src = next((p for p in _HF_BLOCK if rest.startswith(p)), None)
            out[block + (_HF_BLOCK[src] + rest[len(src) :] if src else rest)] = value
        else:
            out[key] = value  # not a CLIP vision name: reported as unexpected by the loader
    for (block, kind), parts in qkv.items():
        if len(parts) == 3:
            out[f"{block}attn.in_proj_{kind}"] = torch.cat([parts[n] for n in "qkv"])
        else:  # an incomplete file: keep what is there so that the loader names it
            out.update({f"{block}self_attn.{n}_proj.{kind}": v for n, v in parts.items()})
    return out


def openai_visual_state(state: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """The CLIP vision tower of ``state`` (any layout of the module docstring), OpenAI names."""
    keys = list(state)
    if any(k.startswith("visual.") for k in keys):
        return {k[len("visual.") :]: v for k, v in state.items() if k.startswith("visual.")}
    if not is_hf_clip(keys):
        return dict(state)
    if any(k.startswith("vision_model.") for k in keys):
        state = {
            k[len("vision_model.") :]: v for k, v in state.items() if k.startswith("vision_model.")
        }
    state = {k: v for k, v in state.items() if k != "embeddings.position_ids"}
    return _hf_to_openai(state)
