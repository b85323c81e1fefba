"""CLIP ViT vision towers (transformers' ``CLIPVisionModel`` built from a config) and their weights.

The tower is built from the detector config (:class:`ClipVitConfig`), never downloaded; the
``transformers`` import happens only when a model is built, so listing detectors does not need it.
Its key names are transformers' (``embeddings.*``, ``pre_layrnorm``, ``encoder.layers.N.*``,
``post_layernorm``), which are DeepfakeBench's too (``CLIPModel.vision_model``).

:func:`load_clip_vision` loads a local CLIP file or folder in any of the layouts users have,
converted to those names (:func:`to_hf_vision`):

* **Hugging Face**: a ``save_pretrained`` folder of a whole ``CLIPModel`` or of a vision model
  (keys with or without ``vision_model.``); its ``config.json`` must describe the same tower as
  the detector config (width, depth, heads, MLP size, patch, image size, activation);
* **OpenAI / open_clip**: ``visual.conv1``, ``visual.transformer.resblocks.N.attn.in_proj_weight``
  (q, k, v stacked), ``ln_1``, ``mlp.c_fc``, ``ln_post`` ... (a whole CLIP or only ``visual``);
* **timm**: ``vit_base_patch16_clip_224`` / ``vit_large_patch14_clip_224`` names (``cls_token``,
  ``pos_embed``, ``norm_pre``, ``blocks.N.attn.qkv``, ``norm``).

The text tower, the projections (``visual.proj``, ``visual_projection``, timm's ``head``) and
``logit_scale`` are left out by name; anything else must fit (strictly, see
:mod:`detectors.backbones.vit_weights`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import torch

from fairforensics.detectors.backbones import PretrainedWeightsError
from fairforensics.detectors.backbones.vit_weights import (
    check_tower_shape,
    load_matching,
    read_weight_files,
)
from fairforensics.detectors.base import DetectorConfig

if TYPE_CHECKING:
    from transformers import CLIPVisionModel

#: The published towers (OpenAI CLIP): width, layers, heads, MLP size, patch.
PRESETS: dict[str, tuple[int, int, int, int, int]] = {
    "ViT-B/16": (768, 12, 12, 3072, 16),
    "ViT-L/14": (1024, 24, 16, 4096, 14),
}


@dataclass
class ClipVitConfig(DetectorConfig):
    """A CLIP vision tower: ``width`` (hidden size), ``layers``, ``heads``, ``mlp_dim``,
    ``patch_size``, ``hidden_act`` (OpenAI CLIP: ``quick_gelu``; LAION open_clip: ``gelu``); the
    image size is ``input_size``. ``pretrained``: false or a local CLIP file / folder."""

    width: int = 768
    layers: int = 12
    heads: int = 12
    mlp_dim: int = 3072
    patch_size: int = 16
    hidden_act: Literal["quick_gelu", "gelu"] = "quick_gelu"
    input_size: int = 224

    def __post_init__(self) -> None:
        check_tower_shape(self)

    def arch_name(self) -> str:
        """``ViT-L/14`` etc. for a published tower, else a description of the widths."""
        dims = (self.width, self.layers, self.heads, self.mlp_dim, self.patch_size)
        name = next((k for k, v in PRESETS.items() if v == dims), None)
        return name or f"width {self.width}, {self.layers} layers, patch {self.patch_size}"


def vision_config_values(cfg: ClipVitConfig) -> dict[str, Any]:
    """The ``CLIPVisionConfig`` values of ``cfg`` (what an HF ``config.json`` must agree with)."""
    return {
        "hidden_size": cfg.width,
        "intermediate_size": cfg.mlp_dim,
        "num_hidden_layers": cfg.layers,
        "num_attention_heads": cfg.heads,
        "patch_size": cfg.patch_size,
        "image_size": cfg.input_size,
        "hidden_act": cfg.hidden_act,
        "num_channels": 3,
        "layer_norm_eps": 1e-5,
    }


def build_clip_vision(cfg: ClipVitConfig) -> CLIPVisionModel:
    """A randomly initialised ``CLIPVisionModel`` (PyTorch SDPA attention) described by ``cfg``;
    under transformers 4 its inner ``vision_model``, which has transformers 5's key names."""
    from transformers import CLIPVisionConfig, CLIPVisionModel

    config = CLIPVisionConfig(**vision_config_values(cfg), attn_implementation="sdpa")
    model = CLIPVisionModel(config)
    return getattr(model, "vision_model", model)


# ----------------------------------------------------------------------------- layouts

_HF_IGNORED = ("text_model.", "visual_projection.", "text_projection.", "logit_scale")
_OPENAI_BLOCK = {
    "ln_1.": "layer_norm1.",
    "ln_2.": "layer_norm2.",
    "mlp.c_fc.": "mlp.fc1.",
    "mlp.c_proj.": "mlp.fc2.",
    "attn.out_proj.": "self_attn.out_proj.",
}
_TIMM_BLOCK = {
    "norm1.": "layer_norm1.",
    "norm2.": "layer_norm2.",
    "mlp.fc1.": "mlp.fc1.",
    "mlp.fc2.": "mlp.fc2.",
    "attn.proj.": "self_attn.out_proj.",
}
_MARKERS = {
    "hf": re.compile(
        r"(vision_model\.)?(embeddings\.|encoder\.layers\.|pre_layrnorm\.|post_layernorm\.)"
    ),
    "openai": re.compile(r"(visual\.|conv1\.|ln_pre\.|ln_post\.|class_embedding$)"),
    "timm": re.compile(r"(cls_token$|pos_embed$|patch_embed\.|norm_pre\.|blocks\.\d+\.)"),
}


def clip_layout(keys: list[str]) -> str:
    """``hf``, ``openai`` or ``timm``: which CLIP key layout ``keys`` follow (a part of a file is
    enough to tell; what it lacks is reported when it is loaded)."""
    layout = next((n for n, rx in _MARKERS.items() if any(rx.match(k) for k in keys)), None)
    if layout == "timm" and "patch_embed.proj.bias" in keys:
        raise PretrainedWeightsError(
            "a timm ViT with a patch-embedding bias (an ImageNet ViT?) is not a CLIP vision tower"
        )
    if layout is None:
        raise PretrainedWeightsError(
            "not a CLIP vision model: no Hugging Face (embeddings., encoder.layers.), OpenAI/"
            f"open_clip (visual.) or timm (blocks., norm_pre.) keys; first keys: {sorted(keys)[:5]}"
        )
    return layout


def _block(prefix: str, rest: str, table: dict[str, str], qkv: str) -> dict[str, str | None]:
    """``{our key: None}`` for one transformer-block tensor, or, for the fused q/k/v tensor,
    ``{q key: "q", k key: "k", v key: "v"}`` (the chunk of it each gets)."""
    if rest.startswith(qkv):
        kind = rest[len(qkv) :].lstrip("_")  # "weight" / "bias"
        return {f"{prefix}self_attn.{n}_proj.{kind}": n for n in "qkv"}
    for src, dst in table.items():
        if rest.startswith(src):
            return {prefix + dst + rest[len(src) :]: None}
    return {prefix + rest: None}  # unknown: kept under its own name, reported as unexpected


def _convert(
    state: dict[str, torch.Tensor],
    top: dict[str, str],
    blocks: str,
    table: dict[str, str],
    qkv: str,
) -> dict[str, torch.Tensor]:
    """Rename ``state``: whole keys by ``top`` (a value ending in '.' renames a prefix), block keys
    ``<blocks>N.<rest>`` by ``table``; fused q/k/v tensors are split in three."""
    out: dict[str, torch.Tensor] = {}
    for k, v in state.items():
        m = re.match(re.escape(blocks) + r"(\d+)\.(.*)", k)
        src = next((s for s in top if k == s or (s.endswith(".") and k.startswith(s))), None)
        if src is not None:
            out[top[src] + k[len(src) :] if src.endswith(".") else top[src]] = v
        elif m:
            for name, part in _block(
                f"encoder.layers.{m.group(1)}.", m.group(2), table, qkv
            ).items():
                out[name] = v if part is None else v.chunk(3, dim=0)["qkv".index(part)]
        else:
            out[k] = v
    return out


def _from_openai(state: dict[str, torch.Tensor]) -> tuple[dict[str, torch.Tensor], list[str]]:
    if any(k.startswith("visual.") for k in state):
        ignored = [k for k in state if not k.startswith("visual.")]
        state = {k[len("visual.") :]: v for k, v in state.items() if k.startswith("visual.")}
    else:  # only the visual tower
        ignored = []
    if "proj" in state:  # the projection to the joint embedding
        ignored.append("visual.proj")
        state = {k: v for k, v in state.items() if k != "proj"}
    top = {
        "class_embedding": "embeddings.class_embedding",
        "conv1.weight": "embeddings.patch_embedding.weight",
        "positional_embedding": "embeddings.position_embedding.weight",
        "ln_pre.": "pre_layrnorm.",
        "ln_post.": "post_layernorm.",
    }
    return _convert(state, top, "transformer.resblocks.", _OPENAI_BLOCK, "attn.in_proj_"), ignored


def _from_timm(state: dict[str, torch.Tensor]) -> tuple[dict[str, torch.Tensor], list[str]]:
    ignored = [k for k in state if k.startswith("head.")]
    state = {k: v for k, v in state.items() if not k.startswith("head.")}
    if "cls_token" in state:
        state["cls_token"] = state["cls_token"].reshape(-1)
    if "pos_embed" in state:
        pos = state["pos_embed"]
        state["pos_embed"] = pos.reshape(pos.shape[-2], pos.shape[-1])
    top = {
        "cls_token": "embeddings.class_embedding",
        "pos_embed": "embeddings.position_embedding.weight",
        "patch_embed.proj.weight": "embeddings.patch_embedding.weight",
        "norm_pre.": "pre_layrnorm.",
        "norm.": "post_layernorm.",
    }
    return _convert(state, top, "blocks.", _TIMM_BLOCK, "attn.qkv."), ignored


def _from_hf(state: dict[str, torch.Tensor]) -> tuple[dict[str, torch.Tensor], list[str]]:
    out: dict[str, torch.Tensor] = {}
    ignored: list[str] = []
    for k, v in state.items():
        name = k[len("vision_model.") :] if k.startswith("vision_model.") else k
        if k.startswith(_HF_IGNORED) or name.endswith("position_ids"):
            ignored.append(k)
        else:
            out[name] = v
    return out, ignored


def to_hf_vision(
    state: dict[str, torch.Tensor],
) -> tuple[dict[str, torch.Tensor], list[str], str]:
    """(vision tensors under ``CLIPVisionModel`` names, the keys left out by name, the layout)."""
    layout = clip_layout(list(state))
    convert = {"hf": _from_hf, "openai": _from_openai, "timm": _from_timm}[layout]
    out, ignored = convert(state)
    return out, ignored, layout


def check_hf_config(config: dict[str, Any], cfg: ClipVitConfig, source: str) -> None:
    """Raise when a folder's ``config.json`` describes another tower than the detector config."""
    vision = config.get("vision_config", config)
    model_type = vision.get("model_type", "clip_vision_model")
    if model_type not in ("clip_vision_model", "clip"):
        raise PretrainedWeightsError(f"{source}: model_type {model_type!r} is not a CLIP model")
    wrong = [
        f"{k} {vision[k]!r} (detector: {v!r})"
        for k, v in vision_config_values(cfg).items()
        if k in vision and vision[k] != v
    ]
    if wrong:
        raise PretrainedWeightsError(
            f"{source}/config.json describes another tower than the detector's "
            f"{cfg.arch_name()} at {cfg.input_size} px: {'; '.join(wrong)}; pass a "
            f"{cfg.arch_name()} file or set the detector's model values to match"
        )


def load_clip_vision(model: torch.nn.Module, path: str | Path, cfg: ClipVitConfig) -> str:
    """Load a local CLIP file or folder onto ``model`` (see the module docstring); returns the
    layout it was in."""
    source = str(Path(path).expanduser())
    state, config = read_weight_files(path)
    if config is not None:
        check_hf_config(config, cfg, source)
    try:
        vision, _, layout = to_hf_vision(state)
    except PretrainedWeightsError as exc:
        raise PretrainedWeightsError(f"{source}: {exc}") from None
    hint = f"the detector is a CLIP {cfg.arch_name()} at {cfg.input_size} px ({layout} layout read)"
    load_matching(model, vision, source, hint=hint)
    return layout


__all__ = [
    "PRESETS",
    "ClipVitConfig",
    "build_clip_vision",
    "check_hf_config",
    "clip_layout",
    "load_clip_vision",
    "to_hf_vision",
    "vision_config_values",
]
