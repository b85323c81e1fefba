"""Strict loading of a pretrained file whose layout is not the model's own (SlowFast's Kinetics I3D,
SCNet's ImageNet file, Swin in Microsoft's layout): after a loader has renamed the file's tensors,
:func:`fitting_tensors` checks them against the model like ``load_state_dict_file`` does."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from pathlib import Path

import torch

from fairforensics.detectors.backbones import PRETRAINED_STRICT, PretrainedWeightsError

log = logging.getLogger(__name__)
_LIST = 8


def fitting_tensors(
    path: str | Path,
    state: Mapping[str, torch.Tensor],
    own: Mapping[str, torch.Tensor],
    required: Iterable[str],
    what: str,
    how: str,
) -> dict[str, torch.Tensor]:
    """The tensors of ``state`` (already under ``own``'s names) that fit ``own``.

    Keys of ``required`` missing from ``state``, keys of ``state`` that ``own`` lacks and shape
    mismatches are one error naming them (``pretrained_strict: false``: logged instead); ``what``
    names the expected file, ``how`` says what to do.
    """
    missing = sorted(set(required) - set(state))
    unexpected = sorted(set(state) - set(own))
    shapes = sorted(
        f"{k} {tuple(v.shape)} vs {tuple(own[k].shape)}"
        for k, v in state.items()
        if k in own and v.shape != own[k].shape
    )
    problems = "; ".join(
        f"{kind} {len(keys)}: {', '.join(keys[:_LIST])}{' ...' if len(keys) > _LIST else ''}"
        for kind, keys in (("missing", missing), ("unexpected", unexpected), ("shape", shapes))
        if keys
    )
    if problems and PRETRAINED_STRICT.get():
        raise PretrainedWeightsError(f"{path} is not a complete {what}: {problems}; {how}")
    fits = {k: v for k, v in state.items() if k in own and v.shape == own[k].shape}
    if not fits:
        raise PretrainedWeightsError(f"{path}: no tensor matches the {what}; {how}")
    log.info(
        "%d tensors of %s fit the model%s",
        len(fits),
        path,
        f" (pretrained_strict: false; {problems})" if problems else "",
    )
    return fits
