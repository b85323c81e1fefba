"""Head yaw from dlib's 68 landmarks, to drop non-frontal faces (paper 000, "Dataset": "we have
also removed ... images with non-frontal faces").

The yaw is the rotation about the vertical axis of a generic 3D face model fitted to six
landmarks (nose tip 30, chin 8, outer eye corners 36 / 45, mouth corners 48 / 54) with
``cv2.solvePnP`` under a pinhole camera whose focal length is the image width. The model's
coordinates (millimetres, nose tip at the origin) are the usual average-head values; the
estimate is coarse (a few degrees) but monotonic in the true yaw, which a frontal filter needs.
"""

from __future__ import annotations

import cv2
import numpy as np

from fairforensics.fairness.metamorphic.regions import check_landmarks

NON_FRONTAL = "non-frontal face"  # the reason a skipped face is given
POSE_POINTS = (30, 8, 36, 45, 48, 54)
MODEL_3D = np.array(
    [
        (0.0, 0.0, 0.0),  # nose tip
        (0.0, -63.6, -12.5),  # chin
        (-43.3, 32.7, -26.0),  # right eye, outer corner (image left)
        (43.3, 32.7, -26.0),  # left eye, outer corner
        (-28.9, -28.9, -24.1),  # right mouth corner
        (28.9, -28.9, -24.1),  # left mouth corner
    ]
)


def estimate_yaw(landmarks: np.ndarray, shape_hw: tuple[int, int]) -> float:
    """Absolute head yaw in degrees (0 = frontal) of a face in an image of ``shape_hw``."""
    lm = check_landmarks(landmarks)
    h, w = shape_hw
    camera = np.array([[w, 0.0, w / 2.0], [0.0, w, h / 2.0], [0.0, 0.0, 1.0]])
    image_pts = lm[list(POSE_POINTS)].copy()
    image_pts[:, 1] *= -1.0  # the model's y points up, the image's down
    image_pts[:, 1] += h
    ok, rvec, _ = cv2.solvePnP(
        MODEL_3D, image_pts, camera, np.zeros(4), flags=cv2.SOLVEPNP_ITERATIVE
    )
    if not ok:
        raise ValueError("head pose could not be estimated from the landmarks")
    rot, _ = cv2.Rodrigues(rvec)
    # yaw = rotation about the y axis in the x-y'-z'' (Tait-Bryan) decomposition
    yaw = np.degrees(np.arcsin(np.clip(-rot[2, 0], -1.0, 1.0)))
    return float(abs(yaw))
