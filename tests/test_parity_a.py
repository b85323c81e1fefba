"""DeepfakeBench parity (``../shared/parity/deepfakebench``): DFB's weights, imported through
:func:`detectors.deepfakebench.load_deepfakebench_state_dict`, give DFB's outputs."""

from __future__ import annotations

import pytest
import torch

from fairforensics.detectors import build_detector
from fairforensics.detectors.deepfakebench import load_deepfakebench_state_dict
from tests.parity import assert_fingerprint_close, load_fixture

ATOL = 1e-4
pytestmark = pytest.mark.extended


def _run(name: str, fixture: str, **cfg):
    manifest, state, x = load_fixture(fixture)
    model = build_detector(name, {"pretrained": False, **cfg})
    load_deepfakebench_state_dict(model, state, source=fixture)
    model.eval()
    with torch.no_grad():
        out = model({"image": x, "label": torch.tensor(manifest["inputs"]["label"])})
    return manifest, model, out


def _check(manifest, out, margin_of=None) -> None:
    exp = manifest["expected"]
    ref = torch.tensor(exp["cls"], dtype=torch.float64)
    logits = out["logits"].double() if margin_of is None else margin_of.double()
    margin = logits[:, 1] - logits[:, 0]
    assert torch.allclose(margin, ref[:, 1] - ref[:, 0], atol=ATOL, rtol=0)
    prob = torch.tensor(exp["prob"], dtype=torch.float64)
    assert torch.allclose(out["prob"].double(), prob, atol=ATOL, rtol=0)


def _check_feat(manifest, feat: torch.Tensor) -> None:
    assert_fingerprint_close(feat, manifest["expected"]["feat"])


@pytest.mark.parametrize(
    ("name", "fixture"), [("xception", "xception"), ("cnn_aug", "resnet34"), ("spsl", "spsl")]
)
def test_pooled_classifiers_match(name: str, fixture: str) -> None:
    manifest, _, out = _run(name, fixture)
    _check(manifest, out)
    # DFB's feat is the map before pooling; ours is pooled: compare the pooled sums.
    side = manifest["expected"]["feat"]["shape"][2] * manifest["expected"]["feat"]["shape"][3]
    sums = out["feat"].double().sum(1) * side
    assert sums.tolist() == pytest.approx(manifest["expected"]["feat"]["sum"], rel=1e-4)


@pytest.mark.parametrize(
    ("name", "fixture"), [("meso4", "meso4"), ("meso_inception4", "meso4Inception")]
)
def test_mesonets_match(name: str, fixture: str) -> None:
    manifest, model, out = _run(name, fixture)
    _check(manifest, out)
    _check_feat(manifest, out["feat"])
    assert sum(p.numel() for p in model.parameters()) == manifest["counts"]["params"]


def test_capsule_matches() -> None:
    manifest, _, out = _run("capsule", "capsule_net")
    _check(manifest, out)
    classes = torch.tensor(manifest["expected"]["classes"], dtype=torch.float64)
    assert torch.allclose(out["classes"].double(), classes, atol=ATOL, rtol=0)
    primary_capsules = out["feat"].reshape(-1, 8, 10)  # ours flattened, DeepfakeBench's [B, 8, 10]
    assert_fingerprint_close(primary_capsules, manifest["expected"]["feat"])


def test_efficientnet_b4_matches() -> None:
    manifest, _, out = _run("efficientnet_b4", "efficientnetb4")
    _check(manifest, out)
    side = 8 * 8
    sums = out["feat"].double().sum(1) * side
    assert sums.tolist() == pytest.approx(manifest["expected"]["feat"]["sum"], rel=1e-3)


def _same_bits(manifest, key: str, tensor: torch.Tensor) -> bool:
    """check.py's check_fixed: sha256 of the float32 little-endian bytes."""
    import hashlib

    data = tensor.detach().float().contiguous().cpu().numpy().astype("<f4").tobytes()
    return hashlib.sha256(data).hexdigest() == manifest["fixed"][key]["sha256"]


def test_f3net_matches() -> None:
    manifest, model, out = _run("f3net", "f3net")
    _check(manifest, out)
    fad = model.fad
    fixed = {"FAD_head._DCT_all": fad.dct, "FAD_head._DCT_all_T": fad.dct.t()}
    fixed |= {f"FAD_head.filters.{i}.base": f.base for i, f in enumerate(fad.filters)}
    for key, tensor in fixed.items():
        assert list(tensor.shape) == manifest["fixed"][key]["shape"]
        assert _same_bits(manifest, key, tensor), key
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    assert trainable == 21_075_786  # DFB: 20.81M Xception + 9 x 32 x 9 stem + 4 x 256^2 filters


def test_srm_matches() -> None:
    manifest, model, out = _run("srm", "srm")
    _check(manifest, out)
    fixed = {
        "srm_conv0.kernel": model.srm.kernel,
        "srm_sa.srm.kernel": model.srm.kernel,  # DFB's second filtering uses the same kernels
        "srm_conv1.kernel": model.srm_conv1.kernel,
        "srm_conv2.kernel": model.srm_conv2.kernel,
    }
    for key, tensor in fixed.items():
        assert list(tensor.shape) == manifest["fixed"][key]["shape"]
        assert _same_bits(manifest, key, tensor), key
    sums = out["feat"].double().sum(1) * 64
    assert sums.tolist() == pytest.approx(manifest["expected"]["feat"]["sum"], rel=1e-4)
