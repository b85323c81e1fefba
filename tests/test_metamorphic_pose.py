"""Head yaw from landmarks (the non-frontal filter of paper 000), on projected model faces."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from fairforensics.fairness.metamorphic.pose import MODEL_3D, POSE_POINTS, estimate_yaw
from fairforensics.fairness.metamorphic.regions import LandmarkError


def projected_landmarks(yaw: float, pitch: float = 0.0, size: int = 256) -> np.ndarray:
    """68 landmarks whose six pose points are the 3D model seen at ``yaw`` (then ``pitch``)."""
    rot = cv2.Rodrigues(np.array([np.radians(pitch), 0.0, 0.0]))[0]
    rot = rot @ cv2.Rodrigues(np.array([0.0, np.radians(yaw), 0.0]))[0]
    camera = np.array([[size, 0, size / 2], [0, size, size / 2], [0, 0, 1.0]])
    pts, _ = cv2.projectPoints(
        MODEL_3D, cv2.Rodrigues(rot)[0], np.array([0, 0, 500.0]), camera, np.zeros(4)
    )
    pts = pts[:, 0]
    pts[:, 1] = size - pts[:, 1]
    lm = np.full((68, 2), size / 2.0)
    lm[list(POSE_POINTS)] = pts
    return lm


@pytest.mark.parametrize("yaw", [0.0, 10.0, 25.0, -40.0])
def test_yaw_of_a_rotated_model_face(yaw: float) -> None:
    assert estimate_yaw(projected_landmarks(yaw), (256, 256)) == pytest.approx(abs(yaw), abs=0.1)
    assert estimate_yaw(projected_landmarks(yaw, pitch=10.0), (256, 256)) == pytest.approx(
        abs(yaw), abs=1.5
    )


def test_yaw_bad_landmarks() -> None:
    with pytest.raises(LandmarkError, match="68x2"):
        estimate_yaw(np.zeros((5, 2)), (64, 64))
