"""Spatial detectors: Capsule, FWA/iFWA, Face X-ray, FFD, CORE, RECCE, UCF.

The shared contract (forward/backward/learning on every registered detector) lives in
tests/test_detector_contract.py; this file checks each detector's own pieces against
hand-computed values and the authors' formulations, at small sizes.
"""

from __future__ import annotations

import functools
import math
from pathlib import Path

import cv2
import numpy as np
import pytest
import torch
from torch.nn import functional as F

from fairforensics.configs import ConfigError
from fairforensics.detectors import build_detector, load_detector_yaml
from tests.detector_batches import make_batch
from tests.testdata import FACE_RECOGNITION

SPATIAL = ("capsule", "fwa", "ifwa", "xray", "ffd", "core", "recce", "ucf")


def _params(model: torch.nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


def _freeze_xception_to_block11(xception: torch.nn.Module) -> None:
    """Keep a test's optimiser steps cheap: train only Xception's exit flow (block 12 on)."""
    for name, child in xception.named_children():
        if name == "block12":
            break
        child.requires_grad_(False)


def _trainable(model: torch.nn.Module) -> list[torch.nn.Parameter]:
    return [p for p in model.parameters() if p.requires_grad]


# ----------------------------------------------------------------------------- configs


@pytest.mark.parametrize("name", SPATIAL)
def test_yaml_is_valid_for_model_and_trainer(name):
    from fairforensics.training.config import load_train_config

    data = load_detector_yaml(name)
    assert data["detector"] == name and data["model"]["input_size"] == 256
    cfg = load_train_config(name)
    assert cfg.train.resolution == 256
    assert cfg.train.batch_size == (16 if name in ("fwa", "ifwa", "xray", "ucf") else 32)


@pytest.mark.parametrize(
    ("name", "key", "value"),
    [
        ("ffd", "map_after", 12),
        ("xray", "backbone", "resnet50"),
        ("ucf", "feat_dim", 511),
        ("core", "consistency_rate", -1.0),
    ],
)
def test_bad_config_values_are_rejected(name, key, value):
    with pytest.raises((ConfigError, ValueError), match=key):
        build_detector(name, pretrained=False, **{key: value})


# ----------------------------------------------------------------------------- capsule


def test_capsule_parameter_count_is_hand_computed():
    vgg = 1792 + 36928 + 73856 + 147584 + 295168 + 3 * 590080  # conv1_1 .. conv3_4
    primary = (
        (256 * 64 * 9 + 64) + 128 + (64 * 16 * 9 + 16) + 32 + (2 * 8 * 5 + 8) + 16 + (8 * 3 + 1) + 2
    )
    routing = 2 * 10 * 4 * 8
    model = build_detector("capsule", pretrained=False)
    assert _params(model) == vgg + 10 * primary + routing == 3_896_638


def test_capsule_routing_matches_the_authors_matmul_form():
    from fairforensics.detectors.capsule import Routing, squash

    torch.manual_seed(0)
    routing = Routing(n_in=10, n_out=2, d_in=8, d_out=4, iterations=2)
    x = torch.randn(3, 8, 10)
    got = routing(x)
    # the authors' formulation: priors = W[:, None] @ x[None, ..., None]
    priors = (routing.weights[:, None] @ x.transpose(2, 1)[None, :, :, :, None]).transpose(1, 0)
    logits = torch.zeros_like(priors)
    for i in range(2):
        probs = torch.softmax(logits, dim=2)
        outputs = squash((probs * priors).sum(dim=2, keepdim=True), dim=3)
        if i != 1:
            logits = logits + priors * outputs
    expected = outputs.squeeze(-1).squeeze(2).transpose(2, 1)
    torch.testing.assert_close(got, expected)
    assert got.shape == (3, 4, 2)
    v = torch.tensor([[3.0, 4.0]])
    torch.testing.assert_close(squash(v, dim=1), v / 5 * (25 / 26))


def test_capsule_prediction_is_mean_of_capsule_softmaxes_and_loss_is_authors():
    model = build_detector("capsule", pretrained=False, input_size=64, variant="paper").eval()
    batch = make_batch(model, 64)
    with torch.no_grad():
        out = model(batch)
    classes = out["classes"]
    assert classes.shape == (4, 4, 2)
    torch.testing.assert_close(out["prob"], classes.mean(dim=1)[:, 1])
    expected = sum(F.cross_entropy(classes[:, i], batch["label"]) for i in range(4))
    torch.testing.assert_close(model.loss(batch, out)["total"], expected)
    # DeepfakeBench's variant: same network, prob = softmax of the mean class probabilities.
    dfb = build_detector("capsule", pretrained=False, input_size=64).eval()
    dfb.load_state_dict(model.state_dict())
    with torch.no_grad():
        out_dfb = dfb(batch)
    torch.testing.assert_close(out_dfb["prob"], torch.softmax(classes.mean(dim=1), 1)[:, 1])


def test_capsule_keeps_float64_capsule_probabilities():
    # the class softmax ran in float32 whatever the model's dtype (training-step parity, issue 30)
    model = build_detector("capsule", pretrained=False, input_size=32).double().eval()
    batch = {"image": torch.rand(2, 3, 32, 32, dtype=torch.float64)}
    with torch.no_grad():
        out = model(batch)
    assert out["classes"].dtype == torch.float64


# ----------------------------------------------------------------------------- FWA / iFWA


@functools.cache
def _faces() -> list[tuple[np.ndarray, np.ndarray]]:
    from tests.test_blending import _face_crop

    return [_face_crop(FACE_RECOGNITION / n) for n in ("obama.jpg", "biden.jpg")]


def _real_face_pairs(generator: str, size: int) -> dict:
    """A batch of real faces and their generated fakes (the pipeline's 2B layout)."""
    from fairforensics.preprocessing.blending import generate

    reals, fakes = [], []
    faces = _faces()
    for i, (img, pts) in enumerate(faces):
        partner = faces[1 - i] if generator == "xray" else None
        out = generate(generator, img, pts, np.random.default_rng(i), partner=partner)
        reals.append((img, np.zeros(img.shape[:2], np.float32)))
        fakes.append((out["image"], out["mask"]))
    images, masks = zip(*(reals + fakes), strict=True)
    x = torch.stack(
        [
            torch.from_numpy(cv2.resize(im, (size, size))).permute(2, 0, 1).float() / 127.5 - 1
            for im in images
        ]
    )
    m = torch.stack([torch.from_numpy(cv2.resize(mk, (size, size)))[None] for mk in masks])
    return {"image": x, "label": torch.tensor([0, 0, 1, 1]), "mask": m, "xray": 4 * m * (1 - m)}


def test_fwa_and_ifwa_on_real_faces_and_their_warped_fakes():
    batch = _real_face_pairs("fwa", 64)
    assert (batch["image"][2:] != batch["image"][:2]).any()
    fwa = build_detector("fwa", pretrained=False, input_size=64)
    ifwa = build_detector("ifwa", pretrained=False, input_size=64)
    assert _params(ifwa) - _params(fwa) == 32 * 3 * 3  # one more input channel in conv1
    assert ifwa.backbone.conv1.in_channels == 4
    assert ifwa.inputs(batch["image"]).shape == (4, 4, 64, 64)
    losses = fwa.loss(batch, fwa(batch))
    losses["total"].backward()
    assert math.isfinite(losses["total"].item()) and fwa.head.weight.grad is not None
    with torch.no_grad():
        assert ifwa.eval()(batch)["prob"].shape == (4,)


# ----------------------------------------------------------------------------- Face X-ray


@pytest.fixture(scope="module")
def small_xray():
    torch.manual_seed(0)
    return build_detector(
        "xray",
        Path(__file__).resolve().parents[1] / "configs/detectors/paper/xray.yaml",
        pretrained=False,
        input_size=64,
        backbone="hrnet_w18_small",
    )


def test_xray_outputs_and_loss_on_blended_real_faces(small_xray):
    batch = _real_face_pairs("xray", 64)
    assert batch["xray"].max() > 0.9 and batch["xray"][:2].max() == 0
    out = small_xray(batch)
    assert out["xray"].shape == (4, 1, 64, 64)
    assert (out["xray"] >= 0).all() and (out["xray"] <= 1).all()
    losses = small_xray.loss(batch, out)
    bce = F.binary_cross_entropy(out["xray"], batch["xray"])
    torch.testing.assert_close(losses["xray"], bce, rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(losses["total"], losses["ce"] + 100.0 * losses["xray"])
    no_target = {k: v for k, v in batch.items() if k != "xray"}
    assert set(small_xray.loss(no_target, out)) == {"total", "ce"}
    bad = dict(batch, xray=batch["xray"][:, :, :32])
    with pytest.raises(ValueError, match="'xray' has shape"):
        small_xray.loss(bad, out)


def test_xray_default_backbone_is_hrnet_w48():
    model = build_detector("xray", pretrained=False, variant="paper")
    assert model.xray_head.in_channels == 48 + 96 + 192 + 384
    assert _params(model) == 65_327_283
    assert _params(build_detector("xray", pretrained=False)) == 84_192_195  # DeepfakeBench's heads


# ----------------------------------------------------------------------------- FFD


@pytest.fixture(scope="module")
def ffd():
    torch.manual_seed(0)
    return build_detector("ffd", pretrained=False, input_size=64, variant="paper", map_after=4)


def test_ffd_map_loss_with_masks(ffd):
    batch = make_batch(ffd, 64)
    out = ffd(batch)
    assert out["map"].shape == (4, 1, 4, 4) and (out["map"] >= 0).all() and (out["map"] <= 1).all()
    losses = ffd.loss(batch, out)
    target = F.adaptive_avg_pool2d(batch["mask"], (4, 4))
    expected = (out["map"] - target).abs().mean(dim=(1, 2, 3)).mean()
    torch.testing.assert_close(losses["map"], expected)
    torch.testing.assert_close(losses["total"], losses["ce"] + losses["map"])


def test_ffd_without_masks_uses_zero_maps_for_reals_and_weak_loss_for_fakes(ffd):
    batch = make_batch(ffd, 64)
    batch["mask"] = torch.zeros_like(batch["mask"])
    batch["has_mask"] = torch.zeros(4, dtype=torch.bool)
    out = ffd(batch)
    losses = ffd.loss(batch, out)
    att, real = out["map"], batch["label"] == 0
    per = torch.where(real, att.abs().mean(dim=(1, 2, 3)), (att.amax(dim=(1, 2, 3)) - 1).abs())
    torch.testing.assert_close(losses["map"], per.mean())
    losses["total"].backward()
    assert ffd.map.conv.conv1.weight.grad is not None
    del batch["mask"], batch["has_mask"]  # a dataset without any mask key
    assert math.isfinite(ffd.loss(batch, ffd(batch))["total"].item())


# ----------------------------------------------------------------------------- CORE


def test_core_consistency_loss_hand_computed():
    from fairforensics.detectors.core import consistency_loss

    a = torch.tensor([[1.0, 0.0], [1.0, 0.0]])
    b = torch.tensor([[2.0, 0.0], [0.0, 3.0]])  # cos 1 and cos 0
    torch.testing.assert_close(consistency_loss(a, b), torch.tensor(0.5))


def test_core_loss_falls_and_eval_uses_the_image():
    torch.manual_seed(0)
    model = build_detector("core", pretrained=False, input_size=64, variant="paper")
    _freeze_xception_to_block11(model.backbone)
    batch = make_batch(model, 64)
    out = model(batch)
    assert out["view_logits"].shape == (8, 2) and out["logits"].shape == (4, 2)
    first = model.loss(batch, out)
    assert set(first) == {"total", "ce", "consistency"}
    opt = torch.optim.Adam(_trainable(model), lr=1e-3)
    for _ in range(3):
        opt.zero_grad()
        model.loss(batch, model(batch))["total"].backward()
        opt.step()
    with torch.no_grad():
        assert model.loss(batch, model(batch))["total"].item() < first["total"].item()
    model.eval()
    with torch.no_grad():
        plain = model({"image": batch["image"], "label": batch["label"]})
    assert "view_logits" not in plain and plain["prob"].shape == (4,)


# ----------------------------------------------------------------------------- RECCE


def test_recce_metric_learning_loss_hand_computed():
    from fairforensics.detectors.recce import metric_learning_loss

    label = torch.tensor([0, 0, 1])
    sim = torch.tensor([[1.0, 0.8, 0.3], [0.8, 1.0, 0.1], [0.3, 0.1, 1.0]])
    # real-real pairs: 0.8 (twice); real-fake pairs: 0.3, 0.1 (twice each) -> 1 - 0.8 + 0.2
    torch.testing.assert_close(
        metric_learning_loss([sim, sim], label), torch.tensor(2 * 0.4), atol=1e-5, rtol=0
    )
    good = torch.tensor([[1.0, 1.0, 0.0], [1.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    assert metric_learning_loss([good], label).item() == pytest.approx(0.0, abs=1e-5)


def test_recce_graph_reasoning_matches_the_authors_loop():
    from fairforensics.detectors.recce import GraphReasoning

    torch.manual_seed(0)
    g = GraphReasoning(6, 4, 5, 4, 3, 4, (2, 4), 0.0).eval()
    va, vb, vc = torch.randn(2, 6, 2, 2), torch.randn(2, 5, 4, 4), torch.randn(2, 3, 8, 8)
    got = g(va, vb, vc)
    emb_a = g.a_embed(va).flatten(2)
    gb, gc = 1 - g.gate_b(va).flatten(2), 1 - g.gate_c(va).flatten(2)
    eb = g.b_embed(F.unfold(vb, 2, stride=2).reshape(2, 5, 4, -1).permute(0, 2, 3, 1))
    ec = g.c_embed(F.unfold(vc, 4, stride=4).reshape(2, 3, 16, -1).permute(0, 2, 3, 1))
    agg_b, agg_c = [], []
    for j in range(emb_a.shape[-1]):
        a = torch.stack([emb_a[:, :, j]] * 4, dim=1)
        w = torch.softmax(g.reweight_b(torch.cat([a, eb[:, :, j]], -1)), dim=1)
        agg_b.append(torch.bmm(eb[:, :, j].transpose(1, 2), w).squeeze(-1) * gb[:, :, j])
        a = torch.stack([emb_a[:, :, j]] * 16, dim=1)
        w = torch.softmax(g.reweight_c(torch.cat([a, ec[:, :, j]], -1)), dim=1)
        agg_c.append(torch.bmm(ec[:, :, j].transpose(1, 2), w).squeeze(-1) * gc[:, :, j])
    fused = torch.sigmoid(
        torch.cat([torch.stack(agg_b, -1), torch.stack(agg_c, -1), emb_a], 1)
    ).reshape(2, -1, 2, 2)
    torch.testing.assert_close(got, g.reproject(fused))
    with pytest.raises(ValueError, match="do not tile"):
        g(va, vb[:, :, :2, :2], vc)


def test_recce_reconstruction_loss_uses_real_faces_only():
    from fairforensics.detectors.recce import reconstruction_loss

    image = torch.zeros(3, 3, 4, 4)
    recons = torch.zeros(3, 3, 4, 4)
    recons[2] = 1.0  # the fake's reconstruction is ignored
    label = torch.tensor([0, 0, 1])
    assert reconstruction_loss(recons, image, label).item() == 0.0
    recons[0] = 0.5
    assert reconstruction_loss(recons, image, label).item() == pytest.approx(0.25)
    assert reconstruction_loss(recons, image, torch.ones(3, dtype=torch.long)).item() == 0.0


def test_recce_forward_outputs():
    torch.manual_seed(0)
    model = build_detector("recce", pretrained=False, input_size=64, variant="paper").eval()
    batch = make_batch(model, 64)
    with torch.no_grad():
        out = model(batch)
    assert out["recons"].shape == batch["image"].shape
    assert out["recons"].abs().max() <= 1
    assert out["sim_encoder"].shape == (4, 4) and out["feat"].shape == (4, 2048)
    assert set(model.loss(batch, out)) == {"total", "ce", "reconstruction", "metric"}


# ----------------------------------------------------------------------------- UCF


def test_ucf_adain_and_triplet_hand_computed():
    from fairforensics.detectors.ucf import adain, triplet_loss

    content = torch.tensor([1.0, 3.0]).reshape(1, 1, 1, 2)
    style = torch.tensor([10.0, 14.0]).reshape(1, 1, 1, 2)
    out = adain(content, style, eps=0.0)
    torch.testing.assert_close(out, style)  # same shape of distribution -> exactly the style
    feat = torch.tensor([[0.0, 0.0], [0.0, 0.0], [1.0, 0.0], [1.0, 0.0]])
    label = torch.tensor([0, 0, 1, 1])
    # d(a, p) = 0 and d(a, n) = 1 for every sample -> max(0, 0 - 1 + 3) = 2
    assert triplet_loss(feat, label, label, margin=3.0).item() == pytest.approx(2.0)
    assert (
        triplet_loss(
            feat, torch.zeros(4, dtype=torch.long), torch.zeros(4, dtype=torch.long), 3.0
        ).item()
        == 0.0
    )


def test_ucf_losses_fall_on_a_tiny_pair_batch():
    torch.manual_seed(0)
    model = build_detector("ucf", pretrained=False, input_size=64)
    _freeze_xception_to_block11(model.encoder_f.xception)
    _freeze_xception_to_block11(model.encoder_c.xception)
    batch = make_batch(model, 64)
    out = model(batch)
    assert out["recon_self"].shape == batch["image"].shape and out["logits_spe"].shape == (4, 5)
    first = model.loss(batch, out)
    assert set(first) == {"total", "ce", "specific", "reconstruction", "contrastive"}
    opt = torch.optim.Adam(_trainable(model), lr=1e-3)
    for step in range(3):
        torch.manual_seed(step)
        opt.zero_grad()
        model.loss(batch, model(batch))["total"].backward()
        opt.step()
    torch.manual_seed(0)
    with torch.no_grad():
        assert model.loss(batch, model(batch))["total"].item() < first["total"].item()
    bad = dict(batch, method_label=torch.full((4,), 9))
    with pytest.raises(ValueError, match="num_methods"):
        model.loss(bad, model(bad))
    model.eval()
    with torch.no_grad():
        ev = model({"image": batch["image"], "label": batch["label"]})
    assert "recon_self" not in ev and set(model.loss(batch, ev)) == {"total", "ce"}
