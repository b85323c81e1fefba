"""clip, effort, uia_vit: Effort's SVD decomposition and constraints, UIA-ViT's patch-consistency
learning (hand cases and DeepfakeBench's loop form), and a few optimisation steps of each at a
small width on real faces with the loss falling (UIA-ViT also through the trainer)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors.torch import load_file, save_file
from sklearn.covariance import LedoitWolf
from torch.nn import functional as F
from transformers import CLIPVisionConfig, CLIPVisionModel

from fairforensics.detectors import (
    build_detector,
    load_detector_file,
    read_checkpoint,
    save_checkpoint,
)
from fairforensics.detectors.backbones import PretrainedWeightsError
from fairforensics.detectors.backbones.clip_vit import vision_config_values
from fairforensics.detectors.effort import EffortConfig, SVDResidualLinear, class_losses
from fairforensics.detectors.uia_vit import STATE as UIA_STATE
from fairforensics.detectors.uia_vit import fit_gaussian, patch_consistency_loss
from fairforensics.training.config import load_train_config
from fairforensics.training.trainer import Trainer
from tests.test_train_run import _KillAt
from tests.test_train_utils import face, make_index

TINY = {"width": 32, "layers": 2, "heads": 2, "mlp_dim": 64, "patch_size": 8, "input_size": 32}
TINY_UIA = {"width": 32, "layers": 3, "heads": 2, "patch_size": 8, "input_size": 32}
TINY_UIA |= {"attn_blocks": [1, 2], "feat_block": 1, "inner_margin": 1}


def face_batch(model, n: int = 8, size: int = 32) -> dict:
    """``n`` real faces (tests/data) and their fakes (a bright blended square, as the trainer
    tests' index), normalised with the detector's mean/std; labels 0, 1, 0, 1 ..."""
    images, labels = [], []
    for i in range(n):
        img = face(i // 2, size).astype(np.float32) / 255
        if i % 2:
            s = size // 4
            img[s : 3 * s, s : 3 * s] = 0.3 * img[s : 3 * s, s : 3 * s] + 0.7
        images.append(img)
        labels.append(i % 2)
    x = torch.from_numpy(np.stack(images)).permute(0, 3, 1, 2)
    mean = torch.tensor(model.cfg.mean).reshape(1, 3, 1, 1)
    std = torch.tensor(model.cfg.std).reshape(1, 3, 1, 1)
    return {"image": (x - mean) / std, "label": torch.tensor(labels)}


def train_steps(model, batch: dict, steps: int, lr: float = 1e-3) -> list[dict[str, float]]:
    """Adam steps on one batch; the loss terms of each step."""
    optimiser = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=lr)
    model.train()
    history = []
    for _ in range(steps):
        losses = model.loss(batch, model(batch))
        optimiser.zero_grad()
        losses["total"].backward()
        optimiser.step()
        history.append({k: float(v.detach()) for k, v in losses.items()})
    return history


# ----------------------------------------------------------------------------- Effort


@pytest.fixture(scope="module")
def clip_folder(tmp_path_factory) -> Path:
    """A tiny CLIP vision tower saved by transformers' save_pretrained."""
    torch.manual_seed(0)
    folder = tmp_path_factory.mktemp("clip") / "tiny-clip"
    CLIPVisionModel(CLIPVisionConfig(**vision_config_values(EffortConfig(**TINY)))).save_pretrained(
        folder
    )
    return folder


def test_effort_decomposes_the_loaded_clip_exactly(clip_folder: Path) -> None:
    source = CLIPVisionModel.from_pretrained(clip_folder).eval()
    effort = build_detector("effort", pretrained=str(clip_folder), **TINY).eval()
    layers = effort.svd_layers()
    assert len(layers) == 4 * TINY["layers"]
    for name, m in effort.backbone.named_modules():
        if isinstance(m, SVDResidualLinear):
            original = source.get_submodule(name).weight.detach()
            torch.testing.assert_close(m.weight(), original, rtol=0, atol=1e-6)
            singular = torch.linalg.svdvals(original.double())
            assert float(m.S_residual.detach()) == pytest.approx(float(singular[-1]), rel=1e-5)
            main = torch.linalg.svdvals(m.weight_main.double())
            assert float(main[-1]) < 1e-5 * float(main[0])  # rank n - 1
            assert float(m.U_residual.detach().norm()) == pytest.approx(1.0, abs=1e-6)
    x = face_batch(effort, n=2)["image"]
    with torch.no_grad():
        torch.testing.assert_close(
            effort.backbone(pixel_values=x).pooler_output,
            source(pixel_values=x).pooler_output,
            rtol=0,
            atol=1e-5,
        )
    trainable = {k.rsplit(".", 1)[-1] for k, p in effort.named_parameters() if p.requires_grad}
    assert trainable == {"S_residual", "U_residual", "V_residual", "weight", "bias"}
    assert all(
        not p.requires_grad for k, p in effort.backbone.named_parameters() if "_res" not in k
    )


def test_effort_refuses_half_a_clip_folder(clip_folder: Path, tmp_path: Path) -> None:
    half = tmp_path / "half"
    half.mkdir()
    state = load_file(str(clip_folder / "model.safetensors"))
    keys = sorted(state)
    save_file({k: state[k] for k in keys[::2]}, str(half / "model.safetensors"))
    (half / "config.json").write_text((clip_folder / "config.json").read_text())
    with pytest.raises(PretrainedWeightsError, match="does not cover the backbone") as err:
        build_detector("effort", pretrained=str(half), **TINY)
    assert f"missing {len(keys[1::2])}: {', '.join(keys[1::2][:8])}" in str(err.value)


def test_effort_without_weights_runs_no_svd(monkeypatch) -> None:
    def refuse(*args, **kwargs):
        raise AssertionError("an SVD ran while building with pretrained: false")

    monkeypatch.setattr(torch.linalg, "svd", refuse)
    effort = build_detector("effort", **TINY)
    for m in effort.svd_layers():
        assert float(m.S_residual.detach()) == 0.0
        torch.testing.assert_close(m.U_residual.T @ m.U_residual, torch.eye(1))


def _direct_orthogonality(m: SVDResidualLinear, u_r, v_r, form: str) -> torch.Tensor:
    """The official Effort code's formula with the frozen factors stored (basis) / DFB's."""
    u, v = m.U_residual.double(), m.V_residual.double()
    if form == "basis":
        u, v = torch.cat([u_r, u], 1), torch.cat([v_r, v], 0)
    uu, vv = u @ u.T, v @ v.T
    return 0.5 * torch.linalg.matrix_norm(uu - torch.eye(len(uu), dtype=uu.dtype)) + 0.5 * (
        torch.linalg.matrix_norm(vv - torch.eye(len(vv), dtype=vv.dtype))
    )


@pytest.mark.parametrize("rank", [1, 3])
def test_effort_constraints_equal_their_direct_formulas(rank: int) -> None:
    torch.manual_seed(0)
    linear = torch.nn.Linear(12, 12)
    m = SVDResidualLinear.from_linear(linear, rank, svd=True)
    u, s, vh = torch.linalg.svd(linear.weight.double())
    u_r, v_r = u[:, : 12 - rank], vh[: 12 - rank]
    # at the decomposition the constraints hold: zero orthogonality, the norm kept
    assert float(m.orthogonal_loss("basis").detach()) < 1e-5
    assert float(m.sv_loss().detach()) < 1e-4
    with torch.no_grad():
        m.U_residual.add_(0.3 * torch.randn_like(m.U_residual))
        m.V_residual.add_(0.3 * torch.randn_like(m.V_residual))
        m.S_residual.mul_(1.5)
    for form in ("basis", "residual"):
        direct = _direct_orthogonality(m, u_r, v_r, form)
        assert float(m.orthogonal_loss(form).detach()) == pytest.approx(direct.item(), rel=1e-4)
    weight = linear.weight.detach().double()
    sv_direct = abs(float(m.weight().detach().double().square().sum() - weight.square().sum()))
    assert float(m.sv_loss().detach()) == pytest.approx(sv_direct, rel=1e-4)
    total = m.orthogonal_loss("basis") + m.sv_loss()
    total.backward()
    assert all(torch.isfinite(p.grad).all() for p in (m.U_residual, m.V_residual, m.S_residual))


def test_effort_class_losses_are_each_class_cross_entropy() -> None:
    """DeepfakeBench's real_loss/fake_loss diagnostics: CE over each class alone, 0 if absent."""
    logits, label = torch.tensor([[2.0, 0.0], [0.0, 1.0], [1.0, 3.0]]), torch.tensor([0, 0, 1])
    terms = class_losses(logits, label)
    torch.testing.assert_close(terms["ce_real"], F.cross_entropy(logits[:2], label[:2]))
    torch.testing.assert_close(terms["ce_fake"], F.cross_entropy(logits[2:], label[2:]))
    assert float(class_losses(logits[:2], label[:2])["ce_fake"]) == 0.0


def test_effort_trains_its_residuals_and_head(clip_folder: Path) -> None:
    torch.manual_seed(0)
    for variant in (None, "paper"):
        effort = build_detector("effort", variant=variant, pretrained=str(clip_folder), **TINY)
        frozen = {k: v.clone() for k, v in effort.state_dict().items() if "weight_main" in k}
        history = train_steps(effort, face_batch(effort), steps=8)
        assert history[-1]["total"] < history[0]["total"]
        if variant == "paper":
            assert {"orthogonal", "singular_values"} <= set(history[-1])
        assert all(torch.equal(effort.state_dict()[k], v) for k, v in frozen.items())


# ----------------------------------------------------------------------------- UIA-ViT


def _dfb_loop_loss(attn_map, label, fake_patch, c_real, c_fake, c_cross) -> torch.Tensor:
    """DeepfakeBench's PatchConsistencyLoss, its loops as written."""
    p = attn_map.shape[-1]
    real, fake = attn_map[label == 0], attn_map[label == 1]
    c = (1 - c_real) * torch.eye(p) + c_real * torch.ones(p)
    loss = torch.sum(torch.abs(real - c.expand(len(real), -1, -1))) / (len(real) * (p * p - p))
    mats = []
    for b in torch.where(label == 1)[0]:
        fake_idx = torch.where(fake_patch[b])[0]
        real_idx = torch.where(~fake_patch[b])[0]
        tmp = torch.zeros(p, p) + c_cross
        for i in fake_idx:
            tmp[i, fake_idx] = c_fake
        for i in real_idx:
            tmp[i, real_idx] = c_real
        mats.append(tmp)
    return loss + torch.sum(torch.abs(fake - torch.stack(mats))) / (len(fake) * (p * p - p))


def test_patch_consistency_loss_hand_case() -> None:
    # one real face: all-0.5 map; one fake face with patches (fake, fake, real): all-0.5 map
    attn = torch.full((2, 3, 3), 0.5)
    label = torch.tensor([0, 1])
    fake_patch = torch.tensor([[False, False, False], [True, True, False]])
    c = {k: torch.tensor(v) for k, v in (("c_real", 0.6), ("c_fake", 0.8), ("c_cross", 0.2))}
    # real: diagonal |0.5 - 1| x 3 + off-diagonal |0.5 - 0.6| x 6 = 2.1, / (3^2 - 3) = 0.35
    # fake: 4 fake-fake |0.5-0.8| + 1 real-real |0.5-0.6| + 4 cross |0.5-0.2| = 2.5, / 6
    loss = patch_consistency_loss(attn, label, fake_patch, **c)
    assert float(loss) == pytest.approx(0.35 + 2.5 / 6, abs=1e-6)


def test_patch_consistency_loss_equals_deepfakebench_loops_with_gradients() -> None:
    g = torch.Generator().manual_seed(0)
    attn = torch.rand(5, 9, 9, generator=g)
    label = torch.tensor([0, 1, 1, 0, 1])
    fake_patch = torch.rand(5, 9, generator=g) > 0.5
    grads = []
    for fn in (patch_consistency_loss, _dfb_loop_loss):
        c = [torch.tensor(v, requires_grad=True) for v in (0.6, 0.7, 0.2)]
        loss = fn(attn, label, fake_patch, *c)
        loss.backward()
        grads.append((float(loss.detach()), [float(t.grad) for t in c]))
    assert grads[0][0] == pytest.approx(grads[1][0], rel=1e-6)
    assert grads[0][1] == pytest.approx(grads[1][1], rel=1e-6)


def test_gaussian_fit_is_ledoit_wolf() -> None:
    x = torch.randn(200, 6, generator=torch.Generator().manual_seed(0))
    mean, precision = fit_gaussian(x)
    torch.testing.assert_close(mean, x.mean(0))
    ref = LedoitWolf().fit(x.numpy()).precision_
    torch.testing.assert_close(precision, torch.from_numpy(ref).float())


def test_uia_schedule_gaussians_and_late_parameters() -> None:
    """Epoch 0: CE only, Gaussians fitted at each half epoch; from epoch 1: PCL and the c_* train."""
    torch.manual_seed(0)
    model = build_detector("uia_vit", **TINY_UIA)
    model.set_schedule(steps_per_epoch=4, epochs=2)
    batch = face_batch(model)
    optimiser = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=1e-3)
    model.train()
    seen, history = [], []
    for step in range(8):
        fitted = bool(model.stats_fitted)
        losses = model.loss(batch, model(batch))
        optimiser.zero_grad()
        losses["total"].backward()
        reached = model.model.c_real.grad is not None
        optimiser.step()
        seen.append(("pcl" in losses, reached))
        history.append({k: float(v.detach()) for k, v in losses.items()})
        assert bool(model.stats_fitted) == (fitted or step + 1 >= 2)
    assert all(math.isfinite(v) for h in history for v in h.values())
    assert seen == [(False, False)] * 4 + [(True, True)] * 4
    assert history[7]["total"] < history[4]["total"]  # the loss with PCL falls too
    assert history[7]["pcl_total"] < history[4]["pcl_total"]
    assert int(model.batch_count) == 8
    assert float(model.model.c_real.detach()) != pytest.approx(0.6)
    with torch.no_grad():
        out = model.eval()(batch)
    assert out["patch_feat"].shape == (8, 4, 4, 32) and out["attn_map"].shape == (8, 16, 16)


def test_uia_without_schedule_trains_as_its_first_epoch(caplog) -> None:
    model = build_detector("uia_vit", **TINY_UIA)
    history = train_steps(model, face_batch(model), steps=6)
    assert all(set(h) == {"total", "ce"} for h in history)
    assert history[-1]["total"] < history[0]["total"]
    assert caplog.text.count("no training schedule") == 1


# ----------------------------------------------------------------------------- a few steps each


@pytest.mark.parametrize("name", ["clip", "effort"])
def test_clip_towers_learn_on_faces(name: str) -> None:
    torch.manual_seed(0)
    model = build_detector(name, **TINY)
    history = train_steps(model, face_batch(model), steps=8)
    assert history[-1]["total"] < history[0]["total"]


def test_uia_vit_trains_through_the_trainer_and_resumes_exactly(tmp_path: Path) -> None:
    """The trainer tells UIA-ViT its schedule (6 steps an epoch: PCL from the second epoch); a run
    killed in its third epoch resumes from the second epoch's end (a fit) to the same weights."""
    make_index(tmp_path / "data", "tiny", n_real=3, n_fake=3, frames=2, size=32)
    sets = {
        "data.data_root": str(tmp_path / "data"),
        "data.train_data": "[tiny]",
        "data.val_data": "[tiny]",
        "data.num_workers": 0,
        "train.epochs": 3,
        "train.batch_size": 2,
        "train.resolution": 32,
        "train.frame_num": 2,
        "train.test_frame_num": 2,
        "train.save_predictions": "false",
    }
    sets |= {f"model.{k}": str(v).replace(" ", "") for k, v in TINY_UIA.items()}

    def cfg(out: str):
        overrides = {**sets, "output_dir": str(tmp_path / out)}
        return load_train_config("uia_vit", overrides=[f"{k}={v}" for k, v in overrides.items()])

    full = Trainer(cfg("a")).fit()
    state = read_checkpoint(full / "checkpoints" / "last.pt")["model"]
    assert int(state["batch_count"]) == 18
    assert bool(state["stats_fitted"])
    assert float(state["model.c_cross"]) != pytest.approx(0.2)
    with pytest.raises(KeyboardInterrupt):
        Trainer(cfg("b"), batch_transforms=[_KillAt(15)]).fit()
    (killed,) = (tmp_path / "b").iterdir()
    assert int(read_checkpoint(killed / "checkpoints" / "last.pt")["model"]["batch_count"]) == 12
    resumed = Trainer.from_run(killed, batch_transforms=[_KillAt(None)]).fit()
    again = read_checkpoint(resumed / "checkpoints" / "last.pt")["model"]
    for k, v in state.items():
        torch.testing.assert_close(again[k], v, rtol=1e-5, atol=1e-6, msg=k)


@pytest.mark.parametrize(("name", "tiny"), [("effort", TINY), ("uia_vit", TINY_UIA)])
def test_checkpoints_ours_and_deepfakebench_load(tmp_path: Path, name: str, tiny: dict) -> None:
    """Our checkpoint keeps the training-state buffers; a DeepfakeBench file (raw state dict,
    DDP prefixes, without them) loads through the same entry points and computes the same."""
    torch.manual_seed(0)
    model = build_detector(name, **tiny).eval()
    batch = face_batch(model, n=2)
    with torch.no_grad():
        expected = model(batch)["prob"]
    save_checkpoint(tmp_path / "ours.pt", {"model": model.state_dict(), "meta": {"detector": name}})
    own_only = {k for k in model.state_dict() if k.endswith("_init") or k in UIA_STATE}
    dfb = {f"module.{k}": v for k, v in model.state_dict().items() if k not in own_only}
    torch.save(dfb, tmp_path / "dfb.pth")
    for path in ("ours.pt", "dfb.pth"):
        loaded = load_detector_file(name, tmp_path / path, model_cfg=dict(tiny))
        with torch.no_grad():
            torch.testing.assert_close(loaded(batch)["prob"], expected, rtol=0, atol=1e-6)
        again = build_detector(name, pretrained=str(tmp_path / path), **tiny).eval()
        with torch.no_grad():
            torch.testing.assert_close(again(batch)["prob"], expected, rtol=0, atol=1e-6)
