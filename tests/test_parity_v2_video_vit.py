"""DeepfakeBench v2 parity of the transformer video detectors: timesformer, videomae, xclip, sta_clip.

Each is built at DeepfakeBench's size, given the fixture's DeepfakeBench-named weights through the
checkpoint import (``detectors.deepfakebench.load_deepfakebench_state_dict``: key map, strict fit)
and must give DeepfakeBench's eval-mode outputs on the fixture's clips: margin and prob within
1e-4, features by fingerprint. Full-size models on [4, T, 3, 224, 224] clips: slow on a CPU.
"""

from __future__ import annotations

import json

import pytest
import torch

from fairforensics.detectors import build_detector
from fairforensics.detectors.deepfakebench import check_fits, load_deepfakebench_state_dict
from tests.parity import assert_fingerprint_close, load_fixture_v2
from tests.testdata import shared

ATOL = 1e-4
NAMES = ["timesformer", "videomae", "xclip", "sta_clip"]


@pytest.mark.extended
@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_fixture_parity(name: str) -> None:
    manifest, state_dict, clips, _ = load_fixture_v2(name)
    dfb = manifest["deepfakebench"]
    # sta_clip: DeepfakeBench's adapter attention, which mixes the clips of the batch
    coupled = {"batch_coupled_attention": True} if name == "sta_clip" else {}
    model = build_detector(name, pretrained=False, **coupled)
    assert model.deepfakebench_name == dfb["model_name"]
    assert model.cfg.clip_size == dfb["clip_size"] == clips.shape[1]
    assert list(model.cfg.mean) == pytest.approx(dfb["mean"])
    assert list(model.cfg.std) == pytest.approx(dfb["std"])
    load_deepfakebench_state_dict(model, state_dict, f"{name} fixture").eval()
    del state_dict
    with torch.no_grad():
        out = model({"image": clips, "label": torch.tensor(manifest["inputs"]["label"])})
    exp = manifest["expected"]
    ref = torch.tensor(exp["cls"], dtype=torch.float64)
    margin = out["logits"].double() @ torch.tensor([-1.0, 1.0], dtype=torch.float64)
    torch.testing.assert_close(margin, ref[:, 1] - ref[:, 0], atol=ATOL, rtol=0)
    torch.testing.assert_close(
        out["prob"].double(), torch.tensor(exp["prob"]).double(), atol=ATOL, rtol=0
    )
    if name == "sta_clip":  # DeepfakeBench's feat: per-frame CLS as [B, D, T, 1, 1]
        assert_fingerprint_close(out["frame_feat"].transpose(1, 2)[..., None, None], exp["feat"])
    else:
        assert_fingerprint_close(out["feat"], exp["feat"])


def _manifest_state(name: str) -> dict[str, torch.Tensor]:
    """The fixture's DeepfakeBench keys as empty tensors of their shapes (meta device)."""
    manifest = json.loads(shared("parity", "deepfakebench-v2", f"{name}.json").read_text())
    return {
        key: torch.empty(shape, dtype=getattr(torch, dtype), device="meta")
        for key, shape, dtype in manifest["state_dict"]
    }


@pytest.mark.extended
@pytest.mark.parametrize("name", NAMES)
def test_fixture_keys_map_onto_the_model(name: str) -> None:
    """Every DeepfakeBench key maps onto the model with its shape, none missing (quick: shapes only,
    on the meta device); a key the map does not know is an error naming it."""
    state = _manifest_state(name)
    with torch.device("meta"):
        model = build_detector(name, pretrained=False)
    check_fits(model, model.map_deepfakebench_state_dict(dict(state)), name)
    state["extra_branch.weight"] = torch.empty(1, device="meta")
    with pytest.raises(KeyError, match="extra_branch.weight"):
        model.map_deepfakebench_state_dict(state)
