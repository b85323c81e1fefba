"""CLIP / ViT foundation weights from local files (detectors/backbones/clip_vit.py, vit_weights.py).

Each layout is checked against the library that defines it: Hugging Face folders written by
transformers' ``save_pretrained``, timm's CLIP ViTs (``vit_*_clip_*``), and OpenAI/open_clip state
dicts turned into timm's by timm's own converter (``_convert_openai_clip``): the tower loaded from
the file must compute what the source library's model computes. Real sizes (ViT-B/16, ViT-L/14)
are checked on the meta device (names and shapes, no memory).
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest
import timm
import torch
from safetensors.torch import load_file, save_file
from timm.models.vision_transformer import _convert_openai_clip
from transformers import CLIPConfig, CLIPModel, CLIPVisionConfig, CLIPVisionModel

from fairforensics.detectors import build_detector
from fairforensics.detectors.backbones import PretrainedWeightsError
from fairforensics.detectors.backbones.clip_vit import (
    ClipVitConfig,
    build_clip_vision,
    load_clip_vision,
    to_hf_vision,
    vision_config_values,
)

TINY = {"width": 32, "layers": 2, "heads": 2, "mlp_dim": 64, "patch_size": 8, "input_size": 32}
CFG = ClipVitConfig(**TINY)


def _pooled(model: torch.nn.Module, x: torch.Tensor) -> torch.Tensor:
    with torch.no_grad():
        return model.eval()(pixel_values=x).pooler_output


def _hf_source(seed: int = 0) -> CLIPVisionModel:
    torch.manual_seed(seed)
    model = CLIPVisionModel(CLIPVisionConfig(**vision_config_values(CFG)))
    with torch.no_grad():  # LayerNorms away from 1/0, so that every tensor matters
        for p in model.parameters():
            p.add_(0.05 * torch.randn_like(p))
    return model.eval()


def _timm_clip(seed: int = 0) -> torch.nn.Module:
    torch.manual_seed(seed)
    model = timm.create_model(
        "vit_base_patch16_clip_quickgelu_224",
        pretrained=False,
        img_size=32,
        patch_size=8,
        embed_dim=32,
        depth=2,
        num_heads=2,
        mlp_ratio=2,
        num_classes=0,
    )
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.05 * torch.randn_like(p))
    return model.eval()


def _timm_features(model: torch.nn.Module, x: torch.Tensor) -> torch.Tensor:
    with torch.no_grad():
        return model.forward_head(model.forward_features(x), pre_logits=True)


@pytest.fixture(scope="module")
def x() -> torch.Tensor:
    return torch.randn(2, 3, 32, 32, generator=torch.Generator().manual_seed(1))


@pytest.mark.parametrize("kind", ["vision", "full", "transformers4-bin"])
def test_hugging_face_folders_load(tmp_path: Path, x: torch.Tensor, kind: str) -> None:
    source = _hf_source()
    folder = tmp_path / kind
    if kind == "vision":
        source.save_pretrained(folder)
    elif kind == "full":
        text = {"hidden_size": 16, "intermediate_size": 32, "num_hidden_layers": 1}
        text |= {"num_attention_heads": 2, "vocab_size": 64, "max_position_embeddings": 8}
        text |= {"bos_token_id": 0, "eos_token_id": 1, "pad_token_id": 1}
        full = CLIPModel(CLIPConfig(vision_config=source.config.to_dict(), text_config=text))
        full.vision_model.load_state_dict(source.state_dict())
        full.save_pretrained(folder)
    else:  # transformers 4: vision_model.* keys, a persistent position_ids buffer, a .bin file
        folder.mkdir()
        state = {f"vision_model.{k}": v for k, v in source.state_dict().items()}
        state["vision_model.embeddings.position_ids"] = torch.arange(17)[None]
        torch.save(state, folder / "pytorch_model.bin")
        (folder / "config.json").write_text(json.dumps(source.config.to_dict()))
    ours = build_clip_vision(CFG)
    assert load_clip_vision(ours, folder, CFG) == "hf"
    torch.testing.assert_close(_pooled(ours, x), _pooled(source, x), rtol=0, atol=1e-6)


def test_timm_clip_state_dict_loads_and_computes_timms_features(tmp_path, x) -> None:
    source = _timm_clip()
    path = tmp_path / "vit_clip.safetensors"
    save_file(source.state_dict(), str(path))
    ours = build_clip_vision(CFG)
    assert load_clip_vision(ours, path, CFG) == "timm"
    torch.testing.assert_close(_pooled(ours, x), _timm_features(source, x), rtol=0, atol=1e-5)


def _openai_state(seed: int = 0) -> dict[str, torch.Tensor]:
    """A whole OpenAI CLIP state dict (visual + a stub text tower) for the tiny tower, fp16."""
    g = torch.Generator().manual_seed(seed)
    d, n = 32, 17

    def r(*shape: int) -> torch.Tensor:
        return (0.2 * torch.randn(*shape, generator=g)).half()

    state = {
        "visual.class_embedding": r(d),
        "visual.positional_embedding": r(n, d),
        "visual.proj": r(d, 16),
        "visual.conv1.weight": r(d, 3, 8, 8),
        "visual.ln_pre.weight": 1 + r(d),
        "visual.ln_pre.bias": r(d),
        "visual.ln_post.weight": 1 + r(d),
        "visual.ln_post.bias": r(d),
        "positional_embedding": r(8, 16),
        "text_projection": r(16, 16),
        "logit_scale": r(1)[0],
        "token_embedding.weight": r(64, 16),
        "transformer.resblocks.0.attn.in_proj_weight": r(48, 16),
    }
    for i in range(2):
        b = f"visual.transformer.resblocks.{i}."
        state |= {
            b + "attn.in_proj_weight": r(3 * d, d),
            b + "attn.in_proj_bias": r(3 * d),
            b + "attn.out_proj.weight": r(d, d),
            b + "attn.out_proj.bias": r(d),
            b + "ln_1.weight": 1 + r(d),
            b + "ln_1.bias": r(d),
            b + "ln_2.weight": 1 + r(d),
            b + "ln_2.bias": r(d),
            b + "mlp.c_fc.weight": r(64, d),
            b + "mlp.c_fc.bias": r(64),
            b + "mlp.c_proj.weight": r(d, 64),
            b + "mlp.c_proj.bias": r(d),
        }
    return state


@pytest.mark.parametrize("form", ["whole", "visual-only"])
def test_openai_state_dict_computes_what_timm_reads_from_it(tmp_path, x, form) -> None:
    state = _openai_state()
    reference = _timm_clip()
    # timm's converter is the outside reading of these names; strict, so every name must be real
    result = reference.load_state_dict(
        _convert_openai_clip({k: v.float() for k, v in state.items()}, reference), strict=False
    )
    assert not result.missing_keys and set(result.unexpected_keys) == {"head.weight", "head.bias"}
    if form == "visual-only":
        state = {k[len("visual.") :]: v for k, v in state.items() if k.startswith("visual.")}
    path = tmp_path / "ViT-tiny.pt"
    torch.save(state, path)
    ours = build_clip_vision(CFG)
    assert load_clip_vision(ours, path, CFG) == "openai"
    torch.testing.assert_close(_pooled(ours, x), _timm_features(reference, x), rtol=0, atol=1e-5)


def test_torchscript_archive_is_read(tmp_path, x) -> None:
    """OpenAI's ``clip`` package downloads TorchScript archives; their tensors load."""
    holder = torch.nn.Module()
    for key, value in _openai_state().items():
        *path, leaf = key.split(".")
        module = holder
        for part in path:
            if not hasattr(module, part):
                module.add_module(part, torch.nn.Module())
            module = getattr(module, part)
        module.register_buffer(leaf, value)
    archive = tmp_path / "ViT-tiny-jit.pt"
    with warnings.catch_warnings():  # OpenAI's files are TorchScript archives; torch deprecates
        warnings.simplefilter("ignore", FutureWarning)  # making them, not reading them
        torch.jit.script(holder).save(str(archive))
    from_jit, from_dict = build_clip_vision(CFG), build_clip_vision(CFG)
    load_clip_vision(from_jit, archive, CFG)
    torch.save(_openai_state(), tmp_path / "plain.pt")
    load_clip_vision(from_dict, tmp_path / "plain.pt", CFG)
    torch.testing.assert_close(_pooled(from_jit, x), _pooled(from_dict, x), rtol=0, atol=0)


def test_half_a_file_is_refused_naming_the_missing_keys(tmp_path) -> None:
    folder = tmp_path / "clip"
    _hf_source().save_pretrained(folder)
    state = load_file(str(folder / "model.safetensors"))
    keys = sorted(state)
    kept = {k: state[k] for k in keys[: len(keys) // 2]}
    save_file(kept, str(folder / "model.safetensors"))
    with pytest.raises(PretrainedWeightsError, match="does not cover the backbone") as err:
        load_clip_vision(build_clip_vision(CFG), folder, CFG)
    missing = sorted(set(keys) - set(kept))
    assert f"missing {len(missing)}: {', '.join(missing[:8])}" in str(err.value)
    assert "\n" not in str(err.value)


def test_another_tower_is_refused_by_its_config(tmp_path) -> None:
    folder = tmp_path / "wide"
    wide = ClipVitConfig(**{**TINY, "width": 64, "mlp_dim": 128})
    CLIPVisionModel(CLIPVisionConfig(**vision_config_values(wide))).save_pretrained(folder)
    with pytest.raises(PretrainedWeightsError, match=r"hidden_size 64 \(detector: 32\)"):
        load_clip_vision(build_clip_vision(CFG), folder, CFG)
    gelu = ClipVitConfig(**{**TINY, "hidden_act": "gelu"})
    with pytest.raises(PretrainedWeightsError, match="hidden_act 'quick_gelu'"):
        load_clip_vision(build_clip_vision(gelu), tmp_path / "wide", gelu)


def test_other_files_are_one_line_errors(tmp_path) -> None:
    timm_vit = timm.create_model("vit_tiny_patch16_224", pretrained=False, img_size=32)
    torch.save(timm_vit.state_dict(), tmp_path / "imagenet_vit.pth")
    with pytest.raises(PretrainedWeightsError, match="not a CLIP vision tower"):
        load_clip_vision(build_clip_vision(CFG), tmp_path / "imagenet_vit.pth", CFG)
    (tmp_path / "empty").mkdir()
    with pytest.raises(PretrainedWeightsError, match="folder holds no weights file"):
        load_clip_vision(build_clip_vision(CFG), tmp_path / "empty", CFG)
    with pytest.raises(PretrainedWeightsError, match="not found"):
        load_clip_vision(build_clip_vision(CFG), tmp_path / "nothing.pt", CFG)
    with pytest.raises(PretrainedWeightsError, match="local file or folder only"):
        build_detector("clip", pretrained="timm", **TINY)


# ----------------------------------------------------------------------------- real sizes (meta)


def _meta_keys(module: torch.nn.Module) -> dict[str, tuple[int, ...]]:
    return {k: tuple(v.shape) for k, v in module.state_dict().items()}


@pytest.mark.parametrize(
    ("detector", "arch", "timm_name"),
    [
        ("clip", "ViT-B/16", "vit_base_patch16_clip_224"),
        ("effort", "ViT-L/14", "vit_large_patch14_clip_224"),
    ],
)
def test_published_layouts_cover_the_towers(detector: str, arch: str, timm_name: str) -> None:
    """openai/clip-vit-*'s CLIPModel and timm's CLIP ViT name and shape every tensor of the
    detector's tower (before Effort's decomposition), and nothing else but what is left out."""
    with torch.device("meta"):
        cfg = build_detector(detector).cfg
        assert cfg.arch_name() == arch
        tower = _meta_keys(build_clip_vision(cfg))
        values = vision_config_values(cfg)
        text = {"hidden_size": 768 if arch == "ViT-L/14" else 512, "num_hidden_layers": 12}
        full = CLIPModel(CLIPConfig(vision_config=values, text_config=text))
        timm_model = timm.create_model(timm_name, pretrained=False)
    for source in (full, timm_model):
        converted, ignored, _ = to_hf_vision(dict(source.state_dict()))
        assert {k: tuple(v.shape) for k, v in converted.items()} == tower
        left_out = ("text_model.", "visual_projection.", "text_projection.", "logit_scale", "head.")
        assert ignored and all(k.startswith(left_out) for k in ignored)


# ----------------------------------------------------------------------------- UIA-ViT's ImageNet ViT

TINY_UIA = {"width": 32, "layers": 3, "heads": 2, "patch_size": 8, "input_size": 32}
TINY_UIA |= {"attn_blocks": (1, 2), "feat_block": 1, "inner_margin": 1}


def test_uia_vit_loads_a_timm_imagenet_vit(tmp_path, x) -> None:
    """DeepfakeBench's UIA ViT is timm's ViT plus norm_middle / a new head: loaded from timm's file
    its CLS token after the last norm is timm's ``forward_features`` CLS token."""
    torch.manual_seed(0)
    vit = timm.create_model(
        "vit_base_patch16_224", img_size=32, patch_size=8, embed_dim=32, depth=3, num_heads=2
    ).eval()
    with torch.no_grad():
        for p in vit.parameters():
            p.add_(0.05 * torch.randn_like(p))
    torch.save({"model": vit.state_dict()}, tmp_path / "vit.pth")
    uia = build_detector("uia_vit", pretrained=str(tmp_path / "vit.pth"), **TINY_UIA).eval()
    with torch.no_grad():
        ours = uia({"image": x, "label": torch.tensor([0, 1])})["feat"][:, :32]
        torch.testing.assert_close(ours, vit.forward_features(x)[:, 0], rtol=0, atol=1e-5)
    half = {k: v for i, (k, v) in enumerate(vit.state_dict().items()) if i % 2}
    torch.save(half, tmp_path / "half.pth")
    with pytest.raises(PretrainedWeightsError, match=r"does not cover the backbone .* missing"):
        build_detector("uia_vit", pretrained=str(tmp_path / "half.pth"), **TINY_UIA)
    with pytest.raises(PretrainedWeightsError, match="local file or folder only"):
        build_detector("uia_vit", pretrained="timm", **TINY_UIA)
