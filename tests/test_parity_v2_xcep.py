"""DeepfakeBench v2 parity (``../shared/parity/deepfakebench-v2``) of rfm, sladd, pcl_xception, iid
and lsda: DeepfakeBench's weights, imported through the checkpoint import
(:func:`detectors.deepfakebench.load_deepfakebench_state_dict`, each detector's key map), give
DeepfakeBench's eval outputs: logit margin and prob within 1e-4, and the features and extra outputs
the fixture fingerprints (hooks where DeepfakeBench returns a map that we pool)."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest
import torch

from fairforensics.detectors import build_detector
from fairforensics.detectors.deepfakebench import WeightsError, load_deepfakebench_state_dict
from tests.parity import assert_fingerprint_close, load_fixture_v2

pytestmark = pytest.mark.extended
ATOL = 1e-4
#: name -> (the module whose output DeepfakeBench returns as ``feat``, our output per extra)
CASES = {
    "rfm": ("backbone.act4", {}),  # post-ReLU (DFB's in-place ReLU)
    "sladd": ("backbone.bn4", {}),  # pre-ReLU (Xception_SLADD)
    "pcl_xception": ("backbone.bn4", {}),
    "iid": ("adjust", {"id_feat": "id_feat", "embed": "embed"}),
    "lsda": (None, {"student_feat": "student_encoder.conv"}),  # DFB's feat is its prob
}


@cache
def _fixture(name: str):
    manifest, state, x, _ = load_fixture_v2(name)
    for key, info in manifest["fixed"].items():  # constants are not generated: DFB's values
        assert info["first8"] == [1.0] * 8 and info["sum"] == info["shape"][0], key
        state[key] = torch.ones(info["shape"])
    return manifest, state, x


def _run(name: str):
    manifest, state, x = _fixture(name)
    model = build_detector(name, pretrained=False)
    load_deepfakebench_state_dict(model, state, source=name)
    model.eval()
    hooked: dict[str, torch.Tensor] = {}
    feat_module, extras = CASES[name]
    modules = dict(model.named_modules())
    wanted = {"feat": feat_module} | {k: v for k, v in extras.items() if "." in v}
    for key, module in wanted.items():
        if module is not None:
            modules[module].register_forward_hook(lambda m, i, o, k=key: hooked.__setitem__(k, o))
    with torch.no_grad():
        out = model({"image": x, "label": torch.tensor(manifest["inputs"]["label"])})
    return manifest, model, out, hooked


@pytest.mark.parametrize(
    "name", [pytest.param(n, marks=pytest.mark.slow) if n == "lsda" else n for n in CASES]
)
def test_fixture_parity(name: str) -> None:
    manifest, model, out, hooked = _run(name)
    exp = manifest["expected"]
    ref = torch.tensor(exp["cls"], dtype=torch.float64)
    logits = out["logits"].double()
    assert torch.allclose(logits[:, 1] - logits[:, 0], ref[:, 1] - ref[:, 0], atol=ATOL, rtol=0)
    assert torch.allclose(
        out["prob"].double(), torch.tensor(exp["prob"]).double(), atol=ATOL, rtol=0
    )
    if "feat" in hooked:
        assert_fingerprint_close(hooked["feat"], exp["feat"])
    for key, ours in CASES[name][1].items():
        assert_fingerprint_close(hooked[key] if "." in ours else out[ours], exp[key])


def test_whole_checkpoint_file_with_ddp_prefix_loads_through_pretrained(tmp_path: Path) -> None:
    """A DeepfakeBench ``torch.save(model.state_dict())`` file (``module.`` keys) is found to be
    DeepfakeBench's by its keys and imported by ``pretrained: FILE``."""
    manifest, state, x = _fixture("pcl_xception")
    path = tmp_path / "pcl_best.pth"
    torch.save({f"module.{k}": v for k, v in state.items()}, path)
    model = build_detector("pcl_xception", pretrained=str(path)).eval()
    with torch.no_grad():
        prob = model({"image": x, "label": torch.zeros(4, dtype=torch.long)})["prob"]
    assert torch.allclose(
        prob.double(), torch.tensor(manifest["expected"]["prob"]).double(), atol=ATOL
    )


@pytest.mark.parametrize("name", ["rfm", "sladd", "pcl_xception", "iid"])
def test_key_map_names_what_does_not_fit(name: str) -> None:
    _, state, _ = _fixture(name)
    model = build_detector(name, pretrained=False)
    with pytest.raises(KeyError, match="extra_branch.weight"):
        model.map_deepfakebench_state_dict({**state, "extra_branch.weight": torch.zeros(1)})
    key = next(k for k in state if k.endswith("last_linear.weight"))
    with pytest.raises(WeightsError, match=r"missing 1: head\.weight"):
        load_deepfakebench_state_dict(model, {k: v for k, v in state.items() if k != key}, name)
