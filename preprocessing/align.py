"""Similarity alignment and cropping of a face (DeepfakeBench, Appendix A.1 "Face Alignment").

Five points derived from dlib's 68 landmarks (eye centres, nose tip, mouth corners) are mapped
by a least-squares similarity transform (Umeyama, via scikit-image) onto the standard 5-point
template of 112x112 face crops (ArcFace / InsightFace), scaled to ``size`` and shrunk towards
the centre by the margin ``scale`` (1.3 in DeepfakeBench, "we fix the margin to be 1.3"). The
landmarks go through the same matrix, so no second detection pass on the crop is needed.

:func:`crop_matrix` also makes the MesoNet authors' crop (``method: mesonet``, see
:class:`configs.crop.CropSpec`): upright, centred on the nose, side ``scale`` x max(eye
distance, eye-to-mouth distance).
"""

from __future__ import annotations

import cv2
import numpy as np
from skimage.transform import SimilarityTransform

from fairforensics.configs.crop import CropSpec

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


def eye_mouth_points(landmarks: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The two eye centres and the lips' centre that the MesoNet authors measure a face with:
    the means of dlib points 36-41 and 42-47, and the midpoint of the means of the top lip
    (48-54, 60-64) and the bottom lip (54-60, 64-67) as face_recognition groups them."""
    lm = np.asarray(landmarks, dtype=np.float64)
    if lm.shape != (68, 2):
        raise ValueError(f"expected 68x2 landmarks, got shape {lm.shape}")
    top = lm[[*range(48, 55), 64, 63, 62, 61, 60]].mean(axis=0)
    bottom = lm[[*range(54, 60), 48, 60, 67, 66, 65, 64]].mean(axis=0)
    return lm[36:42].mean(axis=0), lm[42:48].mean(axis=0), (top + bottom) / 2


def face_span(landmarks: np.ndarray) -> float:
    """max(eye distance, eye-to-mouth distance) in pixels: the length the MesoNet authors scale
    their crop by (the distance of the eye centres, and of their midpoint to the lips' centre)."""
    left, right, mouth = eye_mouth_points(landmarks)
    return float(max(np.linalg.norm(right - left), np.linalg.norm(mouth - (left + right) / 2)))


def mesonet_matrix(landmarks: np.ndarray, size: int = 256, scale: float = 2.86) -> np.ndarray:
    """2x3 matrix of the MesoNet authors' crop (their ``FaceFinder.get_aligned_face``): the line
    from the eyes' midpoint to the lips' centre made vertical, the middle of the nose (mean of
    the nose-bridge and nose-tip points) at the centre, side ``scale`` x :func:`face_span`."""
    if size <= 0 or scale < 1.0:
        raise ValueError(f"need size > 0 and scale >= 1, got size {size}, scale {scale}")
    lm = np.asarray(landmarks, dtype=np.float64)
    left, right, mouth = eye_mouth_points(lm)
    axis = mouth - (left + right) / 2
    length = np.linalg.norm(axis)
    side = scale * face_span(lm)
    if not np.isfinite(side) or side < 1e-6 or length < 1e-6:
        raise ValueError("could not estimate the alignment (degenerate landmarks)")
    ux, uy = axis / length
    rotation = np.array([[uy, -ux], [ux, uy]])  # takes the eyes-to-mouth direction to (0, 1)
    nose = lm[31:36].mean(axis=0) / 2 + lm[27:31].mean(axis=0) / 2
    linear = rotation * (size / side)
    shift = np.array([size / 2.0, size / 2.0]) - linear @ nose
    return np.hstack([linear, shift[:, None]])


def crop_matrix(landmarks: np.ndarray, crop: CropSpec) -> np.ndarray:
    """2x3 matrix taking full-frame pixels to the pixels of the crop ``crop`` describes."""
    if crop.method == "mesonet":
        return mesonet_matrix(landmarks, crop.size, crop.scale)
    return alignment_matrix(landmarks, crop.size, crop.scale)


def crop_face(
    rgb: np.ndarray, landmarks: np.ndarray, crop: CropSpec
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`align_face` for any :class:`~configs.crop.CropSpec`: the crop, the 2x3 matrix and
    the landmarks in the crop."""
    if not isinstance(rgb, np.ndarray) or rgb.ndim != 3 or rgb.shape[2] != 3:
        raise ValueError(f"expected an HxWx3 image, got shape {getattr(rgb, 'shape', None)}")
    return warp_face(rgb, landmarks, crop_matrix(landmarks, crop), crop.size)


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
