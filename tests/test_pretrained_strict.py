"""``pretrained:`` backbone files load strictly: DeepfakeBench's Xception layout and timm's names
load every tensor; partial files are refused with the missing names unless allowed."""

from __future__ import annotations

import logging

import pytest
import timm
import torch

from fairforensics.detectors import build_detector
from fairforensics.detectors.backbones import PretrainedWeightsError


@pytest.fixture(scope="module")
def imagenet_xception() -> dict[str, torch.Tensor]:
    """A (random) timm legacy_xception state dict with its 1000-class ``fc``."""
    torch.manual_seed(0)
    model = timm.create_model("legacy_xception", pretrained=False)
    return {k: v + 0.01 if v.is_floating_point() else v for k, v in model.state_dict().items()}


def _dfb_layout(state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """DeepfakeBench's xception ImageNet file: pointwise convolutions as 2-D [out, in] tensors."""
    return {k: v[:, :, 0, 0] if k.endswith("pointwise.weight") else v for k, v in state.items()}


def _backbone_equal(model, state) -> None:
    got = model.backbone.state_dict()
    assert set(got) == set(state) - {"fc.weight", "fc.bias"}
    for k, v in got.items():
        assert torch.equal(v, state[k].reshape(v.shape)), k


@pytest.mark.parametrize("layout", ["timm", "deepfakebench"])
def test_full_xception_file_loads_every_tensor(tmp_path, imagenet_xception, layout) -> None:
    state = imagenet_xception if layout == "timm" else _dfb_layout(imagenet_xception)
    assert sum(v.dim() == 2 for k, v in state.items() if "pointwise" in k) == (
        34 if layout == "deepfakebench" else 0
    )
    path = tmp_path / "xception.pth"
    torch.save({f"module.{k}": v for k, v in state.items()}, path)
    _backbone_equal(build_detector("xception", pretrained=str(path)), imagenet_xception)


def test_half_a_backbone_is_refused_with_missing_names(tmp_path, imagenet_xception) -> None:
    keys = list(imagenet_xception)
    half = {k: imagenet_xception[k] for k in keys[: len(keys) // 2]}
    path = tmp_path / "half.pth"
    torch.save(half, path)
    with pytest.raises(PretrainedWeightsError, match=r"half.pth does not cover the backbone") as e:
        build_detector("xception", pretrained=str(path))
    missing = sorted(set(keys) - set(half) - {"fc.weight", "fc.bias"})
    assert f"missing {len(missing)}: {', '.join(missing[:8])}" in str(e.value)
    assert "pretrained_strict: false" in str(e.value)


def test_unexpected_and_shape_mismatch_are_errors(tmp_path, imagenet_xception) -> None:
    extra = {**imagenet_xception, "block13.weight": torch.zeros(3)}
    torch.save(extra, tmp_path / "extra.pth")
    with pytest.raises(PretrainedWeightsError, match=r"unexpected 1: block13\.weight"):
        build_detector("xception", pretrained=str(tmp_path / "extra.pth"))
    bad = {**imagenet_xception, "conv1.weight": torch.zeros(32, 3, 5, 5)}
    torch.save(bad, tmp_path / "bad.pth")
    with pytest.raises(PretrainedWeightsError, match=r"shape 1: conv1\.weight \(32, 3, 5, 5\)"):
        build_detector("xception", pretrained=str(tmp_path / "bad.pth"))


def test_partial_file_allowed_explicitly(tmp_path, imagenet_xception, caplog) -> None:
    half = {k: v for i, (k, v) in enumerate(imagenet_xception.items()) if i < 40}
    torch.save(half, tmp_path / "half.pth")
    with caplog.at_level(logging.INFO, logger="fairforensics.detectors.backbones"):
        model = build_detector(
            "xception", pretrained=str(tmp_path / "half.pth"), pretrained_strict=False
        )
    assert torch.equal(model.backbone.conv1.weight, imagenet_xception["conv1.weight"])
    assert "pretrained_strict: false" in caplog.text and "missing" in caplog.text


def test_empty_pretrained_file_is_one_line_error(tmp_path) -> None:
    path = tmp_path / "empty.pth"
    path.write_bytes(b"")
    with pytest.raises(PretrainedWeightsError, match="empty.pth: weights file is empty") as e:
        build_detector("xception", pretrained=str(path))
    assert "\n" not in str(e.value)
