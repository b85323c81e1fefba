"""Loading DeepfakeBench checkpoints and our own through every weights path, strictly."""

from __future__ import annotations

import pytest
import torch

from fairforensics.detectors import build_detector
from fairforensics.detectors.backbones import PretrainedWeightsError
from fairforensics.detectors.deepfakebench import (
    WeightsError,
    load_deepfakebench_state_dict,
    load_weights,
    read_weights_file,
)
from fairforensics.detectors.weights import CheckpointError, load_detector_file, save_checkpoint


def _dfb_meso4_state(seed: int = 0) -> dict[str, torch.Tensor]:
    """A DeepfakeBench-named Meso4 state dict (DFB keys = ours under ``backbone.``)."""
    g = torch.Generator().manual_seed(seed)
    own = build_detector("meso4", pretrained=False).state_dict()
    return {
        k: (torch.randn(v.shape, generator=g) if v.is_floating_point() else v)
        for k, v in own.items()
    }


def _same(model: torch.nn.Module, state: dict[str, torch.Tensor]) -> bool:
    got = model.state_dict()
    return all(torch.equal(got[k], v) for k, v in state.items())


def test_module_prefix_and_dfb_names_load(tmp_path) -> None:
    state = _dfb_meso4_state()
    path = tmp_path / "meso4_best.pth"
    torch.save({f"module.{k}": v for k, v in state.items()}, path)
    model = load_detector_file("meso4", path)
    assert _same(model, state) and not model.training


def test_our_checkpoint_still_loads(tmp_path) -> None:
    model = build_detector("meso4", pretrained=False)
    path = tmp_path / "best.pt"
    save_checkpoint(path, {"model": model.state_dict(), "meta": {"detector": "meso4"}})
    assert _same(load_detector_file("meso4", path), model.state_dict())


def test_unmapped_missing_and_shape_errors_list_keys() -> None:
    model = build_detector("meso4", pretrained=False)
    state = _dfb_meso4_state()
    with pytest.raises(
        WeightsError,
        match=r"1 DeepfakeBench keys have no counterpart in this model: \['head\.extra'\]",
    ):
        load_deepfakebench_state_dict(model, {**state, "head.extra": torch.zeros(1)})
    short = {k: v for k, v in state.items() if not k.startswith("backbone.fc2")}
    with pytest.raises(
        WeightsError, match=r"missing 2: backbone\.fc2\.bias, backbone\.fc2\.weight"
    ):
        load_deepfakebench_state_dict(model, short)
    bad = {**state, "backbone.fc2.weight": torch.zeros(3, 16)}
    with pytest.raises(WeightsError, match=r"shape 1: backbone\.fc2\.weight \(3, 16\)"):
        load_weights(model, bad)


def test_truncated_empty_and_foreign_files(tmp_path) -> None:
    empty = tmp_path / "empty.pth"
    empty.write_bytes(b"")
    with pytest.raises(CheckpointError, match="empty.pth: weights file is empty"):
        load_detector_file("meso4", empty)
    good = tmp_path / "good.pth"
    torch.save(_dfb_meso4_state(), good)
    cut = tmp_path / "cut.pth"
    cut.write_bytes(good.read_bytes()[:1000])
    with pytest.raises(WeightsError, match="cut.pth: cannot read weights") as info:
        read_weights_file(cut)
    assert "\n" not in str(info.value)
    other = tmp_path / "xception.pt"
    save_checkpoint(other, {"model": {}, "meta": {"detector": "xception"}})
    with pytest.raises(CheckpointError, match="detector 'xception', but 'meso4' was asked for"):
        load_detector_file("meso4", other)


def test_pretrained_whole_detector_file(tmp_path) -> None:
    state = _dfb_meso4_state(1)
    path = tmp_path / "dfb_meso4.pth"
    torch.save(state, path)
    model = build_detector("meso4", pretrained=str(path))
    assert _same(model, state) and model.cfg.pretrained == str(path)
    paper = build_detector("meso4", variant="paper", pretrained=False)
    mine = tmp_path / "paper.pt"
    save_checkpoint(mine, {"model": paper.state_dict(), "meta": {"detector": "meso4"}})
    again = build_detector("meso4", variant="paper", pretrained=str(mine))
    assert _same(again, paper.state_dict())


def test_a_detector_file_the_key_map_refuses_is_an_error_naming_the_keys(tmp_path) -> None:
    """``pretrained:`` a DeepfakeBench file whose key map fails in part (here one key it does not
    know) is an error naming that key, not a file handed on to the backbone loader (which, with
    ``pretrained_strict: false``, loaded what fitted and went on); one of ours whose keys differ
    is an error listing them; a backbone's own file (no key the map knows) still goes to the
    backbone loader."""
    g = torch.Generator().manual_seed(0)
    own = build_detector("xception", pretrained=False).state_dict()
    dfb = {
        ("backbone.last_linear." + k[5:] if k.startswith("head.") else k): v for k, v in own.items()
    }
    path = tmp_path / "dfb_xception.pth"
    torch.save({**dfb, "head.extra": torch.randn(3, generator=g)}, path)
    for strict in (True, False):
        with pytest.raises(
            WeightsError,
            match=r"dfb_xception\.pth: not a DeepfakeBench 'xception' checkpoint: "
            r"1 DeepfakeBench keys have no counterpart in this model: \['head\.extra'\]",
        ):
            build_detector("xception", pretrained=str(path), pretrained_strict=strict)
    ours = tmp_path / "ours.pt"
    del own["head.bias"]
    save_checkpoint(ours, {"model": own, "meta": {"detector": "xception"}})
    with pytest.raises(WeightsError, match=r"ours\.pt: weights do not fit .*missing 1: head\.bias"):
        build_detector("xception", pretrained=str(ours))
    backbone = tmp_path / "imagenet.pth"
    torch.save({"conv1.weight": torch.zeros(32, 3, 3, 3)}, backbone)
    with pytest.raises(PretrainedWeightsError, match="imagenet.pth"):
        build_detector("xception", pretrained=str(backbone))


def test_remap_mapping_takes_the_longest_prefix_and_drops_by_name() -> None:
    from fairforensics.detectors.dfb_keys import remap

    t = torch.zeros(1)
    sd = {"backbone.last_linear.weight": t, "backbone.conv1.weight": t, "backbone.x.k": t}
    rules = {"backbone.": "body.", "backbone.last_linear.": "head."}
    assert list(remap(sd, rules, drop=["backbone.x."])) == ["head.weight", "body.conv1.weight"]
    with pytest.raises(KeyError, match=r"1 DeepfakeBench keys .*\['other'\]"):
        remap({"other": t}, rules)
