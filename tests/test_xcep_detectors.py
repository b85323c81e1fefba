"""rfm, sladd, pcl_xception, iid and lsda (DeepfakeBench v2): their training recipes.

Hand cases of every loss term and of the training-time synthesis (RFM's erasing, PCL's
consistency target against DeepfakeBench's ``Masks4D`` loops, SLADD's region pasting on real
faces, LSDA's latent augmentation), the batch keys they ask of the data pipeline
(``identity``, ``method_groups``, ``blend:i2g``), and a few optimisation steps on a batch from the
training data pipeline with the loss falling (small widths for IID's and LSDA's extra networks).
"""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn
from torch.nn import functional as F

from fairforensics.configs import ConfigError
from fairforensics.detectors import build_detector
from fairforensics.detectors.iid import arcface_loss, identity_contrast, sigmoid_margin_ce
from fairforensics.detectors.lsda import (
    LSDA,
    NOISE,
    LatentDraws,
    augment_domains,
    cosine_distance,
    draw_latent_augmentation,
    mixup_domains,
)
from fairforensics.detectors.pcl_xception import (
    ConsistencyVolume,
    consistency_bce,
    consistency_target,
)
from fairforensics.detectors.rfm import erase_mask, forgery_attention
from fairforensics.detectors.sladd import SLADD, SLADDConfig, magnitude_loss, sample_actions
from fairforensics.detectors.sladd_synthesis import region_mask, synthesize
from fairforensics.preprocessing.frames import FrameDataset, collate, to_device
from fairforensics.preprocessing.index import read_index
from tests.test_train_utils import make_index

SMALL = {  # small widths of the extra networks (the parity tests cover the real ones)
    "iid": {"extractor_depth": 18},
    "lsda": {"encoder": "efficientnet_b0", "real_encoder_depth": 18, "methods": ["A", "B"]},
}


# ----------------------------------------------------------------------------- RFM


def test_rfm_attention_is_the_input_gradient_of_its_target() -> None:
    weight = torch.randn(3, 5, 5)
    module = nn.Module().train()

    def target(x: torch.Tensor) -> torch.Tensor:
        assert not module.training  # the FAM is taken in eval mode
        return (x * weight).sum(dim=(1, 2, 3))

    fam = forgery_attention(module, target, torch.randn(2, 3, 5, 5))
    torch.testing.assert_close(fam, weight.abs().amax(0).expand(2, 5, 5))
    assert module.training


def test_rfm_fam_target_by_variant() -> None:
    """DeepfakeBench's target is feature channel 1 minus channel 0 of the final (post-ReLU) map,
    summed over positions (its cal_fam unpacks (logits, features) as (_, output)); the paper's is
    the logit margin."""
    torch.manual_seed(0)
    x = torch.randn(2, 3, 64, 64)
    dfb = build_detector("rfm", pretrained=False).eval()
    feat = dfb.backbone.forward_features(x)
    assert float(feat.detach().min()) >= 0  # after the ReLU
    torch.testing.assert_close(dfb.fam_target(x), (feat[:, 1] - feat[:, 0]).sum((1, 2)))
    paper = build_detector("rfm", {"pretrained": False, "variant": "paper"}).eval()
    paper.load_state_dict(dfb.state_dict())
    logits = paper({"image": x})["logits"]
    torch.testing.assert_close(paper.fam_target(x), logits[:, 1] - logits[:, 0])


def test_rfm_erases_blocks_at_the_most_sensitive_unvisited_points() -> None:
    fam = torch.zeros(1, 8, 8)
    fam[0, 4, 4], fam[0, 0, 0], fam[0, 6, 2] = 3.0, 2.0, 1.0
    # blocks of 1 x 1 with offsets 1: the pixel up-left of each point; (0, 0) has none in the image
    keep = erase_mask(fam, points=3, max_h=1, max_w=1)
    erased = {tuple(p) for p in torch.nonzero(keep[0, 0] == 0).tolist()}
    assert erased == {(3, 3), (5, 1)}
    random.seed(0)
    keep = erase_mask(fam, points=1, max_h=3, max_w=3)
    rows, cols = torch.nonzero(keep[0, 0] == 0).unbind(1)
    assert 1 <= int(rows.min()) <= 3 and int(rows.max()) <= 5 and 1 <= int(cols.min()) <= 3


def test_rfm_erases_only_in_training() -> None:
    torch.manual_seed(0)
    model = build_detector("rfm", pretrained=False, input_size=48)
    x = torch.randn(2, 3, 48, 48)
    erased = model.train().erase(x)
    changed = (erased != x).any(1)
    assert 0 < float(changed.float().mean()) < 1
    assert float(erased[changed.unsqueeze(1).expand_as(x)].abs().max()) <= 1.0  # noise in range
    model.eval()
    with torch.no_grad():
        a, b = model({"image": x})["prob"], model({"image": x})["prob"]
    torch.testing.assert_close(a, b)
    # DeepfakeBench's behaviour, as an option: erase in eval mode too, then train mode
    model.cfg.erase_in_eval = True
    calls = []
    model.erase = lambda image: calls.append(image) or image
    with torch.no_grad():
        model({"image": x})
    assert len(calls) == 1 and model.training


# ----------------------------------------------------------------------------- PCL-I2G


def _dfb_masks4d(masks: torch.Tensor) -> torch.Tensor:
    """DeepfakeBench's ``Masks4D`` loops (pcl_xception_detector.py), re-typed for the test."""
    volumes = []
    for mask in masks:
        mask = mask.squeeze(0)
        real_mask = mask[None, None, None]
        rows = []
        for i in range(mask.shape[0]):
            row = [
                real_mask if j == 0 else 1 - (mask[i, j] - real_mask).abs()
                for j in range(mask.shape[1])
            ]
            rows.append(torch.cat(row, dim=2))
        volumes.append(torch.cat(rows, dim=1))
    return torch.cat(volumes, dim=0)


def test_pcl_target_matches_deepfakebench_masks4d_and_the_paper() -> None:
    torch.manual_seed(0)
    mask = torch.rand(2, 1, 4, 4)
    dfb = _dfb_masks4d(mask)  # [2, 4, 4, 4, 4]
    ours = consistency_target(mask, (4, 4), first_column_quirk=True)
    torch.testing.assert_close(ours, dfb.reshape(2, 16, 16))
    paper = consistency_target(mask, (4, 4), first_column_quirk=False)
    m = mask.flatten(1)
    torch.testing.assert_close(paper, 1 - (m[:, :, None] - m[:, None, :]).abs())
    assert not torch.allclose(paper, ours)


def test_pcl_consistency_is_a_scaled_dot_product_and_its_loss_falls() -> None:
    """The volume is theta(x)^T theta(x) / sqrt(C); the PCL term (BCE with logits, DeepfakeBench's
    BCE on the sigmoid) falls to under a quarter of its start when theta is trained on a fixed
    feature map towards the consistency target of two blended regions (100 Adam steps)."""
    torch.manual_seed(0)
    volume = ConsistencyVolume(8)
    x = torch.randn(2, 8, 3, 3)
    t = volume.theta(x).flatten(2)
    expected = t.transpose(1, 2) @ t / math.sqrt(8)
    torch.testing.assert_close(volume(x), expected)
    mask = torch.zeros(2, 1, 3, 3)
    mask[0, :, :2, :2] = 1.0  # the blended region of each face
    mask[1, :, 1:, :] = 1.0
    target = consistency_target(mask, (3, 3), False)

    def pcl() -> torch.Tensor:
        return F.binary_cross_entropy_with_logits(volume(x), target)

    bce = F.binary_cross_entropy(torch.sigmoid(volume(x)), target)
    torch.testing.assert_close(pcl(), bce)
    optimiser = torch.optim.Adam(volume.parameters(), lr=0.05)
    first = pcl().item()
    for _ in range(100):
        optimiser.zero_grad()
        pcl().backward()
        optimiser.step()
    assert pcl().item() < 0.25 * first, (first, pcl().item())


def test_pcl_bce_after_sigmoid_saturates_as_deepfakebench_and_from_logits_does_not() -> None:
    # float32 sigmoid(20) is exactly 1: nn.BCELoss clamps log(0) at -100 and passes no gradient
    logits = torch.tensor([20.0, -3.0, 0.5], requires_grad=True)
    target = torch.tensor([0.0, 0.0, 1.0])
    dfb = consistency_bce(logits, target, after_sigmoid=True)
    expected = F.binary_cross_entropy(torch.sigmoid(logits.detach()), target)
    torch.testing.assert_close(dfb, expected)
    assert dfb.item() > 100 / 3
    dfb.backward()
    assert logits.grad[0] == 0
    stable = consistency_bce(logits.detach(), target, after_sigmoid=False)
    torch.testing.assert_close(stable, F.binary_cross_entropy_with_logits(logits.detach(), target))
    assert stable.item() < 8
    # unsaturated, the two are the same loss
    small = torch.tensor([2.0, -3.0, 0.5])
    torch.testing.assert_close(
        consistency_bce(small, target, True), consistency_bce(small, target, False)
    )


# ----------------------------------------------------------------------------- IID


def test_iid_loss_terms_by_hand() -> None:
    ce = sigmoid_margin_ce(torch.zeros(1, 2), torch.tensor([1]), scale=8.0, margin=0.2)
    assert float(ce) == pytest.approx(math.log1p(math.exp(8 * 0.5 - 8 * 0.3)), rel=1e-6)
    kernel = torch.eye(2)  # class columns (1, 0) and (0, 1)
    arc = arcface_loss(torch.tensor([[2.0, 0.0]]), kernel, torch.tensor([0]), 64.0, 0.4)
    assert float(arc) == pytest.approx(math.log1p(math.exp(-64 * math.cos(0.4))), abs=1e-6)
    # orthogonal to its class: cos = 0 > cos(pi - m), so the margin gives cos(pi/2 + m) = -sin(m)
    arc = arcface_loss(torch.tensor([[0.0, 1.0]]), kernel, torch.tensor([0]), 64.0, 0.4)
    assert float(arc) == pytest.approx(64 * (1 + math.sin(0.4)), rel=1e-6)
    ignored = arcface_loss(torch.ones(2, 2), kernel, torch.tensor([-100, -100]), 64.0, 0.4)
    assert float(ignored) == 0.0
    embed = torch.tensor([[1.0, 0.0], [0.0, 2.0], [3.0, 0.0]])
    id_feat = torch.tensor([[2.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    eic = identity_contrast(embed, id_feat, torch.tensor([0, 1, 1]))  # fakes: cos 0; real: cos 1
    assert float(eic) == pytest.approx(-1.0)
    only_reals = identity_contrast(embed[:1], id_feat[:1], torch.tensor([0]))
    assert float(only_reals) == pytest.approx(-1.0)


def test_iid_variants_train_or_fix_the_explicit_extractor() -> None:
    dfb = build_detector("iid", pretrained=False, input_size=64, **SMALL["iid"]).train()
    paper = build_detector("iid", pretrained=False, input_size=64, variant="paper", **SMALL["iid"])
    paper.train()
    assert dfb.explicit.training and all(p.requires_grad for p in dfb.explicit.fc.parameters())
    assert not paper.explicit.training and not any(
        p.requires_grad for p in paper.explicit.parameters()
    )
    batch = {
        "image": torch.randn(2, 3, 64, 64),
        "label": torch.tensor([0, 1]),
        "identity": torch.tensor([0, 1000]),
    }
    with pytest.raises(ValueError, match="num_identities"):
        dfb.loss(batch, dfb(batch))


# ----------------------------------------------------------------------------- SLADD


def test_sladd_action_log_probability_and_entropy() -> None:
    torch.manual_seed(0)
    region, kind, mag = torch.randn(3, 10), torch.randn(3, 4), torch.randn(3, 1)
    r, k, m, log_prob, entropy = sample_actions(region, kind, mag)
    lr, lk = F.log_softmax(region, 1), F.log_softmax(kind, 1)
    expected = (
        lr.gather(1, r[:, None])[:, 0] + lk.gather(1, k[:, None])[:, 0] + F.logsigmoid(mag)[:, 0]
    )
    torch.testing.assert_close(log_prob, expected)
    torch.testing.assert_close(m, torch.sigmoid(mag)[:, 0])
    ent = (
        -(lr.exp() * lr).sum(1)
        - (lk.exp() * lk).sum(1)
        - F.logsigmoid(mag)[:, 0] * torch.sigmoid(mag)[:, 0]
    )
    torch.testing.assert_close(entropy, ent)


def test_sladd_magnitude_loss_deepfakebench_broadcast_and_paper() -> None:
    mag, target, keep = (
        torch.tensor([[0.5], [0.0]]),
        torch.tensor([0.2, 0.9]),
        torch.tensor([1.0, 0.0]),
    )
    # DFB: rows i, columns j: (mag_i * keep_j - target_j * keep_j)^2 = (.5-.2)^2, 0, (0-.2)^2, 0
    assert float(magnitude_loss(mag, target, keep, True)) == pytest.approx((0.09 + 0.04) / 4)
    assert float(magnitude_loss(mag, target, keep, False)) == pytest.approx(0.09 / 2)


@pytest.fixture(scope="module")
def faces() -> list[tuple[np.ndarray, np.ndarray]]:
    from tests.test_blending import FACES, _face_crop

    return [_face_crop(FACES / "obama.jpg"), _face_crop(FACES / "biden.jpg")]


@pytest.mark.parametrize("kind", [0, 1, 2])
def test_sladd_pastes_the_chosen_region_of_the_fake(faces, kind: int) -> None:
    (real, real_lm), (fake, fake_lm) = faces
    region = region_mask(real.shape[:2], fake_lm, 4)  # the mouth
    assert region.sum() > 50 and region[: real.shape[0] // 2].sum() == 0  # below the eyes
    out, mask = synthesize(real, real_lm, fake, fake_lm, 4, kind, 1.0, np.random.default_rng(0))
    changed = (out != real).any(2)
    assert changed.sum() > 20
    near = np.zeros_like(mask)
    ys, xs = np.nonzero(mask)
    near[max(ys.min() - 3, 0) : ys.max() + 4, max(xs.min() - 3, 0) : xs.max() + 4] = 1
    assert not (changed & (near == 0)).any()  # nothing changes away from the pasted region


def test_sladd_total_is_the_detector_loss_and_the_synthesiser_gets_its_own_gradient() -> None:
    from tests.detector_batches import make_batch

    torch.manual_seed(0)
    model = build_detector("sladd", pretrained=False, input_size=64).train()
    groups = model.optimizer_groups(1e-3, (0.9, 0.999))
    assert groups[1]["lr"] == pytest.approx(2.5e-4) and groups[1]["betas"] == (0.225, 0.999)
    assert len(groups[0]["params"]) + len(groups[1]["params"]) == len(list(model.parameters()))
    batch = make_batch(model, 64)
    out = model(batch)
    assert out["logits"].shape[0] == 4 and out["syn_label"].shape == (4,)  # 2 pairs + their flips
    losses = model.loss(batch, out)
    overall = losses["ce"] + 0.1 * losses["map"] + 0.05 * losses["type"] + 0.1 * losses["mag"]
    torch.testing.assert_close(losses["total"], overall)
    losses["total"].backward()
    assert model.synthesizer.fc_type[1].weight.grad.abs().sum() > 0
    assert model.head.weight.grad.abs().sum() > 0


# ----------------------------------------------------------------------------- LSDA


def test_lsda_latent_augmentations_by_formula() -> None:
    torch.manual_seed(0)
    feats = torch.randn(2, 3, 4, 2, 2)  # [groups, methods, channels, h, w]
    maps = feats.transpose(0, 1).reshape(3, 8, 2, 2)
    mean = maps.mean(1)
    far = (maps - mean[:, None]).flatten(2).norm(dim=2).argmax(1)
    hard = maps[torch.arange(3), far]
    lam, noise = torch.full((2, 3, 4, 1, 1), 0.5), torch.randn(2, 3, 4, 2, 2)
    for choice, expected in (
        (0, feats + 0.5 * (hard[None, :, None] - feats)),
        (1, feats + 0.5 * (feats - mean[None, :, None])),
        (2, feats + 0.5 * noise),
        (3, feats + 0.5 * (feats[:, :, :1] - feats[:, :, 1:2])),
    ):
        draws = LatentDraws([[choice] * 3] * 2, lam, noise)
        torch.testing.assert_close(augment_domains(feats, draws), expected)
    mixed = mixup_domains(torch.stack([torch.zeros(2, 1), torch.ones(2, 1)])[None])
    assert mixed.shape == (1, 2, 2, 1) and float(mixed.min()) >= 0 and float(mixed.max()) <= 1


def test_lsda_draws_follow_deepfakebench_order() -> None:
    """Per group and method one random.choice of 4, then per channel random.random() (the noise
    transform: sigma, then the coefficient, and a torch.randn map)."""
    feats = torch.zeros(2, 3, 4, 2, 2)
    random.seed(5)
    torch.manual_seed(5)
    draws = draw_latent_augmentation(feats)
    random.seed(5)
    torch.manual_seed(5)
    for g in range(2):
        for k in range(3):
            assert draws.choice[g][k] == random.choice(range(4))
            for c in range(4):
                if draws.choice[g][k] == NOISE:
                    sigma = random.random()
                    assert float(draws.lam[g, k, c]) == pytest.approx(random.random())
                    torch.testing.assert_close(draws.noise[g, k, c], torch.randn(2, 2) * sigma)
                else:
                    assert float(draws.lam[g, k, c]) == pytest.approx(random.random())
                    assert float(draws.noise[g, k, c].abs().max()) == 0


def test_lsda_identity_constraint_and_group_layout() -> None:
    x, y = torch.tensor([[[1.0]], [[0.0]]])[None], torch.tensor([[[0.0]], [[1.0]]])[None]
    assert float(cosine_distance(x, y)) == pytest.approx(1.0)
    assert float(cosine_distance(x, 2 * x)) == pytest.approx(0.0, abs=1e-6)
    model = build_detector(
        "lsda", pretrained=False, input_size=32, **SMALL["lsda"], reenactment_methods=["B"]
    )
    assert model.sign == [-1.0, 1.0]  # A swaps identities, B is a reenactment
    with pytest.raises(ValueError, match="0..2 repeated"):
        model._groups(torch.tensor([0, 2, 1]))
    assert LSDA.configure_from_data({}, ["A", "B"])["methods"] == ["A", "B"]
    with pytest.raises(ConfigError, match="one teacher per training method"):
        LSDA.configure_from_data({"methods": ["A"]}, ["A", "B"])


# ----------------------------------------------------------------------------- data keys


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """FF++-like tiny data: 2 real videos per split, each with a fake of methods A and B."""
    root = tmp_path_factory.mktemp("xcep")
    path = make_index(root, "tiny", n_real=2, n_fake=4, frames=2, size=96, methods=("A", "B"))
    data = json.loads(path.read_text())
    for v in data["videos"]:
        if v["label"] == 1:  # fakes 2k (A) and 2k + 1 (B) of a split: identity of its real k
            v["identity"] = f"{v['split']}{int(v['id'][-7:-4]) // 2:03d}"
    path.write_text(json.dumps(data))
    return path


def _batch(tiny: Path, requires, n: int = 2, size: int = 64, **kw) -> dict:
    ds = FrameDataset(
        [read_index(tiny)],
        "train",
        frame_num=1,
        resolution=size,
        requires=frozenset(requires),
        train=True,
        **kw,
    )
    return collate([ds[i] for i in range(min(n, len(ds)))])


def test_identity_and_method_groups_keys(tiny: Path) -> None:
    batch = _batch(tiny, {"identity"}, n=99)
    ids = {
        (m, v): int(i)
        for m, v, i in zip(batch["method"], batch["video_id"], batch["identity"], strict=True)
    }
    assert ids[("real", "train000")] == ids[("A", "train000_001")] == ids[("B", "train001_002")]
    assert ids[("real", "train001")] != ids[("real", "train000")]
    groups = _batch(tiny, {"method_groups", "method_label"}, n=2)
    assert groups["method_label"].tolist() == [0, 1, 2, 0, 1, 2]
    assert groups["method"] == ["real", "A", "B"] * 2
    assert groups["label"].tolist() == [0, 1, 1] * 2
    plain = make_index(
        tiny.parent / "plain", "plain", n_real=2, n_fake=2, frames=1, size=32, methods=("A", "B")
    )
    with pytest.raises(ValueError, match="fake of every training method"):
        FrameDataset(
            [read_index(plain)],
            "train",
            frame_num=1,
            resolution=32,
            requires=frozenset({"method_groups"}),
            train=True,
        )


def test_i2g_blends_come_with_their_masks(tiny: Path) -> None:
    batch = _batch(tiny, {"blend:i2g", "mask"}, n=2, size=96)
    assert batch["label"].tolist() == [0, 1, 0, 1]
    assert float(batch["mask"][0::2].max()) == 0.0 and float(batch["mask"][1::2].max()) > 0.5
    inside = batch["mask"][1, 0] > 0.5
    assert (batch["image"][1].float() - batch["image"][0].float()).abs()[:, inside].mean() > 2


# ----------------------------------------------------------------------------- training


RECIPES = {  # detector -> (batch keys, resolution, samples of the pipeline batch)
    "pcl_xception": ({"blend:i2g", "mask"}, 64, 2),
    "sladd": ({"pairs", "random_pairs", "landmarks", "mask"}, 64, 2),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", list(RECIPES))
def test_loss_falls_on_a_pipeline_batch(tiny: Path, name: str) -> None:
    """Four Adam steps on one batch from the training data pipeline lower the loss: I2G blends and
    their masks, pairs with real landmarks for SLADD's synthesis. (The contract tests train all five
    on synthetic batches; LSDA also trains through the trainer below.)"""
    requires, size, n = RECIPES[name]
    torch.manual_seed(0)
    model = build_detector(name, pretrained=False, input_size=size, **SMALL.get(name, {})).train()
    assert requires <= set(model.requires)
    batch = to_device(
        _batch(tiny, model.requires, n=n, size=size), "cpu", model.cfg.mean, model.cfg.std
    )
    opt = torch.optim.Adam(model.optimizer_groups(1e-4, (0.9, 0.999)), lr=1e-4)
    totals = []
    for _ in range(4):
        torch.manual_seed(1)  # the same erasing / synthesis / augmentation draws each step
        losses = model.loss(batch, model(batch))
        opt.zero_grad()
        losses["total"].backward()
        opt.step()
        totals.append(float(losses["total"].detach()))
    assert all(math.isfinite(t) for t in totals)
    assert totals[-1] < totals[0], totals


def _train_cfg(tiny: Path, out: Path, detector: str, **sets):
    from fairforensics.training.config import load_train_config

    base = {
        "data.data_root": str(tiny.parent),
        "data.train_data": "[tiny]",
        "data.val_data": "[tiny]",
        "data.num_workers": 0,
        "train.epochs": 1,
        "train.batch_size": 2,
        "train.resolution": 64,
        "train.frame_num": 2,
        "train.test_frame_num": 1,
        "output_dir": str(out),
        **sets,
    }
    return load_train_config(detector, overrides=[f"{k}={v}" for k, v in base.items()])


def test_trainer_gives_the_sladd_synthesiser_its_own_optimiser_group(
    tiny: Path, tmp_path: Path
) -> None:
    from fairforensics.training.trainer import Trainer

    trainer = Trainer(_train_cfg(tiny, tmp_path, "sladd"))
    trainer._setup()
    main, synth = trainer.optimizer.param_groups
    assert main["lr"] == pytest.approx(2e-4) and main["betas"] == (0.9, 0.999)
    assert synth["lr"] == pytest.approx(5e-5) and synth["betas"] == pytest.approx((0.225, 0.999))
    assert synth["weight_decay"] == pytest.approx(5e-4)  # the recipe's, as DeepfakeBench's
    assert {id(p) for p in synth["params"]} == {
        id(p) for p in trainer.detector.synthesizer.parameters()
    }


@pytest.mark.slow
def test_lsda_trains_on_domain_groups_with_a_teacher_per_training_method(
    tiny: Path, tmp_path: Path
) -> None:
    from fairforensics.detectors import read_checkpoint
    from fairforensics.training.trainer import Trainer

    small = {f"model.{k}": v for k, v in SMALL["lsda"].items() if k != "methods"}
    run = Trainer(_train_cfg(tiny, tmp_path, "lsda", **small)).fit()
    last = read_checkpoint(run / "checkpoints" / "last.pt")
    assert last["meta"]["model"]["methods"] == ["A", "B"] and last["state"]["step"] == 2
    assert any(k.startswith("encoders_f.1.") for k in last["model"])
    assert not any(k.startswith("encoders_f.2.") for k in last["model"])


# ----------------------------------------------------------------------------- second models


def test_identity_networks_load_insightface_files_strictly(tmp_path: Path) -> None:
    """IID's explicit extractor and LSDA's real encoder read an insightface ``backbone.pth``
    (insightface's names, a DDP ``module.`` prefix allowed); a partial file is refused naming
    what is missing."""
    from fairforensics.detectors.backbones import PretrainedWeightsError
    from fairforensics.detectors.backbones.iresnet import IResNet, load_iresnet_file

    torch.manual_seed(0)
    source = IResNet(18, "embedding")
    state = {f"module.{k}": v for k, v in source.state_dict().items()}
    torch.save(state, tmp_path / "backbone.pth")
    iid = build_detector(
        "iid",
        pretrained=False,
        extractor_depth=18,
        explicit_extractor=str(tmp_path / "backbone.pth"),
    )
    torch.testing.assert_close(iid.explicit.layer2[0].conv1.weight, source.layer2[0].conv1.weight)
    encoder = IResNet(18, "map")
    load_iresnet_file(encoder, tmp_path / "backbone.pth")  # fc / features are not part of it
    torch.testing.assert_close(encoder.bn2.running_var, source.bn2.running_var)
    half = {k: v for k, v in state.items() if "layer4" not in k}
    torch.save(half, tmp_path / "half.pth")
    with pytest.raises(PretrainedWeightsError, match=r"missing .*layer4\.0\.bn1"):
        build_detector(
            "iid",
            pretrained=False,
            extractor_depth=18,
            explicit_extractor=str(tmp_path / "half.pth"),
        )
    with pytest.raises(PretrainedWeightsError, match=r"layer4\.0\.bn1"):
        load_iresnet_file(IResNet(18, "map"), tmp_path / "half.pth")


def test_sladd_draws_as_deepfakebench() -> None:
    """The pair switch is ``torch.randint(0, 2)`` and the actions are ``multinomial`` on the
    softmax in the logits' dtype, drawn in DeepfakeBench's order (region, then type)."""
    region, kind, mag = (torch.randn(64, n, dtype=torch.float64) for n in (10, 4, 1))
    model = SLADD.__new__(SLADD)
    model.cfg = SLADDConfig()
    torch.manual_seed(3)
    ours = model._switch(64, torch.device("cpu")), *sample_actions(region, kind, mag)[:2]
    torch.manual_seed(3)
    switch = torch.randint(0, 2, (64,)).bool()
    r = F.softmax(region, dim=-1).multinomial(num_samples=1)[:, 0]
    k = F.softmax(kind, dim=-1).multinomial(num_samples=1)[:, 0]
    for got, want in zip(ours, (switch, r, k), strict=True):
        assert torch.equal(got, want)
    assert sample_actions(region, kind, mag)[3].dtype == torch.float64
