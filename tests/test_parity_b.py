"""DeepfakeBench parity (issue 16, part B): fwa, xray, ffd, core, recce, ucf.

Each default (``deepfakebench``) variant, loaded with a fixture's DeepfakeBench-named weights
through its key map, must compute DeepfakeBench's eval-mode outputs; and each DeepfakeBench
training loss is checked by hand on a tiny batch.
"""

from __future__ import annotations

import pytest
import torch
from torch.nn import functional as F

from fairforensics.detectors import build_detector
from tests.parity import assert_fingerprint_close, load_fixture

ATOL = 1e-4
#: our name -> (DeepfakeBench name, our output key for each extra DFB output)
CASES = {
    "fwa": ("fwa", {}),
    "core": ("core", {"core_feat": "feat"}),
    "ffd": ("ffd", {"mask": "map"}),
    "recce": ("recce", {}),
    "ucf": ("ucf", {}),
    "xray": ("facexray", {"mask_pred": "mask_pred"}),
}


def _dfb_model(name: str):
    dfb_name, _ = CASES[name]
    manifest, state_dict, x = load_fixture(dfb_name)
    model = build_detector(name, pretrained=False)
    assert model.deepfakebench_name == dfb_name
    model.load_state_dict(model.map_deepfakebench_state_dict(state_dict), strict=True)
    return manifest, model.eval(), x


@pytest.mark.extended
@pytest.mark.parametrize("name", list(CASES))
def test_fixture_parity(name: str) -> None:
    """Margin and prob within 1e-4 of DeepfakeBench; features and extra outputs by fingerprint."""
    manifest, model, x = _dfb_model(name)
    with torch.no_grad():
        out = model({"image": x, "label": torch.tensor([0, 1, 0, 1])})
    exp = manifest["expected"]
    ref = torch.tensor(exp["cls"], dtype=torch.float64)
    logits = out["logits"].double()
    margin = logits[:, 1] - logits[:, 0]
    assert torch.allclose(margin, ref[:, 1] - ref[:, 0], atol=ATOL, rtol=0)
    assert torch.allclose(out["prob"].double(), torch.tensor(exp["prob"]).double(), atol=ATOL)
    if list(out["feat"].shape) == exp["feat"]["shape"]:
        assert_fingerprint_close(out["feat"], exp["feat"])
    for dfb_key, our_key in CASES[name][1].items():
        assert_fingerprint_close(out[our_key], exp[dfb_key])


@pytest.mark.extended
@pytest.mark.parametrize("name", list(CASES))
def test_key_map_rejects_unknown_keys(name: str) -> None:
    """A key that is neither mapped nor known to be unused is an error naming it."""
    model = build_detector(name, pretrained=False)
    _, state_dict, _ = load_fixture(CASES[name][0])
    state_dict["extra_branch.weight"] = torch.zeros(1)
    with pytest.raises(KeyError, match="extra_branch.weight"):
        model.map_deepfakebench_state_dict(state_dict)


# ----------------------------------------------------------------------------- training losses


def _batch(n: int = 4, size: int = 64) -> dict:
    torch.manual_seed(0)
    return {
        "image": torch.rand(n, 3, size, size) * 2 - 1,
        "label": torch.tensor([1, 1, 0, 0][:n]),
        "method_label": torch.tensor([1, 2, 0, 0][:n]),
    }


def test_variants_differ_where_deepfakebench_does() -> None:
    """What each default variant asks of the data pipeline, and its architecture switches."""
    assert build_detector("fwa", pretrained=False).requires == {"blend:fwa", "blend_all"}
    assert build_detector("fwa", pretrained=False, variant="paper").requires == {"blend:fwa"}
    assert build_detector("core", pretrained=False).requires == frozenset()
    assert build_detector("core", pretrained=False, variant="paper").requires == {"views"}
    ffd = build_detector("ffd", pretrained=False)
    assert ffd.requires == frozenset() and ffd._before[-1] == "block7"
    ucf = build_detector("ucf", pretrained=False)
    paper = build_detector("ucf", pretrained=False, variant="paper")
    assert isinstance(ucf.encoder_f.xception.act4, torch.nn.Identity)
    assert isinstance(paper.encoder_f.xception.act4, torch.nn.ReLU)


def test_core_deepfakebench_consistency_compares_batch_halves() -> None:
    model = build_detector("core", pretrained=False, input_size=64).train()
    batch = _batch()
    out = model(batch)
    losses = model.loss(batch, out)
    f = F.normalize(out["feat"].detach(), dim=1)
    cos = (f[:2] * f[2:]).sum(1)
    ce = F.cross_entropy(out["logits"].detach(), batch["label"])
    torch.testing.assert_close(losses["consistency"].detach(), ((cos - 1) ** 2).mean())
    torch.testing.assert_close(losses["total"].detach(), ce + ((cos - 1) ** 2).mean())


@pytest.mark.parametrize("name", ["ffd", "recce"])
def test_ffd_and_recce_deepfakebench_train_with_cross_entropy_only(name: str) -> None:
    model = build_detector(name, pretrained=False, input_size=64).train()
    batch = _batch()
    out = model(batch)
    losses = model.loss(batch, out)
    assert set(losses) == {"total", "ce"}
    torch.testing.assert_close(losses["total"], F.cross_entropy(out["logits"], batch["label"]))
    paper = build_detector(name, pretrained=False, input_size=64, variant="paper").train()
    assert set(paper.loss(batch, paper(batch))) > {"total", "ce"}


def test_ucf_half_batch_contrastive_hand_computed() -> None:
    """With one pair the permutations are trivial: 2 * hinge(common) + 2 * hinge(specific)."""
    from fairforensics.detectors.ucf import half_batch_contrastive

    common = torch.tensor([[0.0, 0.0], [1.0, 0.0]])
    specific = torch.tensor([[0.0, 0.0], [0.0, 2.0]])
    got = half_batch_contrastive(common, specific, torch.tensor([1, 0]), margin=3.0)
    eps = 1e-6 * 2**0.5  # F.pairwise_distance adds eps to the difference
    expected = 2 * (3.0 + eps - 1.0) + 2 * (3.0 + eps - 2.0)
    assert got.item() == pytest.approx(expected, abs=1e-5)


@pytest.mark.slow
def test_ucf_deepfakebench_loss_falls_on_a_tiny_pair_batch() -> None:
    torch.manual_seed(0)
    model = build_detector("ucf", pretrained=False, input_size=64, num_methods=2).train()
    batch = dict(_batch(), pair_index=torch.tensor([2, 3, 0, 1]))
    opt = torch.optim.Adam(model.parameters(), lr=2e-4)
    first = last = None
    for _ in range(6):
        losses = model.loss(batch, model(batch))
        opt.zero_grad()
        losses["total"].backward()
        opt.step()
        first = losses["total"].item() if first is None else first
        last = losses["total"].item()
    assert set(losses) >= {"ce", "specific", "reconstruction", "contrastive"}
    assert last < first


def test_xray_deepfakebench_heads_and_mse_loss() -> None:
    model = build_detector(
        "xray", pretrained=False, input_size=64, backbone="hrnet_w18_small"
    ).train()
    assert [m.out_channels for m in model.post_process if hasattr(m, "out_channels")] == [
        256,
        128,
        1,
    ]
    assert [m.out_features for m in model.fc if hasattr(m, "out_features")] == [1024, 128, 2]
    batch = _batch()
    batch["xray"] = torch.rand(4, 1, 64, 64)
    out = model(batch)
    assert out["mask_pred"].shape == (4, 1, 64, 64) and out["feat"].shape == (4, 128 * 128)
    losses = model.loss(batch, out)
    mse = F.mse_loss(out["mask_pred"], batch["xray"])
    torch.testing.assert_close(losses["xray"], mse)
    torch.testing.assert_close(
        losses["total"], F.cross_entropy(out["logits"], batch["label"]) + 1000.0 * mse
    )
    with pytest.raises(ValueError, match="'xray' has shape"):
        model.loss(dict(batch, xray=batch["xray"][:, :, :32]), out)


def test_remap_renames_drops_and_names_unmapped_keys() -> None:
    from fairforensics.detectors.dfb_keys import remap, xception_rules

    t = torch.zeros(1)
    sd = {
        "backbone.conv1.weight": t,
        "backbone.last_linear.bias": t,
        "backbone.adjust_channel.0": t,
    }
    rules = xception_rules("backbone.", "net.", head="head.")
    assert remap(sd, rules, drop=["backbone.adjust_channel."]) == {
        "net.conv1.weight": t,
        "head.bias": t,
    }
    with pytest.raises(KeyError, match=r"1 DeepfakeBench keys .*'decoder.weight'"):
        remap({**sd, "decoder.weight": t}, rules, drop=["backbone.adjust_channel."])
