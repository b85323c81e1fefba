"""Backbone construction shared by detectors: timm models and pretrained-weight loading."""

from __future__ import annotations

import logging
from pathlib import Path

import torch
from torch import nn

log = logging.getLogger(__name__)


class PretrainedWeightsError(RuntimeError):
    """Pretrained weights were asked for but cannot be had."""


_HOW = (
    "set 'pretrained: false' in the detector config (random init) or "
    "'pretrained: /path/to/weights.pth' to load a local state dict"
)


def load_state_dict_file(module: nn.Module, path: str | Path, strict: bool = False) -> None:
    """Load a local state-dict file (``weights_only``), ignoring a classifier of another shape."""
    path = Path(path).expanduser()
    if not path.is_file():
        raise PretrainedWeightsError(f"pretrained weights file {path} does not exist; {_HOW}")
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # noqa: BLE001 - any unreadable file gets the same clear message
        raise PretrainedWeightsError(
            f"cannot read pretrained weights {path}: {exc}; {_HOW}"
        ) from None
    if isinstance(state, dict) and "state_dict" in state and isinstance(state["state_dict"], dict):
        state = state["state_dict"]
    own = module.state_dict()
    kept = {k: v for k, v in state.items() if k in own and own[k].shape == v.shape}
    dropped = sorted(set(state) - set(kept))
    missing = sorted(set(own) - set(kept))
    if strict and (dropped or missing):
        raise PretrainedWeightsError(
            f"{path}: keys do not match: unexpected {dropped[:5]}, missing {missing[:5]}"
        )
    if not kept:
        raise PretrainedWeightsError(f"{path}: no tensor in the file matches the model; {_HOW}")
    module.load_state_dict(kept, strict=False)
    log.info(
        "loaded %d tensors from %s (%d skipped, %d left at init)",
        len(kept),
        path,
        len(dropped),
        len(missing),
    )


def create_timm_backbone(name: str, pretrained: bool | str = False, **kwargs) -> nn.Module:
    """A timm model; ``pretrained`` is ``False``, ``"timm"``/``True`` (hub) or a local file path.

    Hub weights need network access; when they cannot be fetched the error says how to pass a
    local file or ``pretrained: false`` instead.
    """
    import timm

    if pretrained in (False, None, "", "false", "none"):
        return timm.create_model(name, pretrained=False, **kwargs)
    if pretrained is True or pretrained == "timm":
        try:
            return timm.create_model(name, pretrained=True, **kwargs)
        except Exception as exc:  # noqa: BLE001 - offline hub failures come in many types
            raise PretrainedWeightsError(
                f"could not fetch timm hub weights for {name!r} ({type(exc).__name__}: {exc}); {_HOW}"
            ) from None
    model = timm.create_model(name, pretrained=False, **kwargs)
    load_state_dict_file(model, pretrained)
    return model
