"""The transformer video detectors (timesformer, videomae, xclip, sta_clip) at tiny widths.

Their DeepfakeBench recipes train (the loss falls in a few steps), Hugging Face ``save_pretrained``
folders made by transformers itself load strictly (wrapper models, transformers-4 key names, CLIP
in every layout for StA-CLIP, checked against transformers' own CLIP forward), incomplete or
mismatched files are refused naming what is wrong, and DeepfakeBench checkpoint files import.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys

import pytest
import torch
from safetensors.torch import load_file, save_file
from torch import nn

from fairforensics.detectors import build_detector, get_detector_class
from fairforensics.detectors.backbones import PretrainedWeightsError
from fairforensics.training.config import load_train_config
from fairforensics.training.trainer import build_optimizer
from tests.detector_batches import make_batch

NAMES = ["timesformer", "videomae", "xclip", "sta_clip"]
TEXT = dict(  # a tiny text tower for the CLIP / X-CLIP wrappers (left out by the loaders)
    hidden_size=16,
    intermediate_size=32,
    num_hidden_layers=1,
    num_attention_heads=2,
    vocab_size=64,
    max_position_embeddings=16,
    bos_token_id=0,
    eos_token_id=1,
    pad_token_id=1,
)


def tiny(name: str, **overrides) -> nn.Module:
    cls = get_detector_class(name)
    torch.manual_seed(0)
    return build_detector(
        name,
        input_size=cls.test_input_size,
        **{"pretrained": False, **cls.test_config, **overrides},
    )


def same_tensors(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> None:
    assert sorted(a) == sorted(b)
    for key in a:
        torch.testing.assert_close(a[key], b[key], rtol=0, atol=0, msg=key)


# ----------------------------------------------------------------------------- recipes and training


def test_listing_and_reading_them_does_not_import_transformers() -> None:
    code = (
        "import sys\n"
        "from fairforensics.detectors import get_detector_class, list_detectors\n"
        f"names = {NAMES!r}\n"
        "assert set(names) <= set(list_detectors())\n"
        "assert {get_detector_class(n).family for n in names} == {'Video'}\n"
        "assert 'transformers' not in sys.modules, 'transformers imported'\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-1000:]


@pytest.mark.parametrize("name", NAMES)
def test_recipe_is_deepfakebenchs(name: str) -> None:
    """Adam lr 2e-4, weight decay 5e-4, batch 8 clips at 224 px, the clip size of the fixtures."""
    cfg = load_train_config(name)
    opt = cfg.train.optimizer
    assert (opt.name, opt.lr, opt.weight_decay, cfg.train.batch_size) == ("adam", 2e-4, 5e-4, 8)
    assert cfg.train.resolution == 224 and cfg.train.scheduler.name == "none"
    clip = {"timesformer": 8, "videomae": 16, "xclip": 32, "sta_clip": 8}[name]
    assert cfg.model["clip_size"] == clip
    assert cfg.train.epochs == (30 if name == "sta_clip" else 10)
    assert cfg.train.augment.enabled == (name != "xclip")


@pytest.mark.parametrize("name", NAMES)
def test_recipe_lowers_the_loss_on_tiny_clips(name: str) -> None:
    """A few steps of the YAML's optimiser on a fixed batch of tiny clips lower the loss."""
    model = tiny(name).train()
    cls = type(model)
    batch = make_batch(model, cls.test_input_size)
    optimizer = build_optimizer(model.parameters(), load_train_config(name).train.optimizer)

    def loss() -> torch.Tensor:
        torch.manual_seed(1)  # the same dropout mask each time
        return model.loss(batch, model(batch))["total"]

    first = loss()
    assert math.isfinite(first.item())
    for _ in range(8):
        optimizer.zero_grad()
        loss().backward()
        optimizer.step()
    with torch.no_grad():
        assert loss().item() < first.item() - 1e-3


@pytest.mark.parametrize("name", NAMES)
def test_bf16_autocast_step_is_finite(name: str) -> None:
    """The trainer's AMP path (bf16 autocast): finite loss and a finite gradient everywhere
    (StA-CLIP's LayerNorms compute in float32 and return bf16)."""
    model = tiny(name).train()
    batch = make_batch(model, type(model).test_input_size)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = model(batch)
        loss = model.loss(batch, out)["total"]
    assert out["logits"].dtype == torch.bfloat16 and torch.isfinite(loss)
    loss.backward()
    bad = [k for k, p in model.named_parameters() if not torch.isfinite(p.grad).all()]
    assert not bad, (bad[:8], len(bad), float(loss))


@pytest.mark.parametrize("name", NAMES)
def test_wrong_clip_length_is_one_clear_error(name: str) -> None:
    model = tiny(name).eval()
    size = type(model).test_input_size
    with pytest.raises(ValueError, match=r"expected clips \[B, \d+, 3, H, W\]"):
        model({"image": torch.zeros(1, model.cfg.clip_size + 2, 3, size, size)})
    with pytest.raises(ValueError, match="expected clips"):
        model({"image": torch.zeros(2, 3, size, size)})


@pytest.mark.parametrize("name", NAMES)
def test_hub_weights_are_refused(name: str) -> None:
    with pytest.raises(PretrainedWeightsError, match="local file or folder only"):
        tiny(name, pretrained="timm")


# ----------------------------------------------------------------------------- Hugging Face folders


def hf_timesformer(**changes):
    from transformers import TimesformerConfig, TimesformerForVideoClassification

    values = dict(
        image_size=32, patch_size=16, num_frames=2, hidden_size=32, num_hidden_layers=2,
        num_attention_heads=2, intermediate_size=64, layer_norm_eps=1e-6, num_labels=3,
    )  # fmt: skip
    torch.manual_seed(1)
    return TimesformerForVideoClassification(TimesformerConfig(**{**values, **changes}))


def test_timesformer_loads_a_classification_folder(tmp_path) -> None:
    hf = hf_timesformer()
    hf.save_pretrained(tmp_path)
    model = tiny("timesformer", pretrained=str(tmp_path))
    same_tensors(model.backbone.state_dict(), hf.timesformer.state_dict())


def test_a_half_file_is_refused_naming_the_missing_keys(tmp_path) -> None:
    hf_timesformer().save_pretrained(tmp_path)
    weights = tmp_path / "model.safetensors"
    state = load_file(weights)
    save_file({k: v for k, v in state.items() if ".layer.1." not in k}, weights)
    with pytest.raises(PretrainedWeightsError, match=r"missing \d+: encoder\.layer\.1\."):
        tiny("timesformer", pretrained=str(tmp_path))
    part = tiny("timesformer", pretrained=str(tmp_path), pretrained_strict=False)
    torch.testing.assert_close(
        part.backbone.embeddings.cls_token, state["timesformer.embeddings.cls_token"]
    )


def test_a_folder_of_another_architecture_is_refused(tmp_path) -> None:
    hf_timesformer(layer_norm_eps=1e-5).save_pretrained(tmp_path)
    with pytest.raises(
        PretrainedWeightsError, match=r"layer_norm_eps 1e-05 \(detector config: 1e-06\)"
    ):
        tiny("timesformer", pretrained=str(tmp_path))
    with pytest.raises(PretrainedWeightsError, match="not found"):
        tiny("timesformer", pretrained=str(tmp_path / "absent"))


@pytest.mark.parametrize("transformers4_names", [False, True])
def test_videomae_loads_a_pretraining_folder(tmp_path, transformers4_names: bool) -> None:
    """MCG-NJU/videomae-base is a VideoMAEForPreTraining: the encoder loads, the decoder is left
    out; files written by transformers 4 name the q/v biases ``q_bias``/``v_bias``."""
    from transformers import VideoMAEConfig, VideoMAEForPreTraining

    config = VideoMAEConfig(
        image_size=32, patch_size=16, num_frames=4, tubelet_size=2, hidden_size=32,
        num_hidden_layers=2, num_attention_heads=2, intermediate_size=64, use_mean_pooling=False,
        decoder_hidden_size=16, decoder_num_hidden_layers=1, decoder_num_attention_heads=2,
        decoder_intermediate_size=32,
    )  # fmt: skip
    torch.manual_seed(1)
    hf = VideoMAEForPreTraining(config)
    hf.save_pretrained(tmp_path)
    if transformers4_names:
        weights = tmp_path / "model.safetensors"
        state = load_file(weights)
        renamed = {
            k.replace("attention.query.bias", "q_bias").replace("attention.value.bias", "v_bias"): v
            for k, v in state.items()
        }
        assert any(k.endswith("attention.attention.q_bias") for k in renamed)
        save_file(renamed, weights)
    model = tiny("videomae", pretrained=str(tmp_path))
    same_tensors(model.backbone.state_dict(), hf.videomae.state_dict())


def test_videomae_refuses_a_mean_pooling_folder(tmp_path) -> None:
    """Fine-tuned VideoMAE folders pool by mean (no final LayerNorm): refused, also when their
    config.json leaves that value to its default (transformers reads it so)."""
    from transformers import VideoMAEConfig, VideoMAEForVideoClassification

    config = VideoMAEConfig(
        image_size=32, patch_size=16, num_frames=4, hidden_size=32, num_hidden_layers=2,
        num_attention_heads=2, intermediate_size=64,
    )  # fmt: skip
    VideoMAEForVideoClassification(config).save_pretrained(tmp_path)
    values = json.loads((tmp_path / "config.json").read_text())
    assert values.pop("use_mean_pooling") is True
    (tmp_path / "config.json").write_text(json.dumps(values))
    with pytest.raises(
        PretrainedWeightsError, match=r"use_mean_pooling True \(detector config: False\)"
    ):
        tiny("videomae", pretrained=str(tmp_path))


def test_xclip_loads_the_vision_tower_of_an_xclip_model(tmp_path) -> None:
    from transformers import XCLIPConfig, XCLIPModel

    vision = dict(
        hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
        image_size=32, patch_size=16, num_frames=2, mit_hidden_size=16, mit_intermediate_size=32,
        mit_num_hidden_layers=1, mit_num_attention_heads=2,
    )  # fmt: skip
    torch.manual_seed(1)
    hf = XCLIPModel(
        XCLIPConfig(
            text_config=TEXT, vision_config=vision, projection_dim=16, prompt_num_attention_heads=2
        )
    )
    hf.save_pretrained(tmp_path)
    model = tiny("xclip", pretrained=str(tmp_path)).eval()
    ours = {k.removeprefix("vision_model."): v for k, v in model.backbone.state_dict().items()}
    same_tensors(ours, hf.vision_model.state_dict())  # (transformers < 5.x nests ours one deeper)
    clips = make_batch(model, 32, batch_size=2)["image"]
    with torch.no_grad():  # the frames' pooled features are X-CLIP's own
        pooled = hf.vision_model(pixel_values=clips.flatten(0, 1)).pooler_output
        expected = model.fc_norm(pooled.reshape(2, 4, -1).mean(dim=1))
        torch.testing.assert_close(model({"image": clips})["feat"], expected)


# ----------------------------------------------------------------------------- CLIP for StA-CLIP


def hf_clip(layers: int = 2):
    from transformers import CLIPConfig, CLIPModel

    vision = dict(
        hidden_size=32, intermediate_size=128, num_hidden_layers=layers, num_attention_heads=2,
        image_size=28, patch_size=14, hidden_act="quick_gelu",
    )  # fmt: skip
    torch.manual_seed(1)
    return CLIPModel(CLIPConfig(text_config=TEXT, vision_config=vision, projection_dim=16)).eval()


def clip_reference(hf, frames: torch.Tensor, layers: int) -> torch.Tensor:
    """transformers' CLIP vision tower: post-LayerNorm CLS token after ``layers`` blocks."""
    out = hf.vision_model(pixel_values=frames, output_hidden_states=True)
    return hf.vision_model.post_layernorm(out.hidden_states[layers][:, 0])


@pytest.mark.parametrize("clip_layers", [2, 3])
def test_sta_clip_from_a_hugging_face_clip_folder_computes_clip(tmp_path, clip_layers) -> None:
    """Loaded from a CLIPModel folder (deeper towers are cut to ``layers`` blocks), with its adapters
    starting as the identity and the temporal embedding at zero, StA-CLIP's per-frame features are
    transformers' CLIP features of each frame."""
    hf = hf_clip(clip_layers)
    hf.save_pretrained(tmp_path)
    model = tiny("sta_clip", pretrained=str(tmp_path)).eval()
    clips = make_batch(model, 28, batch_size=2)["image"]
    with torch.no_grad():
        expected = clip_reference(hf, clips.flatten(0, 1), 2).reshape(2, 4, -1)
        torch.testing.assert_close(model({"image": clips})["frame_feat"], expected)
    assert not model.backbone.transformer.resblocks[0].Adapter.up.weight.any()


def _tree(state: dict[str, torch.Tensor]) -> nn.Module:
    """A module whose parameters are ``state`` (dotted names), to script as a TorchScript archive."""
    root = nn.Module()
    for key, value in state.items():
        *path, leaf = key.split(".")
        module = root
        for part in path:
            if not hasattr(module, part):
                module.add_module(part, nn.Module())
            module = getattr(module, part)
        module.register_parameter(leaf, nn.Parameter(value.clone(), requires_grad=False))
    return root


@pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated")
@pytest.mark.filterwarnings("ignore:'torch.load' received a zip file")
@pytest.mark.parametrize("archive", ["state_dict", "torchscript"])
def test_sta_clip_loads_an_openai_clip_file(tmp_path, archive: str) -> None:
    """OpenAI's layout (``visual.*`` beside the text tower, fp16 as OpenAI ships it), as a plain
    state dict or as a TorchScript archive like the ``ViT-L-14.pt`` that ``clip`` downloads."""
    hf = hf_clip()
    hf.save_pretrained(tmp_path / "hf")
    from_hf = tiny("sta_clip", pretrained=str(tmp_path / "hf"))
    visual = {
        k: v.half()
        for k, v in from_hf.backbone.state_dict().items()
        if "Adapter" not in k and k != "temporal_embedding"
    }
    openai = {f"visual.{k}": v for k, v in visual.items()}
    openai["visual.proj"] = torch.zeros(32, 16, dtype=torch.half)
    openai["transformer.resblocks.0.attn.in_proj_weight"] = torch.zeros(48, 16)  # the text tower
    openai["positional_embedding"] = torch.zeros(16, 16)
    path = tmp_path / "ViT-tiny.pt"
    if archive == "torchscript":
        torch.jit.script(_tree(openai)).save(str(path))
    else:
        torch.save(openai, path)
    model = tiny("sta_clip", pretrained=str(path))
    for key, value in visual.items():
        torch.testing.assert_close(model.backbone.state_dict()[key], value.float(), msg=key)


def test_sta_clip_refuses_an_incomplete_clip_folder(tmp_path) -> None:
    hf_clip().save_pretrained(tmp_path)
    weights = tmp_path / "model.safetensors"
    state = load_file(weights)
    del state["vision_model.encoder.layers.1.mlp.fc2.weight"]
    del state["vision_model.encoder.layers.1.self_attn.k_proj.weight"]
    save_file(state, weights)
    with pytest.raises(PretrainedWeightsError) as err:
        tiny("sta_clip", pretrained=str(tmp_path))
    message = str(err.value)
    assert "transformer.resblocks.1.attn.in_proj_weight" in message  # q/k/v no longer complete
    assert "transformer.resblocks.1.mlp.c_proj.weight" in message


def test_sta_clip_batch_coupling_is_deepfakebenchs() -> None:
    """DeepfakeBench's adapter attention (``batch_coupled_attention: true``) mixes the clips of a
    batch: a clip's score depends on its batch-mates, and equals the per-clip model's (the
    default) when it is alone; the default scores each clip on its own."""
    coupled = tiny("sta_clip", batch_coupled_attention=True).eval()
    alone = tiny("sta_clip").eval()  # the default
    alone.load_state_dict(coupled.state_dict())
    clips = make_batch(coupled, 28, batch_size=3)["image"]
    with torch.no_grad():
        batch, single = coupled({"image": clips})["prob"], coupled({"image": clips[:1]})["prob"]
        assert (batch[0] - single[0]).abs() > 1e-6
        torch.testing.assert_close(single, alone({"image": clips[:1]})["prob"])
        torch.testing.assert_close(alone({"image": clips})["prob"][:1], single)


# ----------------------------------------------------------------------------- DeepfakeBench files


@pytest.mark.parametrize("name", NAMES)
def test_deepfakebench_checkpoint_file_imports(tmp_path, name: str) -> None:
    """A DeepfakeBench checkpoint (raw state dict, DDP's ``module.`` prefix; X-CLIP and VideoMAE
    under the key names of the other transformers versions) builds the same model through
    ``pretrained:``."""
    model = tiny(name).eval()

    def other_naming(key: str) -> str:
        if name == "xclip" and key.startswith("backbone."):
            inner = key.removeprefix("backbone.")
            nested = inner.startswith("vision_model.")
            return "backbone." + (
                inner.removeprefix("vision_model.") if nested else f"vision_model.{inner}"
            )
        if name == "videomae":
            old, new = "attention.attention.q_bias", "attention.attention.query.bias"
            return key.replace(old, new) if old in key else key.replace(new, old)
        return key

    dfb = {f"module.{other_naming(k)}": v for k, v in model.state_dict().items()}
    path = tmp_path / "ckpt_best.pth"
    torch.save(dfb, path)
    loaded = tiny(name, pretrained=str(path)).eval()
    same_tensors(loaded.state_dict(), model.state_dict())
    clips = make_batch(model, type(model).test_input_size, batch_size=2)["image"]
    with torch.no_grad():
        torch.testing.assert_close(
            loaded({"image": clips})["prob"], model({"image": clips})["prob"]
        )
