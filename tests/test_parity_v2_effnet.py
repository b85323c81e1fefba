"""DeepfakeBench v2 parity of the EfficientNet-B4 detectors (sbi, sia, multi_attention, lrl) on the
fixtures of ``../shared/parity/deepfakebench-v2/`` (DeepfakeBench commit 8a4a7bf).

Each default model is built with ``pretrained: false`` and given the fixture's DeepfakeBench-named
weights (with DDP's ``module.`` prefix) through the checkpoint import (``load_weights``: key map,
strict); its eval-mode outputs on the fixed inputs must match DeepfakeBench's to 1e-4 (margin,
prob; SBI's three centred logits), its features and extra outputs by fingerprint. The constants
DeepfakeBench keeps in its state dict (SIA's SAIA kernels, Multi-attention's border mask) are
compared bit for bit with the manifest.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
import torch

from fairforensics.detectors import build_detector
from fairforensics.detectors.deepfakebench import WeightsError, load_weights
from tests.parity import assert_fingerprint_close, load_fixture_v2

ATOL = 1e-4
LABEL = torch.tensor([0, 1, 0, 1])


def _check_scores(
    what: str, out: dict[str, torch.Tensor], exp: dict, logits_key: str = "logits"
) -> None:
    ref = torch.tensor(exp["cls"], dtype=torch.float64)
    cls = out[logits_key].double()
    gap = float(((cls[:, 1] - cls[:, 0]) - (ref[:, 1] - ref[:, 0])).abs().max())
    print(f"{what}: max abs margin difference {gap:.1e}")  # pytest -s shows it (docs/detectors.md)
    assert gap <= ATOL
    assert torch.allclose(out["prob"].double(), torch.tensor(exp["prob"]).double(), atol=ATOL)
    if ref.shape[1] > 2:  # SBI: every centred logit of its three classes
        centred = cls - cls.mean(dim=1, keepdim=True)
        assert torch.allclose(centred, ref - ref.mean(dim=1, keepdim=True), atol=ATOL, rtol=0)


def _run(name: str, tmp_path: Path) -> tuple[dict, dict[str, torch.Tensor], torch.nn.Module]:
    """(manifest, our eval outputs, the model) after the strict DeepfakeBench import of a
    checkpoint file (``pretrained: FILE``, as a user loads one); also checks that the key map
    refuses a key that is neither mapped nor known to be unused."""
    manifest, state, x, extra = load_fixture_v2(name)
    path = tmp_path / f"{name}.pth"
    torch.save({f"module.{k}": v for k, v in state.items()}, path)  # DDP-trained, as DFB saves
    coupled = {"batch_coupled_attention": True} if name == "sia" else {}  # DeepfakeBench's SAIA
    model = build_detector(name, pretrained=str(path), **coupled)
    assert model.deepfakebench_name == manifest["deepfakebench"]["model_name"]
    assert (list(model.cfg.mean), list(model.cfg.std)) == (
        manifest["inputs"]["mean"],
        manifest["inputs"]["std"],
    )
    with pytest.raises(KeyError, match="extra_branch.weight"):
        model.map_deepfakebench_state_dict({**state, "extra_branch.weight": torch.zeros(1)})
    with torch.no_grad():
        out = model.eval()({"image": x, "label": LABEL, **extra})
    return manifest, out, model


def _same_bits(tensor: torch.Tensor, ref: dict) -> bool:
    data = tensor.detach().to(torch.float32).contiguous().numpy().astype("<f4").tobytes()
    return list(tensor.shape) == ref["shape"] and hashlib.sha256(data).hexdigest() == ref["sha256"]


@pytest.mark.extended
def test_sbi_parity(tmp_path: Path) -> None:
    manifest, out, _ = _run("sbi", tmp_path)
    exp = manifest["expected"]
    _check_scores("sbi", out, exp, "class_logits")
    two_way = torch.softmax(out["logits"].double(), dim=1)[:, 1]  # our [B, 2] logits, same prob
    assert torch.allclose(two_way, torch.tensor(exp["prob"]).double(), atol=ATOL)
    assert_fingerprint_close(out["feature_map"], exp["feat"])


@pytest.mark.extended
def test_sia_parity_and_its_constant_kernels(tmp_path: Path) -> None:
    manifest, out, _ = _run("sia", tmp_path)
    _check_scores("sia", out, manifest["expected"])
    assert_fingerprint_close(out["feature_map"], manifest["expected"]["feat"])
    fixed = manifest["fixed"]
    for key, ref in fixed.items():  # DeepfakeBench's frozen kernels: ones and 9s
        const = 1.0 if key.endswith(".weight") else 9.0
        assert _same_bits(torch.full(ref["shape"], const), ref), key
    _, state, _, _ = load_fixture_v2("sia")
    model = build_detector("sia", pretrained=False)
    kernels = {
        k: torch.full(v["shape"], 1.0 if k.endswith(".weight") else 9.0) for k, v in fixed.items()
    }
    load_weights(model, {**state, **kernels}, "sia with its kernels")  # a real DFB file has them
    kernels["att2conv.weight2"] = kernels["att2conv.weight2"] * 2
    with pytest.raises(WeightsError, match="att2conv.weight2 is not DeepfakeBench's constant"):
        load_weights(model, {**state, **kernels}, "sia with other kernels")


@pytest.mark.extended
def test_multi_attention_parity_both_phases(tmp_path: Path) -> None:
    manifest, out, model = _run("multi_attention", tmp_path)
    exp = manifest["expected"]
    _check_scores("multi_attention", out, exp)  # DeepfakeBench's multi-attention path
    assert_fingerprint_close(out["feature_map"], exp["feat"])
    assert_fingerprint_close(out["attentions"], exp["attentions"])
    assert_fingerprint_close(out["feature_maps_d"], exp["feature_maps_d"])
    assert _same_bits(
        model.attention_generation.mask, manifest["fixed"]["attention_generation.mask"]
    )
    first = exp["backbone_phase"]
    _, state, x, _ = load_fixture_v2("multi_attention")
    fresh = build_detector("multi_attention", pretrained=False, phase="backbone")
    load_weights(fresh, state, "multi_attention fixture")
    with torch.no_grad():
        out = fresh.eval()({"image": x, "label": LABEL})
    _check_scores("multi_attention, first phase", out, first)  # a freshly loaded DFB model
    assert_fingerprint_close(out["feature_map"], first["feat"])


@pytest.mark.extended
def test_lrl_parity(tmp_path: Path) -> None:
    manifest, out, _ = _run("lrl", tmp_path)
    exp = manifest["expected"]
    _check_scores("lrl", out, exp)
    assert_fingerprint_close(out["feature_map"], exp["feat"])
    assert_fingerprint_close(out["mask_pred"], exp["mask_pred"])
    assert_fingerprint_close(out["sim"], exp["sim"])
