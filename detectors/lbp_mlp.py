"""LBP-MLP face PAD (Boulkenafet et al., "Face anti-spoofing based on color texture analysis",
ICIP 2015), as used in the PAD fairness paper (``001_24ad1d03aa4f5e30.txt`` Sec. IV-A, IV-C).

Features: the rotation-invariant uniform LBP (``riu2``, P=8, R=1; scikit-image
``local_binary_pattern(method="uniform")``, P + 2 = 10 codes) of each channel of the image in RGB
and in HSV, as normalised 10-bin histograms, concatenated into one 60-dimensional vector
(10 bins x 3 channels x 2 colour spaces). The codes are histogrammed over the image interior (the
pixels whose whole circular neighbourhood lies inside the image), as the LBP operator of Ojala et
al. is defined. HSV is OpenCV's full-range 8-bit conversion (``COLOR_RGB2HSV_FULL``: H, S and V
each in 0..255). Classifier: an MLP of two fully connected layers (60 -> ``hidden``, ReLU, -> 1) trained
with binary cross-entropy (Adam, initial lr 1e-1, up to 1000 epochs: the ``train`` section of
``configs/detectors/lbp_mlp.yaml``).

LBP is computed from the *de-normalised* image: ``image * std + mean`` (the config's mean/std),
clipped to [0, 1] and quantised to 8 bits, so the features do not depend on the normalisation.

Feature cache. The features are not differentiable and are the slow part, so they are cached per
frame: the key is ``(dataset, video_id, frame)`` when the batch carries those keys (otherwise the
image content itself), and every entry stores a digest of the 8-bit image it was computed from.
A cached vector is reused only when the digest matches, i.e. when exactly the same pixels come
back. Consequently:

- without random augmentation (the default for LBP-MLP, like the paper) every epoch after the
  first reads all features from the cache, which is what makes 1000 epochs affordable;
- with random augmentation or FairSWAP (which change the pixels) a frame's features are recomputed
  whenever its pixels differ and the entry is replaced: augmentation keeps its full effect, it
  only costs the LBP time again. A stale feature is never returned.

The cache lives in memory (not in the state dict), holds at most ``cache_size`` frames (least
recently used evicted first) and belongs to the model, so each process (each DDP rank) keeps its
own; DataLoader workers never see it because the model runs in the main process.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import cv2
import numpy as np
import torch
from skimage.feature import local_binary_pattern
from torch import nn
from torch.nn import functional as F

from fairforensics.detectors.base import Detector, DetectorConfig
from fairforensics.detectors.registry import register_detector

LBP_POINTS = 8
LBP_RADIUS = 1
LBP_BINS = LBP_POINTS + 2  # riu2 codes 0..P+1
FEATURE_DIM = LBP_BINS * 3 * 2


def lbp_histogram(
    channel: np.ndarray, points: int = LBP_POINTS, radius: int = LBP_RADIUS
) -> np.ndarray:
    """Normalised histogram of the riu2 LBP codes of one 8-bit channel, over the image interior."""
    if channel.ndim != 2 or min(channel.shape) <= 2 * radius:
        raise ValueError(
            f"LBP needs a 2-D channel larger than {2 * radius} pixels, got shape {channel.shape}"
        )
    codes = local_binary_pattern(channel, points, radius, method="uniform")
    inner = codes[radius:-radius, radius:-radius]
    hist = np.bincount(inner.astype(np.int64).ravel(), minlength=points + 2).astype(np.float32)
    return hist / hist.sum()


def lbp_features(rgb: np.ndarray) -> np.ndarray:
    """The 60-d colour LBP vector of one uint8 RGB image: R, G, B, then H, S, V histograms."""
    if rgb.dtype != np.uint8 or rgb.ndim != 3 or rgb.shape[2] != 3:
        raise ValueError(
            f"expected a uint8 HxWx3 RGB image, got dtype {rgb.dtype} shape {rgb.shape}"
        )
    hsv = cv2.cvtColor(rgb, cv2.COLOR_RGB2HSV_FULL)
    return np.concatenate([lbp_histogram(img[:, :, c]) for img in (rgb, hsv) for c in range(3)])


def denormalise_to_uint8(
    image: torch.Tensor, mean: Sequence[float], std: Sequence[float]
) -> np.ndarray:
    """[B, 3, H, W] normalised tensor -> [B, H, W, 3] uint8 RGB (``x * std + mean`` in [0, 1])."""
    m = np.asarray(mean, np.float32).reshape(1, 3, 1, 1)
    s = np.asarray(std, np.float32).reshape(1, 3, 1, 1)
    x = image.detach().float().cpu().numpy() * s + m
    np.clip(x, 0.0, 1.0, out=x)
    x *= 255.0
    return np.ascontiguousarray(np.rint(x).astype(np.uint8).transpose(0, 2, 3, 1))


def _as_list(value: Any, n: int) -> list[Any] | None:
    """A batch column as a list of ``n`` items, or None when missing or of another length."""
    if value is None:
        return None
    if isinstance(value, torch.Tensor):
        value = value.tolist()
    value = list(value)
    return value if len(value) == n else None


class LBPFeatureCache:
    """LRU cache of per-frame LBP vectors, validated by a digest of the 8-bit image."""

    def __init__(self, max_items: int) -> None:
        self.max_items = max_items
        self._items: OrderedDict[Any, tuple[bytes, np.ndarray]] = OrderedDict()
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self._items)

    def clear(self) -> None:
        """Drop every cached vector and reset the hit / miss counters."""
        self._items.clear()
        self.hits = self.misses = 0

    @staticmethod
    def digest(rgb: np.ndarray) -> bytes:
        """A 16-byte digest of an image's shape and pixels."""
        h = hashlib.blake2b(digest_size=16)
        h.update(np.asarray(rgb.shape, dtype=np.int64).tobytes())
        h.update(np.ascontiguousarray(rgb).data)
        return h.digest()

    def features(self, rgb: np.ndarray, key: Any | None = None) -> np.ndarray:
        """The LBP vector of ``rgb``, from the cache when ``key`` (or the content) was seen with
        the same pixels."""
        digest = self.digest(rgb)
        key = digest if key is None else key
        entry = self._items.get(key)
        if entry is not None and entry[0] == digest:
            self._items.move_to_end(key)
            self.hits += 1
            return entry[1]
        self.misses += 1
        feat = lbp_features(rgb)
        if self.max_items > 0:
            self._items[key] = (digest, feat)
            self._items.move_to_end(key)
            while len(self._items) > self.max_items:
                self._items.popitem(last=False)
        return feat


@dataclass
class LBPMLPConfig(DetectorConfig):
    """``hidden``: width of the MLP's hidden layer (the paper gives two FC layers, not their
    width). ``cache_size``: frames kept in the feature cache (0 disables it)."""

    input_size: int = 224
    hidden: int = 64
    cache_size: int = 1_000_000


@register_detector("lbp_mlp", family="PAD")
class LBPMLP(Detector):
    """Colour LBP histograms (RGB + HSV, 60-d) and a two-layer MLP; see the module docstring."""

    Config = LBPMLPConfig

    def __init__(self, cfg: LBPMLPConfig) -> None:
        super().__init__(cfg)
        if cfg.hidden < 1:
            raise ValueError(f"lbp_mlp: model.hidden must be >= 1, got {cfg.hidden}")
        if cfg.cache_size < 0:
            raise ValueError(f"lbp_mlp: model.cache_size must be >= 0, got {cfg.cache_size}")
        self.fc1 = nn.Linear(FEATURE_DIM, cfg.hidden)
        self.fc2 = nn.Linear(cfg.hidden, 1)
        self.cache = LBPFeatureCache(cfg.cache_size)

    def lbp(self, batch: dict[str, Any]) -> torch.Tensor:
        """[B, 60] LBP features of the batch's images (cached per frame)."""
        image = batch["image"]
        rgb = denormalise_to_uint8(image, self.cfg.mean, self.cfg.std)
        n = rgb.shape[0]
        cols = [_as_list(batch.get(k), n) for k in ("dataset", "video_id", "frame")]
        keys = list(zip(*cols, strict=True)) if all(c is not None for c in cols) else [None] * n
        feats = np.stack([self.cache.features(rgb[i], keys[i]) for i in range(n)])
        return torch.from_numpy(feats).to(device=image.device, dtype=self.fc1.weight.dtype)

    def forward(self, batch: dict[str, Any]) -> dict[str, torch.Tensor]:
        hidden = F.relu(self.fc1(self.lbp(batch)))
        z = self.fc2(hidden)
        return self.outputs(torch.cat([torch.zeros_like(z), z], dim=1), hidden)

    def loss(self, batch: dict[str, Any], out: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """Binary cross-entropy on the attack logit (Sec. IV-C)."""
        bce = F.binary_cross_entropy_with_logits(
            out["logits"][:, 1].float(), batch["label"].float()
        )
        return {"total": bce, "bce": bce}
