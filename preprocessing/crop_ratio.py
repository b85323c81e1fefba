"""Measure a face crop as the MesoNet authors size theirs: the crop side over max(eye distance,
eye-to-mouth distance), with dlib's 68 landmarks found on the crop itself (``scripts/
measure_crops.py`` prints it for a folder of crops and for our crops of the same faces).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fairforensics.configs.crop import CropSpec
from fairforensics.preprocessing.align import crop_face, eye_mouth_points, face_span
from fairforensics.preprocessing.faces import FaceAnalyzer


@dataclass(frozen=True)
class CropMeasure:
    """What dlib sees in a square crop: ``ratio`` = side / max(eye distance, eye-to-mouth
    distance); ``nose`` = the middle of the nose (the MesoNet authors' crop centre) as fractions
    of the side; ``tilt`` = degrees of the eyes-to-mouth line from the vertical."""

    ratio: float
    nose: tuple[float, float]
    tilt: float


def measure(rgb: np.ndarray, landmarks: np.ndarray) -> CropMeasure:
    """The :class:`CropMeasure` of ``rgb`` (a crop, width = side) given its 68 landmarks."""
    side = float(rgb.shape[1])
    left, right, mouth = eye_mouth_points(landmarks)
    axis = mouth - (left + right) / 2
    lm = np.asarray(landmarks, np.float64)
    nose = lm[31:36].mean(axis=0) / 2 + lm[27:31].mean(axis=0) / 2
    return CropMeasure(
        ratio=side / face_span(landmarks),
        nose=(float(nose[0] / side), float(nose[1] / side)),
        tilt=float(np.degrees(np.arctan2(axis[0], axis[1]))),
    )


def measure_crop(rgb: np.ndarray, analyzer: FaceAnalyzer) -> CropMeasure | None:
    """:func:`measure` with the landmarks of the largest face ``analyzer`` finds (None: none)."""
    found = analyzer.analyze(rgb)
    return measure(rgb, found[0][1]) if found else None


def recrop(rgb: np.ndarray, crop: CropSpec, analyzer: FaceAnalyzer) -> np.ndarray | None:
    """Our crop ``crop`` of the largest face in ``rgb`` (None: no face found)."""
    found = analyzer.analyze(rgb)
    return crop_face(rgb, found[0][1], crop)[0] if found else None


def compare_crops(
    images: list[np.ndarray], crops: list[CropSpec], analyzer: FaceAnalyzer | None = None
) -> list[dict[str, CropMeasure | None]]:
    """Per image: its own :class:`CropMeasure` (``"given"``) and that of our crop of the same
    face for each of ``crops`` (keyed by ``"<method> <scale>"``), every one measured with the
    landmarks dlib finds on that crop. ``analyzer``: dlib HOG, one upsampling, full resolution."""
    analyzer = analyzer or FaceAnalyzer("hog", upsample=1, detect_max_side=None)
    rows = []
    for rgb in images:
        row = {"given": measure_crop(rgb, analyzer)}
        for crop in crops:
            ours = recrop(rgb, crop, analyzer)
            row[f"{crop.method} {crop.scale:g}"] = (
                None if ours is None else measure_crop(ours, analyzer)
            )
        rows.append(row)
    return rows
