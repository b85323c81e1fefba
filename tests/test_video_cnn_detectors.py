"""The CNN video detectors (i3d, altfreezing, ftcn, stil) and TALL: training with DeepfakeBench's
recipe on tiny clips, AltFreezing's freezing schedule against autograd, and their pretrained files
(SlowFast's Kinetics I3D, SCNet's ImageNet file, Swin-B in Microsoft's layout) loaded strictly."""

from __future__ import annotations

import logging
import math
import re
from dataclasses import replace
from pathlib import Path

import pytest
import torch
from torch import nn
from torch.nn import functional as F

from fairforensics.detectors import (
    build_detector,
    get_detector_class,
    load_detector_yaml,
    read_checkpoint,
)
from fairforensics.detectors.backbones import PretrainedWeightsError
from fairforensics.detectors.backbones.scnet import STIL_ONLY
from fairforensics.evaluation.predictions import read_predictions
from fairforensics.preprocessing.index import read_index, write_index
from fairforensics.training.config import load_train_config
from fairforensics.training.trainer import Trainer
from tests.detector_batches import make_batch
from tests.test_train_utils import make_index

#: tiny widths of each detector (same code paths, a fraction of the cost)
TINY = {
    "i3d": {"width": 4, "input_size": 32, "clip_size": 4},
    "altfreezing": {"width": 4, "input_size": 32, "clip_size": 4},
    "ftcn": {
        "width": 4,
        "heads": 2,
        "head_dim": 8,
        "mlp_dim": 16,
        "input_size": 32,
        "clip_size": 4,
    },
    "stil": {"width": 32, "input_size": 128, "clip_size": 2},
    "tall": {"embed_dim": 16, "depths": [2, 2, 2, 2], "num_heads": [1, 1, 2, 2], "input_size": 32},
}


@pytest.fixture(autouse=True)
def _one_thread():
    """Tiny models: their small ops run faster on one thread than on two of a shared machine."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def _tiny(name: str, **extra):
    torch.manual_seed(0)
    return build_detector(name, pretrained=False, **TINY[name], **extra)


def _adam(name: str, model: nn.Module) -> torch.optim.Adam:
    """The optimiser of the detector's YAML (DeepfakeBench's recipe)."""
    opt = load_detector_yaml(name)["train"]["optimizer"]
    assert opt["name"] == "adam"
    return torch.optim.Adam(
        model.parameters(), opt["lr"], tuple(opt["betas"]), opt["eps"], opt["weight_decay"]
    )


@pytest.mark.slow
@pytest.mark.parametrize("name", list(TINY))
def test_trains_on_tiny_clips_with_its_recipe(name: str) -> None:
    """Its YAML optimiser on one fixed batch with the same dropout masks every step: the loss
    falls at every step and by at least 5% in all (deterministic: no sampling noise to pass by;
    measured: i3d/altfreezing -11%, ftcn -7%, stil -99.7%, tall -69% over 20 steps)."""
    model = _tiny(name).train()
    batch = make_batch(model, model.cfg.input_size, batch_size=4, seed=1)
    assert batch["image"].shape[1] == model.cfg.clip_size
    optimiser = _adam(name, model)
    steps = 8 if name != "tall" else 20  # TALL's recipe has lr 2e-5
    losses = []
    for _ in range(steps):
        torch.manual_seed(2)  # the same dropout masks every step
        out = model(batch)
        loss = model.loss(batch, out)["total"]
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
        losses.append(loss.item())
    assert all(b < a for a, b in zip(losses[:-1], losses[1:], strict=True)), losses
    assert losses[-1] < 0.95 * losses[0], losses
    assert out["logits"].shape == (4, 2) and out["feat"].shape[0] == 4


@pytest.mark.parametrize("name", ["i3d", "altfreezing", "ftcn"])
def test_single_logit_cross_entropy_is_deepfakebench_bce(name: str) -> None:
    """DeepfakeBench's BCELoss on sigmoid(z) equals our cross-entropy on logits [0, z]."""
    model = _tiny(name).eval()
    batch = make_batch(model, model.cfg.input_size, batch_size=4, seed=3)
    with torch.no_grad():
        out = model(batch)
        z = out["logits"][:, 1]
        bce = nn.BCELoss()(torch.sigmoid(z), batch["label"].float())
        assert model.loss(batch, out)["total"].item() == pytest.approx(bce.item(), rel=1e-5)
        assert torch.allclose(out["prob"], torch.sigmoid(z), atol=1e-6)


@pytest.mark.parametrize("name", list(TINY))
def test_channels_last_3d_weights_and_nhwc_frames_change_nothing(name: str) -> None:
    """Beyond the trainer's 4-D channels_last: NDHWC 3-D convolution weights and clips whose
    frames are stored NHWC (a non-contiguous input) give the same outputs. Training mode, so
    that BN normalises each layer: at random init, eval-mode activations grow to ~1e4 in STIL and
    its gates amplify float rounding far beyond any tolerance."""
    model = _tiny(name).train()
    batch = make_batch(model, model.cfg.input_size, batch_size=2, seed=6)
    formats = {4: torch.channels_last, 5: torch.channels_last_3d}
    with torch.no_grad():
        torch.manual_seed(1)  # the same dropout masks in both runs
        expected = model(batch)["logits"]
        for t in [*model.parameters(), *model.buffers()]:
            if t.dim() in formats:
                t.data = t.data.contiguous(memory_format=formats[t.dim()])
        clips = batch["image"].permute(0, 1, 3, 4, 2).contiguous().permute(0, 1, 4, 2, 3)
        assert not clips.is_contiguous()
        torch.manual_seed(1)
        got = model({**batch, "image": clips})["logits"]
    torch.testing.assert_close(got, expected, rtol=1e-4, atol=1e-4)


# ---------------------------------------------------------------------------- AltFreezing


def _deepfakebench_trained_groups(steps: int) -> list[set[str]]:
    """Run DeepfakeBench's switching code on two leaf tensors with real autograd: which group
    receives a gradient in each step (requires_grad is set after the forward pass)."""
    weights = {"spatial": nn.Parameter(torch.ones(2)), "temporal": nn.Parameter(torch.ones(2))}
    got = []
    for cnt in range(steps):
        y = sum((w * 2).sum() for w in weights.values() if w.requires_grad)
        if cnt % 21 in (0, 1):  # alternate_mode('spatial') at 0, ('temporal') at 1
            mode = "spatial" if cnt % 21 == 0 else "temporal"
            for group, w in weights.items():
                w.requires_grad_(group == mode)
        if isinstance(y, torch.Tensor) and y.requires_grad:
            y.backward()
        got.append({g for g, w in weights.items() if w.grad is not None})
        for w in weights.values():
            w.grad = None
    return got


def test_deepfakebench_schedule_is_what_autograd_does_with_its_switches() -> None:
    model = _tiny("altfreezing")
    expected = _deepfakebench_trained_groups(70)
    assert [model.trained(k) for k in range(70)] == expected
    assert expected[0] == {"spatial"} and all("spatial" not in g for g in expected[1:])
    alternate = _tiny("altfreezing", freeze_schedule="alternate")
    assert [sorted(alternate.trained(k)) for k in (0, 1, 20, 21, 22)] == [
        ["spatial"],
        ["temporal"],
        ["temporal"],
        ["spatial"],
        ["temporal"],
    ]


@pytest.mark.parametrize("schedule", ["deepfakebench", "alternate"])
def test_frozen_convolutions_take_no_optimiser_step(schedule: str) -> None:
    model = _tiny("altfreezing", freeze_schedule=schedule).train()
    groups = {g: sorted(names) for g, names in model.groups.items()}
    assert len(groups["spatial"]) == 16 and len(groups["temporal"]) == 9
    batch = make_batch(model, 32, batch_size=4, seed=4)
    optimiser = _adam("altfreezing", model)
    params = dict(model.backbone.named_parameters())
    for step in range(3):
        before = {k: v.detach().clone() for k, v in params.items()}
        trained = model.trained(step)
        optimiser.zero_grad()
        model.loss(batch, model(batch))["total"].backward()
        optimiser.step()
        for group, names in groups.items():
            moved = [not torch.equal(before[k], params[k]) for k in names]
            assert all(moved) if group in trained else not any(moved), (step, group)
        assert not torch.equal(before["s1.conv.weight"], params["s1.conv.weight"])  # always trains
    assert int(model.train_steps) == 3


def test_schedule_position_is_saved_with_the_weights() -> None:
    model = _tiny("altfreezing").train()
    batch = make_batch(model, 32, batch_size=2, seed=5)
    for _ in range(2):
        model(batch)
    again = _tiny("altfreezing")
    again.load_state_dict(model.state_dict())
    assert int(again.train_steps) == 2
    model.eval()(batch)  # evaluation does not advance the schedule
    assert int(model.train_steps) == 2


# ---------------------------------------------------------------------------- pretrained files


def _slowfast_names(state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Our I3D backbone's keys under SlowFast's names (``s1.pathway0_stem.``, ``s2.pathway0_res0.``)."""
    out = {}
    for key, value in state.items():
        key = re.sub(r"^s1\.", "s1.pathway0_stem.", key)
        key = re.sub(r"^s(\d)\.(\d+)\.", r"s\1.pathway0_res\2.", key)
        out[key] = value
    return out


@pytest.fixture(scope="module")
def kinetics_i3d() -> dict[str, torch.Tensor]:
    """A (random) SlowFast Kinetics-400 I3D ResNet-50 state dict at width 4."""
    torch.manual_seed(7)
    model = build_detector("i3d", pretrained=False, width=4)
    state = {
        k: v + 0.5 if v.is_floating_point() else v for k, v in model.backbone.state_dict().items()
    }
    state = _slowfast_names(state)
    state["head.projection.weight"] = torch.randn(400, model.head.in_features)
    state["head.projection.bias"] = torch.randn(400)
    return state


@pytest.mark.parametrize("prefix", ["", "resnet.", "module.resnet."])
def test_kinetics_i3d_loads_strictly_with_its_first_class_as_head(tmp_path, kinetics_i3d, prefix):
    path = tmp_path / "I3D_8x8_R50.pth"
    torch.save({prefix + k: v for k, v in kinetics_i3d.items()}, path)
    model = build_detector("i3d", pretrained=str(path), width=4)
    ours = _slowfast_names(model.backbone.state_dict())
    assert ours.keys() == {k for k in kinetics_i3d if not k.startswith("head.")}
    assert all(torch.equal(ours[k], kinetics_i3d[k]) for k in ours)
    assert torch.equal(model.head.weight, kinetics_i3d["head.projection.weight"][:1])
    assert torch.equal(model.head.bias, kinetics_i3d["head.projection.bias"][:1])


def test_incomplete_kinetics_file_is_refused_naming_the_keys(tmp_path, kinetics_i3d) -> None:
    half = dict(list(kinetics_i3d.items())[:100])
    torch.save(half, tmp_path / "half.pth")
    with pytest.raises(
        PretrainedWeightsError, match=r"half.pth is not a complete SlowFast I3D"
    ) as e:
        build_detector("altfreezing", pretrained=str(tmp_path / "half.pth"), width=4)
    assert f"missing {len(kinetics_i3d) - len(half)}: backbone.s3.1." in str(e.value)
    torch.save({**kinetics_i3d, "s6.extra.weight": torch.zeros(1)}, tmp_path / "extra.pth")
    with pytest.raises(PretrainedWeightsError, match=r"unexpected 1: s6\.extra\.weight"):
        build_detector("i3d", pretrained=str(tmp_path / "extra.pth"), width=4)


def test_ftcn_keeps_only_what_its_conversion_keeps(tmp_path, kinetics_i3d) -> None:
    torch.save(kinetics_i3d, tmp_path / "I3D_8x8_R50.pth")
    torch.manual_seed(0)
    fresh = build_detector("ftcn", pretrained=False, **TINY["ftcn"])
    torch.manual_seed(0)
    model = build_detector("ftcn", pretrained=str(tmp_path / "I3D_8x8_R50.pth"), **TINY["ftcn"])
    ours = model.backbone.state_dict()
    file = kinetics_i3d
    for key in ("s2.0.branch2.a.weight", "s2.0.branch1.weight", "s4.5.branch2.c.weight"):
        assert torch.equal(ours[key], file[_slowfast_key(key)]), key
    for key in ("s1.bn.weight", "s3.0.branch2.b_bn.running_var", "s3.0.branch1_bn.bias"):
        assert torch.equal(ours[key], file[_slowfast_key(key)]), key
    # rebuilt convolutions (spatial kernel or stride) and the transformer head start from scratch
    for key in ("s1.conv.weight", "s3.0.branch1.weight", "s2.1.branch2.b.weight"):
        assert torch.equal(ours[key], fresh.backbone.state_dict()[key]), key
    assert torch.equal(model.head.weight, fresh.head.weight)


def _slowfast_key(key: str) -> str:
    return next(iter(_slowfast_names({key: torch.zeros(0)})))


def test_scnet_imagenet_file_loads_into_stil(tmp_path, caplog) -> None:
    torch.manual_seed(3)
    model = build_detector("stil", pretrained=False, **TINY["stil"])
    base = model.base.state_dict()
    imagenet = {
        k: v + 1 if v.is_floating_point() else v
        for k, v in base.items()
        if not any(m in f".{k}" for m in STIL_ONLY)
    }
    for key in [k for k in imagenet if k.endswith(".scconv.k3.0.weight")]:  # SCNet's own k2
        stem = key.removesuffix("k3.0.weight")
        imagenet[f"{stem}k2.1.weight"] = torch.randn_like(imagenet[key])
        imagenet[f"{stem}k2.2.weight"] = torch.ones(imagenet[key].shape[0])
    imagenet |= {"fc.weight": torch.randn(1000, 1024), "fc.bias": torch.randn(1000)}
    torch.save({"state_dict": imagenet}, tmp_path / "scnet50_v1d-4109d1e1.pth")
    loaded = build_detector(
        "stil", pretrained=str(tmp_path / "scnet50_v1d-4109d1e1.pth"), **TINY["stil"]
    )
    got = loaded.base.state_dict()
    assert all(torch.equal(got[k], v) for k, v in imagenet.items() if k in got)
    assert sum(k in got for k in imagenet) == len(imagenet) - 2 - 2 * 16  # fc, 16 blocks' k2
    del imagenet["layer4.2.conv3.weight"]
    torch.save(imagenet, tmp_path / "cut.pth")
    with pytest.raises(PretrainedWeightsError, match=r"missing 1: layer4\.2\.conv3\.weight"):
        build_detector("stil", pretrained=str(tmp_path / "cut.pth"), **TINY["stil"])
    with caplog.at_level(logging.INFO, logger="fairforensics.detectors.backbones.coverage"):
        build_detector(
            "stil", pretrained=str(tmp_path / "cut.pth"), pretrained_strict=False, **TINY["stil"]
        )
    assert "pretrained_strict: false; missing 1: layer4.2.conv3.weight" in caplog.text


def _microsoft_swin(model: nn.Module) -> dict[str, torch.Tensor]:
    """A timm Swin's tensors in Microsoft's release layout (patch merging at the end of a stage,
    ``head``, the index buffers included), wrapped as ``{"model": ...}``."""
    out = {}
    for key, value in model.state_dict().items():
        key = re.sub(
            r"^layers\.(\d+)\.downsample", lambda m: f"layers.{int(m[1]) - 1}.downsample", key
        )
        out[key.replace("head.fc.", "head.")] = value
    for name, buf in model.named_buffers():
        if name.endswith("relative_position_index"):
            out[name] = buf
    return {"model": out}


def test_swin_file_in_microsoft_layout_loads_with_resized_bias_tables(tmp_path) -> None:
    from timm.models.swin_transformer import SwinTransformer

    dims = {"embed_dim": 16, "depths": (2, 2, 2, 2), "num_heads": (1, 1, 2, 2)}
    torch.manual_seed(5)
    swin = SwinTransformer(img_size=224, window_size=7, num_classes=1000, **dims)
    file = _microsoft_swin(swin)
    assert "layers.0.downsample.reduction.weight" in file["model"]
    torch.save(file, tmp_path / "swin_base_patch4_window7_224_22k.pth")
    cfg = {"embed_dim": 16, "depths": [2, 2, 2, 2], "num_heads": [1, 1, 2, 2]}
    model = build_detector(
        "tall", pretrained=str(tmp_path / "swin_base_patch4_window7_224_22k.pth"), **cfg
    )
    ours, ref = model.backbone.state_dict(), swin.state_dict()
    assert torch.equal(
        ours["layers.1.downsample.reduction.weight"], ref["layers.1.downsample.reduction.weight"]
    )
    assert torch.equal(
        ours["layers.3.blocks.1.mlp.fc2.weight"], ref["layers.3.blocks.1.mlp.fc2.weight"]
    )
    # windows 14 in stages 0-2: the 13x13 tables are resized bilinearly to 27x27; stage 3 as it is
    table = ref["layers.0.blocks.1.attn.relative_position_bias_table"]  # [169, 1]
    resized = (
        F.interpolate(table.T.reshape(1, 1, 13, 13), size=27, mode="bilinear").reshape(1, -1).T
    )
    assert torch.equal(ours["layers.0.blocks.1.attn.relative_position_bias_table"], resized)
    key = "layers.3.blocks.0.attn.relative_position_bias_table"
    assert torch.equal(ours[key], ref[key])
    assert not torch.equal(ours["head.fc.weight"][:2], ref["head.fc.weight"][:2])  # head not loaded

    del file["model"]["layers.2.blocks.1.norm2.weight"]
    torch.save(file, tmp_path / "cut.pth")
    with pytest.raises(
        PretrainedWeightsError, match=r"missing 1: layers\.2\.blocks\.1\.norm2\.weight"
    ):
        build_detector("tall", pretrained=str(tmp_path / "cut.pth"), **cfg)


def test_bad_clip_settings_are_refused() -> None:
    with pytest.raises(ValueError, match="clip_size must be thumbnail_rows"):
        build_detector("tall", pretrained=False, clip_size=8)
    model = _tiny("stil").eval()
    clips = torch.zeros(1, 3, 3, 128, 128)
    with pytest.raises(ValueError, match="stil expects clips of 2 frames"):
        model({"image": clips, "label": torch.zeros(1, dtype=torch.long)})
    with pytest.raises(ValueError, match="depths must be 4 counts of at least 1"):
        build_detector("stil", pretrained=False, depths=(1, 1, 0, 1))
    small = build_detector("stil", pretrained=False, width=32, depths=(1, 1, 2, 1))
    assert [len(getattr(small.base, f"layer{i}")) for i in range(1, 5)] == [1, 1, 2, 1]


def _deepfakebench_i3d(model: nn.Module) -> dict[str, torch.Tensor]:
    """Our i3d/altfreezing tensors under DeepfakeBench's names (``resnet.`` + SlowFast's)."""
    state = {k: v for k, v in model.state_dict().items() if k != "train_steps"}
    out = {
        f"resnet.{k}": v
        for k, v in _slowfast_names(
            {k.removeprefix("backbone."): v for k, v in state.items() if k.startswith("backbone.")}
        ).items()
    }
    return out | {"resnet.head.projection.weight": state["head.weight"],
                  "resnet.head.projection.bias": state["head.bias"]}  # fmt: skip


@pytest.mark.parametrize("name", ["i3d", "altfreezing"])
def test_deepfakebench_checkpoint_is_a_whole_detector_not_a_backbone(tmp_path, name) -> None:
    """``pretrained:`` and ``--weights`` take DeepfakeBench's own checkpoint (DDP prefix too)."""
    from fairforensics.detectors import load_detector_file

    source = _tiny(name)
    for p in source.parameters():
        p.data += 0.25
    path = tmp_path / f"{name}_best.pth"
    torch.save({f"module.{k}": v for k, v in _deepfakebench_i3d(source).items()}, path)
    built = build_detector(name, pretrained=str(path), **TINY[name])
    loaded = load_detector_file(name, path, {**TINY[name], "pretrained": False})
    for model in (built, loaded):
        got = model.state_dict()
        assert all(torch.equal(got[k], v) for k, v in source.state_dict().items()), name


# ---------------------------------------------------------------------------- through the trainer


@pytest.fixture(scope="module")
def clip_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Real faces (fakes: a blended bright patch), 8 frames per video recorded as two clips of 4."""
    root = tmp_path_factory.mktemp("video_clips")
    index = read_index(make_index(root, "tiny", n_real=4, n_fake=4, frames=8, size=32))
    index = replace(index, videos=[replace(v, clips=[[0, 4], [4, 4]]) for v in index.videos])
    write_index(index, root / "tiny.json")
    return root


def _tiny_transformer(name: str) -> dict:
    """The video transformers at their contract-test width, on the fixture's 4-frame clips."""
    cls = get_detector_class(name)
    return {**cls.test_config, "clip_size": 4, "input_size": cls.test_input_size}


#: every video detector of DeepfakeBench v2 at a tiny width (the CNNs above, the transformers)
TRAINER_TINY = {
    **TINY,
    **{n: _tiny_transformer(n) for n in ("timesformer", "videomae", "xclip", "sta_clip")},
}


class _InitRecordingTrainer(Trainer):
    """The trainer, keeping a copy of the detector's parameters as built, before any step."""

    def _setup(self) -> None:
        super()._setup()
        self.initial = {k: p.detach().clone() for k, p in self.detector.named_parameters()}


@pytest.mark.slow
@pytest.mark.parametrize("name", list(TRAINER_TINY))
def test_trainer_runs_its_recipe_on_clips(name: str, clip_root: Path, tmp_path: Path, caplog):
    """The detector's YAML recipe (DeepfakeBench's optimiser, learning rate and loss) through the
    trainer on clips of real faces, tiny widths, no augmentation: the run's optimiser is the
    recipe's, it takes its 16 steps (4 epochs of 4 batches) with a finite loss, they move the
    weights, and the predictions are per clip. (That the recipe lowers the loss is checked on a
    fixed batch, where no sampling noise can pass for it: test_trains_on_tiny_clips_with_its_recipe
    here, test_recipe_lowers_the_loss_on_tiny_clips in test_video_transformers.py.)"""
    tiny = {f"model.{k}": v for k, v in TRAINER_TINY[name].items()}
    clip = TRAINER_TINY[name].get("clip_size", 4)
    sets = {
        **tiny,
        "data.data_root": str(clip_root),
        "data.train_data": "[tiny]",
        "data.val_data": "[tiny]",
        "data.num_workers": 0,
        "train.epochs": 4,
        "train.batch_size": 4,
        "train.frame_num": 2 * clip,
        "train.test_frame_num": 2 * clip,
        "train.resolution": TRAINER_TINY[name]["input_size"],
        "train.augment.enabled": False,
        "output_dir": str(tmp_path),
    }
    cfg = load_train_config(name, overrides=[f"{k}={v}" for k, v in sets.items()])
    trainer = _InitRecordingTrainer(cfg)
    with caplog.at_level(logging.INFO, logger="fairforensics.training.trainer"):
        run = trainer.fit()
    before = trainer.initial
    means = [float(m) for m in re.findall(r"epoch \d+ done: mean loss ([0-9.]+)", caplog.text)]
    assert len(means) == 4 and all(math.isfinite(m) for m in means), means
    state = read_checkpoint(run / "checkpoints" / "last.pt")["state"]
    assert state["step"] == 16  # 8 training videos x 2 clips, batches of 4, 4 epochs
    recipe = load_detector_yaml(name)["train"]["optimizer"]
    group = state["optimizer"]["param_groups"][0]
    assert group.get("initial_lr", group["lr"]) == pytest.approx(recipe["lr"])
    assert list(group["betas"]) == pytest.approx(recipe["betas"])
    assert (group["eps"], group["weight_decay"]) == (recipe["eps"], recipe["weight_decay"])
    moved = [k for k, p in trainer.detector.named_parameters() if not torch.equal(p, before[k])]
    assert len(moved) > len(before) / 2, f"{len(moved)} of {len(before)} tensors moved"
    saved = read_predictions(sorted((run / "predictions").glob("val_tiny_*.csv"))[-1])
    assert set(saved.unit) == {"clip"} and len(saved) == 16  # 8 val videos x 2 clips
