"""Renaming DeepfakeBench state dicts onto our modules (used by ``map_deepfakebench_state_dict``).

A map is an ordered list of ``(DeepfakeBench prefix, our prefix)`` rules plus the prefixes of
tensors that DeepfakeBench builds but never uses in its forward pass. The first matching rule
renames a key; a dropped key disappears; a key that matches neither raises :class:`UnmappedKeys`
(a ``KeyError``) naming every such key, so nothing is lost silently.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import torch

#: DeepfakeBench's Xception (``training/networks/xception.py``) has timm ``legacy_xception``'s
#: layer names; ``last_linear`` is its 2-way head and ``adjust_channel`` is built in every mode.
XCEPTION_HEAD = "last_linear."
XCEPTION_UNUSED = "adjust_channel."


class UnmappedKeys(KeyError):
    """Keys of a state dict that no rule of a key map renames or drops; ``recognised`` counts the
    keys the map did rename or drop (0: the file is not laid out as that DeepfakeBench model)."""

    def __init__(self, unmapped: list[str], recognised: int) -> None:
        super().__init__(
            f"{len(unmapped)} DeepfakeBench keys have no counterpart in this model: "
            f"{unmapped[:20]}{' ...' if len(unmapped) > 20 else ''}"
        )
        self.unmapped = unmapped
        self.recognised = recognised


def remap(
    state_dict: dict[str, torch.Tensor],
    rules: Sequence[tuple[str, str]] | Mapping[str, str],
    drop: Iterable[str] = (),
) -> dict[str, torch.Tensor]:
    """``state_dict`` with each key renamed by the first matching prefix rule; ``drop`` removed.

    ``rules`` as a mapping ``{old prefix: new prefix}``: the longest matching prefix wins.
    """
    if isinstance(rules, Mapping):
        rules = sorted(rules.items(), key=lambda rule: len(rule[0]), reverse=True)
    drop = tuple(drop)
    out: dict[str, torch.Tensor] = {}
    unmapped: list[str] = []
    for key, value in state_dict.items():
        if drop and key.startswith(drop):
            continue
        for src, dst in rules:
            if key.startswith(src):
                out[dst + key[len(src) :]] = value
                break
        else:
            unmapped.append(key)
    if unmapped:
        raise UnmappedKeys(unmapped, len(state_dict) - len(unmapped))
    return out


def xception_rules(src: str, dst: str, head: str | None = None) -> list[tuple[str, str]]:
    """Rules for a DeepfakeBench Xception under ``src`` onto a timm ``legacy_xception`` under
    ``dst``; its ``last_linear`` goes to ``head`` (a prefix ending in '.'), if given."""
    rules = [(src + XCEPTION_HEAD, head)] if head is not None else []
    return [*rules, (src, dst)]


def remap_xception_detector(
    state_dict: dict[str, torch.Tensor], extra_rules: Sequence[tuple[str, str]] = ()
) -> dict[str, torch.Tensor]:
    """The key map of a DeepfakeBench detector built on one Xception ``backbone`` whose
    ``last_linear`` is our ``head`` (xception, spsl, fwa, core; ffd adds its map's rules)."""
    return remap(
        state_dict,
        [*xception_rules("backbone.", "backbone.", head="head."), *extra_rules],
        drop=["backbone." + XCEPTION_UNUSED],
    )
