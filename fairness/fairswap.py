"""FairSWAP: cross-attribute patch swapping, a training-time batch augmentation (paper 001, Sec. V).

A square patch (64x64 in the paper) at a random location of one training image is replaced by
the patch at the same location of another training image, preferably from a different
attribute group (``group_key``: the protocol's attribute, e.g. ``gender`` or ``occlusion``), to
break identity / attribute cues. Rules per sample ``x1`` of a collated batch:

* bona fide ``x1``: with ``p1`` take a bona fide partner ``x2`` and paste its patch into ``x1``;
  the label stays bona fide;
* attack ``x1``: with ``p2`` apply FairSWAP; then with ``p3`` the partner is bona fide, else
  another attack. With an attack partner, ``x1`` receives the partner's patch. With a bona fide
  partner, ``p4`` decides the size of the partial attack: with ``p4`` the result is the bona
  fide image carrying ``x1``'s attack patch (a small, patch-sized attack), otherwise ``x1``
  carrying the bona fide patch (an attack everywhere but the patch). The binary label stays
  attack in every case.

**Partners.** Once :meth:`FairSwap.bind` has been given the training dataset (the trainer does
this), partners are drawn from the whole training set, as the paper does ("all bona fide
training images except x1"): uniformly among the training samples of the needed class in
another group, else (no such sample) of the needed class in any group, never ``x1`` itself,
and loaded through the dataset (same preprocessing and augmentation as any training sample).
Unbound, a FairSwap draws partners from the other samples of the batch by the same rule. A
sample with no possible partner is left unchanged; so is one whose partner cannot be read.

Pixel-wise targets (``pixel_map`` [B,1,h,w], and ``mask`` [B,1,H,W] when present) follow the
pixels: the patch's cells in map coordinates (top, left and size scaled and rounded, so a 64 px
patch of a 224 px image marks 4x4 = 16 cells of a 14x14 map) take the map values of the image
the patch came from, so a bona fide patch inside an attack carries bona fide map values and vice
versa, whatever value convention the detector uses. Binary detectors (no map) just keep labels.
The batch gains ``fairswap_partner`` (long [B], -1 where nothing was swapped; the partner's
position in the training set when bound, in the batch otherwise) and ``fairswap_box`` (long
[B, 3]: top, left, size of the patch in image pixels) for logging. In a small partial attack the
result starts from the partner's image, yet keys other than ``image``, ``label``, ``pixel_map``
and ``mask`` (e.g. ``landmarks``) stay those of ``x1``.

**Randomness.** One ``numpy`` generator drives every draw. :meth:`FairSwap.bind` seeds it with
``seed + rank`` (each DDP rank its own stream); :meth:`state_dict` / :meth:`load_state_dict`
let the trainer save it in checkpoints, so a resumed run swaps exactly as an uninterrupted one.
"""

from __future__ import annotations

import logging
from typing import Any, Protocol

import numpy as np
import torch

log = logging.getLogger(__name__)

_MAP_KEYS = ("pixel_map", "mask")
_TRIES = 8  # partners tried before giving up on one sample (unreadable or x1 itself)


class TrainingSet(Protocol):
    """What FairSWAP needs of a training dataset (``preprocessing.frames.FrameDataset``)."""

    @property
    def labels(self) -> np.ndarray: ...

    def groups(self, key: str) -> np.ndarray: ...

    def __getitem__(self, i: int) -> Any: ...


class PartnerPool:
    """The training samples by class and group; draws a partner and loads it via the dataset."""

    def __init__(self, dataset: TrainingSet, group_key: str) -> None:
        self.dataset = dataset
        self.labels = np.asarray(dataset.labels, dtype=np.int64)
        self.groups = np.asarray([str(g) for g in dataset.groups(group_key)], dtype=object)
        self._cache: dict[tuple[int, str], np.ndarray] = {}

    def candidates(self, cls: int, group: str) -> np.ndarray:
        """Indexes of class ``cls`` outside ``group``, else of class ``cls`` in any group."""
        key = (cls, group)
        if key not in self._cache:
            same_class = self.labels == cls
            other = np.flatnonzero(same_class & (self.groups != group))
            self._cache[key] = other if len(other) else np.flatnonzero(same_class)
        return self._cache[key]

    def draw(
        self, cls: int, group: str, exclude: tuple[Any, ...], rng: np.random.Generator
    ) -> tuple[int, dict[str, Any]] | None:
        """(index, loaded sample) of a random partner that is not ``exclude``
        (dataset, video id, frame), or None."""
        pool = self.candidates(cls, group)
        if not len(pool):
            return None
        # a small pool is tried whole (in random order), a large one at _TRIES random draws
        order = rng.permutation(pool) if len(pool) <= _TRIES else rng.choice(pool, _TRIES)
        for j in map(int, order):
            sample = self.dataset[j]
            if not isinstance(sample, dict) or "_pair" in sample:
                raise ValueError(
                    "FairSwap partners need a dataset that returns one sample per index "
                    "(no blend/pairs detectors)"
                )
            if "_skipped" in sample:
                log.warning(
                    "FairSwap: partner unreadable (%s); drawing another", sample["_skipped"]
                )
                continue
            if (sample.get("dataset"), sample.get("video_id"), sample.get("frame")) != exclude:
                return j, sample
        return None


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
        self.seed = seed
        self.rng = np.random.default_rng(seed)
        self.pool: PartnerPool | None = None
        self._warned: set[str] = set()

    def __repr__(self) -> str:
        return (
            f"FairSwap(p1={self.p1}, p2={self.p2}, p3={self.p3}, p4={self.p4}, "
            f"patch={self.patch}, group_key={self.group_key!r})"
        )

    def bind(self, dataset: TrainingSet, rank: int = 0) -> None:
        """Draw partners from the whole ``dataset``; seed the generator with ``seed + rank``."""
        self.pool = PartnerPool(dataset, self.group_key)
        if not (self.pool.groups != "").any():
            self._warn_once(
                "nogroup",
                "FairSwap: no training sample has attribute %r; partners are drawn regardless "
                "of group",
                self.group_key,
            )
        if self.seed is not None:
            self.rng = np.random.default_rng(self.seed + rank)

    def state_dict(self) -> dict[str, Any]:
        """The generator's state (JSON-able), for checkpoints."""
        return {"rng": self.rng.bit_generator.state}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore :meth:`state_dict` (after :meth:`bind`, which reseeds)."""
        self.rng.bit_generator.state = state["rng"]

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

    def _partner_class(self, label: int) -> int | None:
        """The class of ``x1``'s partner, or None for no swap (p1, p2, p3)."""
        if label == 0:
            return 0 if self.rng.random() < self.p1 else None
        if self.rng.random() >= self.p2:
            return None
        return 0 if self.rng.random() < self.p3 else 1

    def _batch_partner(self, i: int, cls: int, labels: np.ndarray, groups: list[str]) -> int:
        same_class = [j for j in range(len(labels)) if j != i and labels[j] == cls]
        other_group = [j for j in same_class if groups[j] != groups[i]]
        pool = other_group or same_class
        return int(self.rng.choice(pool)) if pool else -1

    def _partner(
        self, i: int, cls: int, batch: dict[str, Any], labels: np.ndarray, groups: list[str]
    ) -> tuple[int, torch.Tensor, dict[str, torch.Tensor]] | None:
        """(partner id, its image [3,H,W], its maps) from the pool when bound, else the batch."""
        image = batch["image"]
        if self.pool is None:
            j = self._batch_partner(i, cls, labels, groups)
            if j < 0:
                return None
            return j, image[j], {k: batch[k][j] for k in _MAP_KEYS if k in batch}
        exclude = tuple(
            batch[k][i] if k in batch else None for k in ("dataset", "video_id", "frame")
        )
        if isinstance(exclude[2], torch.Tensor):
            exclude = (*exclude[:2], int(exclude[2]))
        drawn = self.pool.draw(cls, groups[i], exclude, self.rng)
        if drawn is None:
            return None
        j, sample = drawn
        if sample["image"].shape != image.shape[1:]:
            raise ValueError(
                f"FairSwap: partner image {tuple(sample['image'].shape)} does not match the "
                f"batch's {tuple(image.shape[1:])}"
            )
        maps = {}
        for k in _MAP_KEYS:
            if isinstance(batch.get(k), torch.Tensor):
                if k not in sample:
                    raise ValueError(
                        f"FairSwap: the batch has {k!r} but the partner sample has not"
                    )
                maps[k] = sample[k].to(batch[k].dtype)
        return j, sample["image"].to(image.dtype), maps

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
            cls = self._partner_class(int(labels[i]))
            if cls is None:
                continue
            found = self._partner(i, cls, batch, labels, groups)
            if found is None:
                continue
            j, p_image, p_maps = found
            own = (image[i], {k: m[i] for k, m in maps.items()})
            other = (p_image, p_maps)
            # small partial attack: x1's attack patch inside the bona fide partner image
            small = labels[i] == 1 and cls == 0 and self.rng.random() < self.p4
            (base_img, base_maps), (src_img, src_maps) = (other, own) if small else (own, other)
            partners[i] = j
            top = int(self.rng.integers(0, height - size + 1))
            left = int(self.rng.integers(0, width - size + 1))
            boxes[i] = torch.tensor([top, left, size])
            new_image[i] = base_img
            new_image[i, :, top : top + size, left : left + size] = src_img[
                :, top : top + size, left : left + size
            ]
            for k, m in maps.items():
                y0, y1, x0, x1 = map_box(top, left, size, height, width, m.shape[-2], m.shape[-1])
                new_maps[k][i] = base_maps[k]
                new_maps[k][i, ..., y0:y1, x0:x1] = src_maps[k][..., y0:y1, x0:x1]
        out["image"] = new_image
        out.update(new_maps)
        out["label"] = label.clone()
        out["fairswap_partner"] = partners.to(label.device)
        out["fairswap_box"] = boxes.to(label.device)
        return out


def map_box(
    top: int, left: int, size: int, height: int, width: int, map_h: int, map_w: int
) -> tuple[int, int, int, int]:
    """The patch's cells (y0, y1, x0, x1) in a map of another resolution: corner and size
    scaled and rounded (at least one cell), so 64 px of 224 are 4 of 14 cells."""

    def scale(start: int, length: int, n: int, cells: int) -> tuple[int, int]:
        extent = max(1, round(length * cells / n))
        first = min(round(start * cells / n), cells - extent)
        return first, first + extent

    y0, y1 = scale(top, size, height, map_h)
    x0, x1 = scale(left, size, width, map_w)
    return y0, y1, x0, x1


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
