"""Similarity alignment and cropping of a face (DeepfakeBench, Appendix A.1 "Face Alignment").

Five points derived from dlib's 68 landmarks (eye centres, nose tip, mouth corners) are mapped
by a least-squares similarity transform (Umeyama, via scikit-image) onto the standard 5-point
template of 112x112 face crops (ArcFace / InsightFace), scaled to ``size`` and shrunk towards
the centre by the margin ``scale`` (1.3 in DeepfakeBench, "we fix the margin to be 1.3"). The
landmarks go through the same matrix, so no second detection pass on the crop is needed.
"""

from __future__ import annotations

import cv2
import numpy as np
from skimage.transform import SimilarityTransform

# Five-point template for a 112x112 crop: left eye, right eye, nose tip, left/right mouth corner.
TEMPLATE_112 = np.array(
    [
        [38.2946, 51.6963],
        [73.5318, 51.5014],
        [56.0252, 71.7366],
        [41.5493, 92.3655],
        [70.7299, 92.2041],
    ],
    dtype=np.float64,
)


def five_points(landmarks: np.ndarray) -> np.ndarray:
    """Eye centres, nose tip and mouth corners from 68 dlib landmarks, (5, 2)."""
    lm = np.asarray(landmarks, dtype=np.float64)
    if lm.shape != (68, 2):
        raise ValueError(f"expected 68x2 landmarks, got shape {lm.shape}")
    return np.stack(
        [lm[36:42].mean(axis=0), lm[42:48].mean(axis=0), lm[30], lm[48], lm[54]], axis=0
    )


def template(size: int = 256, scale: float = 1.3) -> np.ndarray:
    """Target positions of the five points in a ``size`` crop with margin ``scale``, (5, 2)."""
    if size <= 0:
        raise ValueError(f"size must be positive, got {size}")
    if scale < 1.0:
        raise ValueError(f"scale (margin) must be >= 1, got {scale}")
    centre = size / 2.0
    return (TEMPLATE_112 * (size / 112.0) - centre) / scale + centre


def alignment_matrix(landmarks: np.ndarray, size: int = 256, scale: float = 1.3) -> np.ndarray:
    """2x3 similarity matrix taking full-frame pixels to crop pixels."""
    src, dst = five_points(landmarks), template(size, scale)
    if hasattr(SimilarityTransform, "from_estimate"):  # scikit-image >= 0.26
        tform = SimilarityTransform.from_estimate(src, dst)
        ok = bool(tform)
    else:
        tform = SimilarityTransform()
        ok = tform.estimate(src, dst)
    if not ok or not np.all(np.isfinite(tform.params)) or abs(np.linalg.det(tform.params)) < 1e-12:
        raise ValueError("could not estimate the alignment (degenerate landmarks)")
    return tform.params[:2, :].astype(np.float64)


def transform_points(points: np.ndarray, matrix: np.ndarray) -> np.ndarray:
    """Apply a 2x3 affine matrix to (N, 2) points."""
    pts = np.asarray(points, dtype=np.float64)
    return (pts @ matrix[:, :2].T + matrix[:, 2]).astype(np.float32)


def align_face(
    rgb: np.ndarray, landmarks: np.ndarray, size: int = 256, scale: float = 1.3
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Aligned crop (size x size x 3 uint8), the 2x3 matrix, and the landmarks in the crop."""
    if not isinstance(rgb, np.ndarray) or rgb.ndim != 3 or rgb.shape[2] != 3:
        raise ValueError(f"expected an HxWx3 image, got shape {getattr(rgb, 'shape', None)}")
    return warp_face(rgb, landmarks, alignment_matrix(landmarks, size, scale), size)


def warp_face(
    rgb: np.ndarray, landmarks: np.ndarray, matrix: np.ndarray, size: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``align_face`` with a given 2x3 matrix (e.g. one shared by every frame of a clip)."""
    return warp_image(rgb, matrix, size), matrix, transform_points(landmarks, matrix)


def warp_image(rgb: np.ndarray, matrix: np.ndarray, size: int) -> np.ndarray:
    """The ``size`` x ``size`` crop of ``rgb`` under a 2x3 alignment matrix (bilinear)."""
    return cv2.warpAffine(
        rgb, matrix, (size, size), flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_CONSTANT
    )


def warp_mask(mask: np.ndarray, matrix: np.ndarray, size: int, threshold: int = 128) -> np.ndarray:
    """Warp a mask frame (HxW or HxWx3) with an alignment matrix and binarise it to {0, 255}."""
    if mask.ndim == 3:
        mask = mask.max(axis=2)
    warped = cv2.warpAffine(mask, matrix, (size, size), flags=cv2.INTER_LINEAR)
    return np.where(warped >= threshold, 255, 0).astype(np.uint8)
