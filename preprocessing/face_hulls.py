"""Face-region masks from 68 dlib landmarks: the four hull types of the faceswap/DeepFaceLab masks
that SBI, PCL-I2G and DeepfakeBench's blending datasets draw at random (DeepfakeBench
``training/dataset/utils/DeepFakeMask.py``: ``dfl_full``, ``extended``, ``components``,
``facehull``).

Each is a union of filled convex hulls of landmark subsets (0-based dlib indices):

* ``dfl_full``: jaw + mouth, nose ridge + nose tip, eyebrows + the face's top corners.
* ``components``: eight parts (both jaw halves, cheeks, nose ridge, both eye regions, nose).
* ``extended``: ``components`` with the eyebrows moved half their distance to the eyes further up
  the forehead.
* ``facehull``: the hull of all 68 points.
"""

from __future__ import annotations

from collections.abc import Sequence

import cv2
import numpy as np

HULL_TYPES = ("dfl_full", "extended", "components", "facehull")


def _fill(shape_hw: Sequence[int], parts: list[np.ndarray]) -> np.ndarray:
    mask = np.zeros((int(shape_hw[0]), int(shape_hw[1])), dtype=np.uint8)
    for points in parts:
        hull = cv2.convexHull(np.round(points).astype(np.int32))
        cv2.fillConvexPoly(mask, hull, 1)
    return mask.astype(np.float32)


def _components(p: np.ndarray) -> list[np.ndarray]:
    chin = p[8:9]
    return [
        np.concatenate([p[0:9], p[17:18]]),  # right jaw
        np.concatenate([p[8:17], p[26:27]]),  # left jaw
        np.concatenate([p[17:20], chin]),  # right cheek
        np.concatenate([p[24:27], chin]),  # left cheek
        np.concatenate([p[19:25], chin]),  # nose ridge
        np.concatenate([p[17:22], p[27:28], p[31:36], chin]),  # right eye
        np.concatenate([p[22:27], p[27:28], p[31:36], chin]),  # left eye
        np.concatenate([p[27:31], p[31:36]]),  # nose
    ]


def hull_mask(shape_hw: Sequence[int], landmarks: np.ndarray, kind: str) -> np.ndarray:
    """Float32 H x W mask, 1 inside the face region ``kind`` (one of :data:`HULL_TYPES`)."""
    p = np.asarray(landmarks, dtype=np.float32).reshape(-1, 2)
    if p.shape != (68, 2) or not np.isfinite(p).all():
        raise ValueError(f"hull_mask: expected 68 finite (x, y) landmarks, got {p.shape}")
    if kind == "facehull":
        return _fill(shape_hw, [p])
    if kind == "dfl_full":
        jaw = np.concatenate([p[0:17], p[48:68], p[0:1], p[8:9], p[16:17]])
        nose = np.concatenate([p[27:31], p[33:34]])
        brows = np.concatenate([p[17:27], p[0:1], p[27:28], p[16:17], p[33:34]])
        return _fill(shape_hw, [jaw, nose, brows])
    if kind == "components":
        return _fill(shape_hw, _components(p))
    if kind == "extended":
        q = np.floor(p).astype(np.float32)  # DeepFakeMask works on integer landmarks
        mid_l, mid_r = np.floor((q[36] + q[0]) / 2), np.floor((q[16] + q[45]) / 2)
        quarter_l, quarter_r = np.floor((q[36] + mid_l) / 2), np.floor((q[45] + mid_r) / 2)
        bottom_l = np.stack([quarter_l, q[36], q[37], q[38], q[39]])
        bottom_r = np.stack([q[42], q[43], q[44], q[45], quarter_r])
        q[17:22] = q[17:22] + np.floor((q[17:22] - bottom_l) / 2)
        q[22:27] = q[22:27] + np.floor((q[22:27] - bottom_r) / 2)
        return _fill(shape_hw, _components(q))
    raise ValueError(f"unknown hull type {kind!r}; known: {', '.join(HULL_TYPES)}")
