"""DeepfakeBench v2 parity of the CLIP-family detectors (clip, effort, uia_vit) on the fixtures of
``../shared/parity/deepfakebench-v2/`` (DeepfakeBench commit 8a4a7bf).

Each default model is built with ``pretrained: false`` and given the fixture's DeepfakeBench-named
weights (with DDP's ``module.`` prefix) through the checkpoint import (``load_weights``: key map,
strict); its eval-mode outputs on the fixed inputs must match DeepfakeBench's to 1e-4 (margin,
prob), its features and extra outputs by fingerprint.
"""

from __future__ import annotations

import pytest
import torch

from fairforensics.detectors import build_detector
from fairforensics.detectors.deepfakebench import load_weights
from tests.parity import assert_fingerprint_close, load_fixture_v2

ATOL = 1e-4
LABEL = torch.tensor([0, 1, 0, 1])  # the fixtures' labels (UIA-ViT's attention maps use them)


def _run(name: str) -> tuple[dict, dict[str, torch.Tensor]]:
    """DeepfakeBench's expected outputs and ours; also checks that the key map refuses a key that
    is neither mapped nor known to be unused."""
    manifest, state, x, _ = load_fixture_v2(name)
    model = build_detector(name, pretrained=False)
    assert model.deepfakebench_name == manifest["deepfakebench"]["model_name"]
    assert (list(model.cfg.mean), list(model.cfg.std)) == (
        manifest["inputs"]["mean"],
        manifest["inputs"]["std"],
    )
    with pytest.raises(KeyError, match="extra_branch.weight"):
        model.map_deepfakebench_state_dict({**state, "extra_branch.weight": torch.zeros(1)})
    load_weights(model, {f"module.{k}": v for k, v in state.items()}, f"{name} fixture")
    with torch.no_grad():
        out = model.eval()({"image": x, "label": LABEL})
    exp = manifest["expected"]
    ref = torch.tensor(exp["cls"], dtype=torch.float64)
    logits = out["logits"].double()
    margin = logits[:, 1] - logits[:, 0]
    assert torch.allclose(margin, ref[:, 1] - ref[:, 0], atol=ATOL, rtol=0)
    assert torch.allclose(out["prob"].double(), torch.tensor(exp["prob"]).double(), atol=ATOL)
    return exp, out


@pytest.mark.extended
def test_clip_parity() -> None:
    exp, out = _run("clip")
    assert_fingerprint_close(out["feat"], exp["feat"])  # pooler_output


@pytest.mark.extended
@pytest.mark.slow
def test_effort_parity() -> None:
    exp, out = _run("effort")
    assert_fingerprint_close(out["feat"], exp["feat"])


@pytest.mark.extended
def test_uia_vit_parity() -> None:
    exp, out = _run("uia_vit")
    assert_fingerprint_close(
        out["patch_feat"], exp["feat"]
    )  # DeepfakeBench's feat: norm_middle patch tokens
    assert_fingerprint_close(out["attn_map"][LABEL == 0], exp["attention_map_real"])
    assert_fingerprint_close(out["attn_map"][LABEL == 1], exp["attention_map_fake"])
