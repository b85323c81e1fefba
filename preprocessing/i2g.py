"""The inconsistency image generator (I2G) of PCL-I2G (Zhao et al., "Learning Self-Consistency for
Deepfake Detection", ICCV 2021), as DeepfakeBench v2 makes it (``training/dataset/I2G_dataset.py``,
which adapts the SBI authors' code: :mod:`preprocessing.self_blending`).

A real face (the background) gets the face of another real frame with the nearest landmarks (the
foreground, :class:`preprocessing.blending.NearestLandmarks`), without any alignment:

1. a face-region mask from the background's landmarks, one of SBI's four hull types at random;
2. the foreground and the mask get SBI's random affine map, the mask its elastic warp
   (:func:`preprocessing.self_blending.deform_source`);
3. the foreground's pixels inside the mask get the background's per-channel RGB mean and standard
   deviation (I2G's colour transfer);
4. SBI's soft blending mask ``M`` (:func:`preprocessing.self_blending.blend_mask`), blend ratio 1;
5. the fake is ``M * foreground + (1 - M) * background`` (truncated to uint8), and the fake and the
   background get SBI's shared colour/JPEG transform (I2G's ``self.transforms``); the transformed
   background is the pair's real image.

``M`` is the PCL target: pixels with ``M = 0`` come from the background, the others (partly) from
another face. Unlike SBI, no source-target augmentation (DeepfakeBench comments it out).
"""

from __future__ import annotations

import cv2
import numpy as np

from fairforensics.preprocessing.blending import BlendingError, _check_inputs
from fairforensics.preprocessing.self_blending import (
    HULL_TYPES,
    blend_mask,
    deform_source,
    hull_mask,
    pair_transform,
)


def match_colours(source: np.ndarray, target: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """``source`` with its pixels inside ``mask`` moved to ``target``'s RGB mean and std there."""
    inside = mask > 0
    if inside.sum() < 2:
        return source
    src = source[inside].astype(np.float32)
    tgt = target[inside].astype(np.float32)
    scale = tgt.std(0) / np.maximum(src.std(0), 1e-6)
    out = source.copy()
    out[inside] = np.clip((src - src.mean(0)) * scale + tgt.mean(0), 0, 255).astype(np.uint8)
    return out


def i2g_pair(
    image: np.ndarray,
    landmarks: np.ndarray,
    partner: tuple[np.ndarray, np.ndarray],
    rng: np.random.Generator,
) -> dict[str, np.ndarray]:
    """The I2G pair of real ``image`` with ``partner = (image, landmarks)`` of another real face:
    ``{"image": fake, "mask": M, "real": transformed image}`` (uint8 RGB, float32 mask)."""
    pts = _check_inputs(image, landmarks)
    h, w = image.shape[:2]
    _check_inputs(partner[0], partner[1], what="i2g partner")
    foreground = partner[0]
    if foreground.shape != image.shape:
        foreground = cv2.resize(foreground, (w, h), interpolation=cv2.INTER_AREA)
    pts = np.clip(pts, 0, [w - 1, h - 1])
    hull = hull_mask((h, w), pts, str(rng.choice(HULL_TYPES)))
    if hull.max() <= 0:
        raise BlendingError("i2g: the landmark hull is empty (degenerate landmarks)")
    source, mask = deform_source(foreground, hull, rng)
    if mask.max() <= 0:  # moved out of the image
        mask = hull
    source = match_colours(source, image, mask)
    m = blend_mask(mask, rng)
    fake = m[..., None] * source.astype(np.float64) + (1 - m[..., None]) * image
    fake, real = pair_transform(fake.astype(np.uint8), image, rng)
    return {"image": fake, "mask": m, "real": real}
