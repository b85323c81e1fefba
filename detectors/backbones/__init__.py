"""Backbone construction shared by detectors: timm models and pretrained-weight loading.

A ``pretrained:`` file must cover the backbone: missing, unexpected or shape-mismatched tensors
are one error naming them, except a classifier (``fc``, ``last_linear``, ``classifier``, ``head``)
that the backbone does not have or has in another shape. ``pretrained_strict: false`` in the
detector config loads what fits instead (and logs what did not). Both timm's names and
DeepfakeBench's Xception ImageNet layout (pointwise convolutions stored as 2-D ``[out, in]``
tensors, a ``module.`` prefix) load fully.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator, Mapping
from contextvars import ContextVar
from pathlib import Path
from typing import Any

import torch
from torch import nn

from fairforensics.configs.filekind import TORCH_KINDS, describe_kind, file_kind
from fairforensics.detectors.backbones.hub import download_blocker, hub_source

log = logging.getLogger(__name__)


class PretrainedWeightsError(RuntimeError):
    """Pretrained weights were asked for but cannot be had."""


_HOW = (
    "set 'pretrained: false' in the detector config (random init) or "
    "'pretrained: /path/to/weights.pth' to load a local state dict"
)


#: Whether ``pretrained:`` files must cover the backbone; ``build_detector`` sets it from the
#: config's ``pretrained_strict`` while the detector is built.
PRETRAINED_STRICT: ContextVar[bool] = ContextVar("PRETRAINED_STRICT", default=True)
CLASSIFIER_NAMES = ("fc", "last_linear", "classifier", "head")
_LIST = 8


@contextlib.contextmanager
def pretrained_strictness(strict: bool) -> Iterator[None]:
    """Within the block, ``pretrained:`` files load strictly (True) or partially (False)."""
    token = PRETRAINED_STRICT.set(strict)
    try:
        yield
    finally:
        PRETRAINED_STRICT.reset(token)


def read_torch_file(path: Path, error: type[Exception], hint: str) -> Any:
    """``torch.load(path, weights_only=True)``; a missing, empty or unreadable file is one
    ``error`` naming the file and ending with ``hint`` (what to do)."""
    if not path.is_file():
        raise error(f"{path}: weights file not found; {hint}")
    if path.stat().st_size == 0:
        raise error(f"{path}: weights file is empty (0 bytes); {hint}")
    kind = file_kind(path)
    if kind not in (*TORCH_KINDS, "unknown"):
        raise error(f"{path}: {describe_kind(kind)}, not a torch file; {hint}")
    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # noqa: BLE001 - truncated or corrupt files fail in many ways
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise error(
            f"{path}: cannot read weights (truncated or not a torch file?): {first}; {hint}"
        ) from None


def strip_module_prefix(state_dict: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Remove the ``module.`` prefix DDP puts on every key (when all keys carry it)."""
    if state_dict and all(k.startswith("module.") for k in state_dict):
        return {k[len("module.") :]: v for k, v in state_dict.items()}
    return dict(state_dict)


def _read_state_file(path: Path) -> dict[str, torch.Tensor]:
    state = read_torch_file(path, PretrainedWeightsError, _HOW)
    for key in ("state_dict", "model"):
        if isinstance(state, dict) and isinstance(state.get(key), dict):
            state = state[key]
    if not isinstance(state, dict):
        raise PretrainedWeightsError(f"{path}: expected a state dict, got {type(state).__name__}")
    return strip_module_prefix(state)


def _adapt_layout(
    state: dict[str, torch.Tensor], own: dict[str, torch.Tensor]
) -> dict[str, torch.Tensor]:
    """Reshape 2-D ``[out, in]`` pointwise weights (DeepfakeBench's Xception file) to 1x1 convs."""
    out = {}
    for k, v in state.items():
        ref = own.get(k)
        if (
            ref is not None
            and v.dim() == 2
            and ref.dim() == 4
            and tuple(ref.shape) == (*v.shape, 1, 1)
        ):
            v = v[:, :, None, None]
        out[k] = v
    return out


def _names(keys: list[str]) -> str:
    more = f" (+{len(keys) - _LIST} more)" if len(keys) > _LIST else ""
    return ", ".join(keys[:_LIST]) + more


def load_fitting(
    module: nn.Module,
    kept: Mapping[str, torch.Tensor],
    n_own: int,
    source: str | Path,
    *,
    missing: list[str],
    unexpected: list[str],
    shapes: list[str],
    strict: bool,
    hint: str = "",
) -> None:
    """Load ``kept`` (the file's tensors that fit, in ``module``'s names) onto ``module``.

    With ``strict``, anything ``missing``, ``unexpected`` or mis-shaped (``shapes``) is one error
    naming the keys (followed by ``hint``); otherwise it is logged. No fitting tensor is an error.
    """
    problems = [
        f"{what} {len(keys)}: {_names(keys)}"
        for what, keys in (("missing", missing), ("unexpected", unexpected), ("shape", shapes))
        if keys
    ]
    if strict and problems:
        raise PretrainedWeightsError(
            f"{source} does not cover the backbone ({len(kept)} of {n_own} tensors fit): "
            + "; ".join(problems)
            + (f"; {hint}" if hint else "")
            + "; pass a complete file, or set 'pretrained_strict: false' to load only what fits"
        )
    if not kept:
        raise PretrainedWeightsError(f"{source}: no tensor in the file matches the model; {_HOW}")
    with torch.no_grad():
        module.load_state_dict(kept, strict=False)
    log.info(
        "loaded %d of %d tensors from %s%s",
        len(kept),
        n_own,
        source,
        f" (pretrained_strict: false; {'; '.join(problems)})" if problems else "",
    )


def load_state_dict_file(
    module: nn.Module,
    path: str | Path,
    strict: bool | None = None,
    rename: Callable[[dict[str, torch.Tensor]], dict[str, torch.Tensor]] | None = None,
) -> None:
    """Load a local state-dict file (``weights_only``) onto ``module``.

    ``strict`` (default: the config's ``pretrained_strict``, see :data:`PRETRAINED_STRICT`):
    every tensor of ``module`` must come from the file, and every tensor of the file must fit,
    except a classifier (:data:`CLASSIFIER_NAMES`) the module lacks or has in another shape.
    ``rename`` maps the file's tensors onto the module's names first (another library's layout).
    """
    strict = PRETRAINED_STRICT.get() if strict is None else strict
    path = Path(path).expanduser()
    own = module.state_dict()
    state = _read_state_file(path)
    state = _adapt_layout(rename(state) if rename is not None else state, own)

    def is_classifier(key: str) -> bool:
        return key.split(".", 1)[0] in CLASSIFIER_NAMES

    kept = {k: v for k, v in state.items() if k in own and own[k].shape == v.shape}
    unexpected = sorted(k for k in state if k not in own and not is_classifier(k))
    shapes = sorted(
        f"{k} {tuple(v.shape)} vs {tuple(own[k].shape)}"
        for k, v in state.items()
        if k in own and own[k].shape != v.shape and not is_classifier(k)
    )
    missing = sorted(set(own) - set(kept))
    load_fitting(
        module, kept, len(own), path, missing=missing, unexpected=unexpected, shapes=shapes,
        strict=strict,
    )  # fmt: skip


def create_timm_backbone(name: str, pretrained: bool | str = False, **kwargs) -> nn.Module:
    """A timm model; ``pretrained`` is ``False``, ``"timm"``/``True`` (hub) or a local file path.

    Hub weights come from timm's cache when they are there, else need network access; when they
    cannot be fetched (``HF_HUB_OFFLINE``, no connection) the error comes at once and says how to
    pass a local file or ``pretrained: false`` instead (:mod:`.hub`).
    """
    import timm

    if pretrained in (False, None, "", "false", "none"):
        return timm.create_model(name, pretrained=False, **kwargs)
    if pretrained is True or pretrained == "timm":
        source = hub_source(name)
        if source is not None and source.cached is not None:  # no download, no network
            overlay = {"file": str(source.cached), "url": "", "hf_hub_id": None}
            return timm.create_model(
                name, pretrained=True, pretrained_cfg_overlay=overlay, **kwargs
            )
        blocker = None if source is None else download_blocker(source)
        if blocker is not None:  # at once, not after a minute of the hub client's retries
            raise PretrainedWeightsError(
                f"timm hub weights for {name!r} are not in the local cache ({source.where}) and "
                f"cannot be downloaded from {source.url} ({blocker}); {_HOW}"
            )
        try:
            return timm.create_model(name, pretrained=True, **kwargs)
        except Exception as exc:  # noqa: BLE001 - offline hub failures come in many types
            raise PretrainedWeightsError(
                f"could not fetch timm hub weights for {name!r} ({type(exc).__name__}: {exc}); {_HOW}"
            ) from None
    if kwargs.get("features_only") or kwargs.get("in_chans", 3) != 3:
        # timm itself adapts the stem to in_chans and drops the head of a features-only model.
        path = Path(pretrained).expanduser()
        _read_state_file(path)  # a clear error for a missing, empty or unreadable file
        overlay = {"file": str(path), "url": "", "hf_hub_id": None}
        try:
            return timm.create_model(
                name, pretrained=True, pretrained_cfg_overlay=overlay, **kwargs
            )
        except RuntimeError as exc:
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            raise PretrainedWeightsError(f"{path} does not fit {name}: {first}") from None
    model = timm.create_model(name, pretrained=False, **kwargs)
    load_state_dict_file(model, pretrained)
    return model
