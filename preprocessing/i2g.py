"""The inconsistency image generator (I2G) of PCL-I2G (Zhao et al., "Learning Self-Consistency for
Deepfake Detection", ICCV 2021), as DeepfakeBench v2 makes it (``training/dataset/I2G_dataset.py``).

A real face (the background) gets the face of another real frame with the nearest landmarks (the
foreground, :class:`preprocessing.blending.NearestLandmarks`), without any alignment:

1. a face-region mask from the background's landmarks, one of the four hull types of
   :mod:`preprocessing.face_hulls` at random;
2. the foreground and the mask are moved by one random affine map (translation up to 3% of the
   width and 1.5% of the height, scale in [0.95, 1/0.95]); the mask is then elastically deformed
   (displacement noise smoothed with sigma 7, scaled by alpha 50, at 256 x 256);
3. the foreground's pixels inside the mask get the background's per-channel RGB mean and
   standard deviation (colour transfer);
4. the mask is resized to a random 75-100% of the face, blurred, cut to its plateau, blurred
   again with a random sigma (5-45) and resized back: the soft blending mask ``M``;
5. the fake is ``M * foreground + (1 - M) * background`` (blend ratio 1).

``M`` is the PCL target: pixels with ``M = 0`` come from the background, the others (partly) from
another face. Sizes are DeepfakeBench's at 256 x 256 and scale with the image.
"""

from __future__ import annotations

import cv2
import numpy as np

from fairforensics.preprocessing.blending import BlendingError
from fairforensics.preprocessing.face_hulls import HULL_TYPES, hull_mask

REFERENCE_SIZE = 256


def _odd(n: float) -> int:
    n = max(3, int(round(n)))
    return n if n % 2 else n + 1


def random_affine(
    image: np.ndarray, mask: np.ndarray, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """One random translation (3% x, 1.5% y) and scale ([0.95, 1/0.95]) of image and mask."""
    h, w = mask.shape
    s = float(rng.uniform(0.95, 1 / 0.95))
    tx = float(rng.uniform(-0.03, 0.03)) * w
    ty = float(rng.uniform(-0.015, 0.015)) * h
    cx, cy = (w - 1) / 2.0, (h - 1) / 2.0
    matrix = np.array([[s, 0, (1 - s) * cx + tx], [0, s, (1 - s) * cy + ty]], dtype=np.float32)
    out = cv2.warpAffine(
        image, matrix, (w, h), flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_REFLECT_101
    )
    moved = cv2.warpAffine(
        mask, matrix, (w, h), flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_CONSTANT
    )
    return out, moved


def elastic(mask: np.ndarray, rng: np.random.Generator, alpha: float, sigma: float) -> np.ndarray:
    """Elastic deformation (Simard et al. 2003): displacements of uniform noise in [-1, 1]
    smoothed by a Gaussian of ``sigma`` and scaled by ``alpha`` pixels."""
    h, w = mask.shape
    dx = cv2.GaussianBlur(rng.uniform(-1, 1, (h, w)).astype(np.float32), (0, 0), sigma) * alpha
    dy = cv2.GaussianBlur(rng.uniform(-1, 1, (h, w)).astype(np.float32), (0, 0), sigma) * alpha
    xs, ys = np.meshgrid(np.arange(w, dtype=np.float32), np.arange(h, dtype=np.float32))
    return cv2.remap(mask, xs + dx, ys + dy, cv2.INTER_LINEAR, borderMode=cv2.BORDER_CONSTANT)


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


def soft_mask(mask: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """DeepfakeBench's ``get_blend_mask``: random resize, blur, plateau, blur, resize back."""
    h, w = mask.shape
    k = h / REFERENCE_SIZE
    small_h = int(rng.integers(round(0.75 * h), h + 1))
    small_w = int(rng.integers(round(0.75 * w), w + 1))
    m = cv2.resize(mask, (small_w, small_h))
    k1 = _odd(k * (5 + 2 * int(rng.integers(0, 11))))  # DFB: odd kernel in 5..25
    m = cv2.GaussianBlur(m, (k1, k1), 0)
    if m.max() <= 0:
        raise BlendingError("i2g: the blending mask is empty")
    m = m / m.max()
    m[m < 1] = 0
    k2 = _odd(k * (5 + 2 * int(rng.integers(0, 11))))
    m = cv2.GaussianBlur(m, (k2, k2), float(rng.integers(5, 46)) * k)
    if m.max() <= 0:
        raise BlendingError("i2g: the blending mask is empty")
    m = cv2.resize(m / m.max(), (w, h))
    return np.clip(m, 0.0, 1.0).astype(np.float32)


def i2g_blend(
    image: np.ndarray,
    landmarks: np.ndarray,
    partner: tuple[np.ndarray, np.ndarray],
    rng: np.random.Generator,
) -> tuple[np.ndarray, np.ndarray]:
    """The I2G fake of real ``image`` with ``partner = (image, landmarks)``: ``(uint8, mask M)``."""
    h, w = image.shape[:2]
    foreground = partner[0]
    if foreground.shape != image.shape:
        foreground = cv2.resize(foreground, (w, h), interpolation=cv2.INTER_AREA)
    points = np.clip(np.asarray(landmarks, np.float32), 0, [w - 1, h - 1])
    hull = hull_mask((h, w), points, HULL_TYPES[int(rng.integers(len(HULL_TYPES)))])
    if hull.sum() == 0:
        raise BlendingError("i2g: the landmark hull is empty (degenerate landmarks)")
    source, mask = random_affine(foreground, hull, rng)
    k = h / REFERENCE_SIZE
    mask = elastic(mask, rng, alpha=50.0 * k, sigma=7.0 * k)
    if mask.max() <= 0:
        mask = hull
    source = match_colours(source, image, mask)
    blend = soft_mask(mask, rng)
    m = blend[..., None]
    out = np.clip(
        np.round(source.astype(np.float32) * m + image.astype(np.float32) * (1 - m)), 0, 255
    )
    return out.astype(np.uint8), blend
