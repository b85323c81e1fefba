"""``pretrained: timm`` without a network (issue 31, item 5): weights already in the cache load
with no network; otherwise ``HF_HUB_OFFLINE`` or an unreachable hub is one clear error at once,
never timm's download with its minute of retries."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
import timm
import torch
from huggingface_hub import constants
from safetensors.torch import save_file

from fairforensics.detectors import build_detector
from fairforensics.detectors.backbones import PretrainedWeightsError, create_timm_backbone
from fairforensics.detectors.backbones.hub import hub_source

HOW = "'pretrained: /path/to/weights.pth' to load a local state dict"


@pytest.fixture
def empty_caches(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Empty Hugging Face and torch.hub caches; timm may build models but never download."""
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hf"))
    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "torch"))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    for var in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(var, raising=False)
    create = timm.create_model

    def no_download(name, pretrained=False, **kwargs):
        overlay = kwargs.get("pretrained_cfg_overlay") or {}
        assert not pretrained or overlay.get("file"), f"timm asked to download {name}"
        return create(name, pretrained=pretrained, **kwargs)

    monkeypatch.setattr(timm, "create_model", no_download)
    return tmp_path


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.parametrize("name", ["resnet18", "legacy_xception"])  # Hugging Face hub, torch.hub URL
def test_hf_hub_offline_fails_at_once(empty_caches, monkeypatch, name) -> None:
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    with pytest.raises(PretrainedWeightsError, match="HF_HUB_OFFLINE is set") as info:
        create_timm_backbone(name, "timm", num_classes=0)
    assert HOW in str(info.value) and "not in the local cache" in str(info.value)


def test_unreachable_hub_fails_at_once(empty_caches, monkeypatch) -> None:
    port = _closed_port()
    monkeypatch.setattr(constants, "ENDPOINT", f"http://127.0.0.1:{port}")
    with pytest.raises(PretrainedWeightsError, match=f"cannot connect to 127.0.0.1:{port}") as info:
        create_timm_backbone("resnet18", "timm", num_classes=0)
    assert HOW in str(info.value)


def test_a_detector_config_asking_for_hub_weights_offline(empty_caches, monkeypatch) -> None:
    """What ``--set model.pretrained=timm`` reaches: the detector's build."""
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    with pytest.raises(PretrainedWeightsError, match="legacy_xception.*HF_HUB_OFFLINE"):
        build_detector("xception", pretrained="timm")


def test_cached_hub_weights_load_without_network(empty_caches, monkeypatch) -> None:
    """A copy in the Hugging Face cache (its own layout) loads, offline, as timm's weights."""
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    source = hub_source("test_resnet")
    repo = source.url.rsplit("/", 2)[-2:]  # timm/test_resnet.<tag>
    folder = Path(constants.HF_HUB_CACHE) / f"models--{repo[0]}--{repo[1]}"
    commit = "0" * 40
    (folder / "refs").mkdir(parents=True)
    (folder / "refs" / "main").write_text(commit)
    (folder / "snapshots" / commit).mkdir(parents=True)
    torch.manual_seed(0)
    reference = timm.create_model("test_resnet", pretrained=False)
    state = {k: v.contiguous() for k, v in reference.state_dict().items()}
    save_file(state, str(folder / "snapshots" / commit / "model.safetensors"))
    assert hub_source("test_resnet").cached is not None
    model = create_timm_backbone("test_resnet", "timm", num_classes=0)
    for key, value in model.state_dict().items():
        torch.testing.assert_close(value, state[key], msg=key)
