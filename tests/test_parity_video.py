"""DeepfakeBench v2 parity of the CNN video detectors and TALL (``../shared/parity/deepfakebench-v2``):
DeepfakeBench's weights, imported through :func:`detectors.deepfakebench.load_deepfakebench_state_dict`,
give DeepfakeBench's eval-mode outputs on the fixture's four clips (margin and prob to 1e-4, extra
outputs by fingerprint), and TALL's Swin constants equal DeepfakeBench's bit for bit."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest
import torch

from fairforensics.detectors import build_detector
from fairforensics.detectors.deepfakebench import load_deepfakebench_state_dict
from tests.parity import assert_fingerprint_close, load_fixture_v2

ATOL = 1e-4
pytestmark = [pytest.mark.extended, pytest.mark.slow]


def _run(
    name: str, hook: str = "backbone"
) -> tuple[dict, torch.nn.Module, dict, dict[str, torch.Tensor]]:
    """(manifest, model, outputs, the output of submodule ``hook``) of ``name`` on its fixture."""
    manifest, state, x, _ = load_fixture_v2(name)
    assert list(x.shape) == manifest["inputs"]["shape"]
    model = build_detector(name, pretrained=False)
    assert model.cfg.clip_size == manifest["deepfakebench"]["clip_size"]
    load_deepfakebench_state_dict(model, state, source=name).eval()
    hooked: dict[str, torch.Tensor] = {}
    model.get_submodule(hook).register_forward_hook(lambda m, i, o: hooked.__setitem__(hook, o))
    with torch.no_grad():
        out = model({"image": x, "label": torch.tensor(manifest["inputs"]["label"])})
    return manifest, model, out, hooked


def _check_close(got: torch.Tensor, expected: list) -> None:
    ref = torch.tensor(expected, dtype=torch.float64).reshape(got.shape)
    assert torch.allclose(got.double(), ref, atol=ATOL, rtol=0), (got, ref)


@pytest.mark.parametrize("name", ["i3d", "altfreezing", "ftcn"])
def test_single_logit_detectors_match(name: str) -> None:
    """DeepfakeBench returns sigmoid(z) as cls; ours is logits [0, z] with the same prob."""
    manifest, model, out, hooked = _run(name)
    exp = manifest["expected"]
    assert torch.equal(out["logits"][:, 0], torch.zeros(4))
    _check_close(out["logits"][:, 1:], exp["logit"]["full"])
    _check_close(out["prob"], exp["prob"])
    _check_close(torch.sigmoid(out["logits"][:, 1:].double()), exp["cls"])
    if name == "ftcn":  # DFB's feat: the time tokens, pooled over space
        assert_fingerprint_close(hooked["backbone"].mean(dim=(3, 4), keepdim=True), exp["feat"])
    else:
        assert_fingerprint_close(hooked["backbone"], exp["s5_feat"])
    assert sum(p.numel() for p in model.parameters()) == manifest["counts"]["params"]


def test_stil_matches() -> None:
    manifest, model, out, hooked = _run("stil", hook="base")
    exp = manifest["expected"]
    _check_close(out["logits"], exp["cls"])
    _check_close(out["prob"], exp["prob"])
    _check_close(out["frame_logits"], exp["frame_logits"]["full"])
    frame_feat = hooked["base"].reshape(4, 8, -1)
    assert_fingerprint_close(frame_feat, exp["frame_feat"])
    assert torch.allclose(out["feat"], frame_feat.mean(dim=1))
    assert sum(p.numel() for p in model.parameters()) == manifest["counts"]["params"]


def test_tall_matches_and_its_constants_are_deepfakebench_s() -> None:
    manifest, model, out, _ = _run("tall")
    exp = manifest["expected"]
    _check_close(out["logits"][:, 1] - out["logits"][:, 0], [a[1] - a[0] for a in exp["cls"]])
    _check_close(out["prob"], exp["prob"])
    assert_fingerprint_close(out["feat"], exp["pooled_feat"])
    assert sum(p.numel() for p in model.parameters()) == manifest["counts"]["params"]
    # DeepfakeBench's relative_position_index (int64) and shifted-window masks are timm's buffers
    ours = dict(model.backbone.named_buffers())
    for key, ref in manifest["fixed"].items():
        stage, block = int(key.split(".")[2]), int(key.split(".")[4])
        if key.endswith("attn_mask"):
            mine = ours[f"layers.{stage}.blocks.{block}.attn_mask"]
        else:
            mine = ours[f"layers.{stage}.blocks.{block}.attn.relative_position_index"]
        dtype = np.dtype(ref["dtype"]).newbyteorder("<")
        raw = mine.to(getattr(torch, ref["dtype"])).contiguous().numpy().astype(dtype)
        assert list(mine.shape) == ref["shape"], key
        assert hashlib.sha256(raw.tobytes()).hexdigest() == ref["sha256"], key
