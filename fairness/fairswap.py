"""FairSWAP: cross-attribute patch swapping, a training-time batch augmentation (paper 001, Sec. V).

A square patch (64x64 in the paper) at a random location of one training image is replaced by
the patch at the same location of another training image, preferably from a different
attribute group (``group_key``, e.g. ``gender``), to break identity / attribute cues. Rules per
sample ``x1`` of a collated batch (partners are the other samples of the batch, unmodified):

* bona fide ``x1``: with ``p1`` take a bona fide partner ``x2`` and paste its patch into ``x1``;
  the label stays bona fide;
* attack ``x1``: with ``p2`` apply FairSWAP; then with ``p3`` the partner is bona fide, else
  another attack. With an attack partner, ``x1`` receives the partner's patch. With a bona fide
  partner, ``p4`` decides the size of the partial attack: with ``p4`` the result is the bona
  fide image carrying ``x1``'s attack patch (a small, patch-sized attack), otherwise ``x1``
  carrying the bona fide patch (an attack everywhere but the patch). The binary label stays
  attack in every case.

Pixel-wise targets (``pixel_map`` [B,1,h,w], and ``mask`` [B,1,H,W] when present) follow the
pixels: the swapped region takes the map values of the image the patch came from (scaled to the
map's resolution), so a bona fide patch inside an attack carries bona fide map values and vice
versa, whatever value convention the detector uses. Binary detectors (no map) just keep labels.
The batch gains ``fairswap_partner`` (long [B], -1 where nothing was swapped) and
``fairswap_box`` (long [B, 3]: top, left, size of the patch in image pixels) for logging.
In a small partial attack the result starts from the partner's image, yet keys other than
``image``, ``label``, ``pixel_map`` and ``mask`` (e.g. ``landmarks``) stay those of ``x1``.
Partners from another group are preferred; when the batch has none, any partner of the needed
class is used; when it has no partner of that class at all, the sample is left unchanged.
"""

from __future__ import annotations

import logging
from typing import Any

import numpy as np
import torch

log = logging.getLogger(__name__)

_MAP_KEYS = ("pixel_map", "mask")


class FairSwap:
    """Callable batch transform; see the module docstring for the rules (paper 001, Sec. V)."""

    def __init__(
        self,
        p1: float = 0.3,
        p2: float = 0.3,
        p3: float = 0.5,
        p4: float = 0.5,
        patch: int = 64,
        group_key: str = "gender",
        seed: int | None = None,
    ) -> None:
        for name, p in (("p1", p1), ("p2", p2), ("p3", p3), ("p4", p4)):
            if not 0.0 <= p <= 1.0:
                raise ValueError(f"FairSwap {name} must be a probability in [0, 1], got {p}")
        if patch < 1:
            raise ValueError(f"FairSwap patch must be >= 1 pixel, got {patch}")
        self.p1, self.p2, self.p3, self.p4 = p1, p2, p3, p4
        self.patch = patch
        self.group_key = group_key
        self.rng = np.random.default_rng(seed)
        self._warned: set[str] = set()

    def __repr__(self) -> str:
        return (
            f"FairSwap(p1={self.p1}, p2={self.p2}, p3={self.p3}, p4={self.p4}, "
            f"patch={self.patch}, group_key={self.group_key!r})"
        )

    def _warn_once(self, key: str, message: str, *args: Any) -> None:
        if key not in self._warned:
            self._warned.add(key)
            log.warning(message, *args)

    def _groups(self, batch: dict[str, Any], n: int) -> list[str]:
        attrs = batch.get("attributes") or {}
        values = attrs.get(self.group_key) if isinstance(attrs, dict) else None
        if values is None:
            self._warn_once(
                "nogroup",
                "FairSwap: batch has no attribute %r; partners are drawn regardless of group",
                self.group_key,
            )
            return [""] * n
        if len(values) != n:
            raise ValueError(
                f"FairSwap: attributes[{self.group_key!r}] has {len(values)} entries for a batch of {n}"
            )
        return [str(v) for v in values]

    def _partner(self, i: int, cls: int, labels: np.ndarray, groups: list[str]) -> int:
        same_class = [j for j in range(len(labels)) if j != i and labels[j] == cls]
        other_group = [j for j in same_class if groups[j] != groups[i]]
        pool = other_group or same_class
        return int(self.rng.choice(pool)) if pool else -1

    def __call__(self, batch: dict[str, Any]) -> dict[str, Any]:
        """Return a new batch dict with patches swapped, labels kept, maps updated."""
        image = batch["image"]
        label = batch["label"]
        if image.ndim != 4 or label.ndim != 1 or label.shape[0] != image.shape[0]:
            raise ValueError(
                f"FairSwap expects image [B,3,H,W] and label [B], got {tuple(image.shape)} and "
                f"{tuple(label.shape)}"
            )
        n, _, height, width = image.shape
        size = min(self.patch, height, width)
        if size < self.patch:
            self._warn_once(
                "small", "FairSwap: %dx%d images; patch clamped to %d", height, width, size
            )
        labels = label.detach().cpu().numpy()
        groups = self._groups(batch, n)
        maps = {k: batch[k] for k in _MAP_KEYS if isinstance(batch.get(k), torch.Tensor)}
        out = dict(batch)
        new_image = image.clone()
        new_maps = {k: m.clone() for k, m in maps.items()}
        partners = torch.full((n,), -1, dtype=torch.long)
        boxes = torch.full((n, 3), -1, dtype=torch.long)
        for i in range(n):
            base, patch_src = self._plan(i, labels, groups)
            if base < 0:
                continue
            partner = patch_src if base == i else base
            partners[i] = partner
            top = int(self.rng.integers(0, height - size + 1))
            left = int(self.rng.integers(0, width - size + 1))
            boxes[i] = torch.tensor([top, left, size])
            new_image[i] = image[base]
            new_image[i, :, top : top + size, left : left + size] = image[
                patch_src, :, top : top + size, left : left + size
            ]
            for k, m in maps.items():
                y0, y1, x0, x1 = _scale_box(
                    top, left, size, height, width, m.shape[-2], m.shape[-1]
                )
                new_maps[k][i] = m[base]
                new_maps[k][i, ..., y0:y1, x0:x1] = m[patch_src, ..., y0:y1, x0:x1]
        out["image"] = new_image
        out.update(new_maps)
        out["label"] = label.clone()
        out["fairswap_partner"] = partners.to(label.device)
        out["fairswap_box"] = boxes.to(label.device)
        return out

    def _plan(self, i: int, labels: np.ndarray, groups: list[str]) -> tuple[int, int]:
        """(image the result starts from, image the patch comes from); (-1, -1) for no swap."""
        if labels[i] == 0:
            if self.rng.random() >= self.p1:
                return -1, -1
            j = self._partner(i, 0, labels, groups)
            return (i, j) if j >= 0 else (-1, -1)
        if self.rng.random() >= self.p2:
            return -1, -1
        bona_fide_partner = self.rng.random() < self.p3
        j = self._partner(i, 0 if bona_fide_partner else 1, labels, groups)
        if j < 0:
            return -1, -1
        if bona_fide_partner and self.rng.random() < self.p4:
            return j, i  # small partial attack: x1's attack patch inside the bona fide image
        return i, j


def _scale_box(
    top: int, left: int, size: int, height: int, width: int, map_h: int, map_w: int
) -> tuple[int, int, int, int]:
    """The patch's box in a map of another resolution (covering every touched map cell)."""
    y0 = int(np.floor(top * map_h / height))
    y1 = int(np.ceil((top + size) * map_h / height))
    x0 = int(np.floor(left * map_w / width))
    x1 = int(np.ceil((left + size) * map_w / width))
    return y0, max(y1, y0 + 1), x0, max(x1, x0 + 1)


def build_fairswap(cfg: Any, seed: int = 0) -> FairSwap | None:
    """A :class:`FairSwap` from a config with ``enabled, p1..p4, patch, group_key`` (or None)."""
    if not getattr(cfg, "enabled", False):
        return None
    return FairSwap(
        p1=cfg.p1,
        p2=cfg.p2,
        p3=cfg.p3,
        p4=cfg.p4,
        patch=cfg.patch,
        group_key=cfg.group_key,
        seed=seed,
    )


def fairswap_transforms(train: Any) -> list[FairSwap]:
    """The batch transforms a trainer's ``train`` config asks for: ``[FairSwap]`` when
    ``train.fairswap.enabled`` (seeded with ``train.seed``), else ``[]``.

    Pass them to the trainer: ``Trainer(cfg, batch_transforms=fairswap_transforms(cfg.train))``
    (training does not import fairness; ``scripts/train.py`` composes the two)."""
    fairswap = build_fairswap(train.fairswap, seed=train.seed)
    return [fairswap] if fairswap is not None else []
