"""dlib face detection and 68-point landmarks (DeepfakeBench, Appendix A.1 "Face Detection").

Detection runs on a copy downscaled to ``detect_max_side`` pixels (the HOG detector is the
bottleneck of DeepfakeBench's pipeline) and boxes are mapped back to full resolution; the
68-point predictor then runs on the full-resolution frame. The models ship in the PyPI package
``face-recognition-models`` and are loaded lazily, once per process.
"""

from __future__ import annotations

import importlib.util
import logging
from functools import cache
from pathlib import Path
from typing import Any, Literal

import cv2
import numpy as np

logger = logging.getLogger(__name__)

Box = tuple[int, int, int, int]  # left, top, right, bottom (full-resolution pixels)

DETECTORS = ("hog", "cnn")


def models_dir() -> Path:
    """Folder holding dlib's model files from the ``face-recognition-models`` package."""
    spec = importlib.util.find_spec("face_recognition_models")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError(
            "the package 'face-recognition-models' is not installed; "
            "install it with: pip install face-recognition-models"
        )
    return Path(list(spec.submodule_search_locations)[0]) / "models"


def _model_file(name: str) -> str:
    path = models_dir() / name
    if not path.is_file():
        raise RuntimeError(f"dlib model file {path} is missing; reinstall face-recognition-models")
    return str(path)


@cache
def _load(kind: str) -> Any:
    """Load one dlib model, once per process."""
    import dlib

    logger.debug("loading dlib model %s", kind)
    if kind == "hog":
        return dlib.get_frontal_face_detector()
    if kind == "cnn":
        return dlib.cnn_face_detection_model_v1(_model_file("mmod_human_face_detector.dat"))
    if kind == "shape68":
        return dlib.shape_predictor(_model_file("shape_predictor_68_face_landmarks.dat"))
    raise ValueError(f"unknown dlib model {kind!r}")


def _check_rgb(rgb: np.ndarray) -> np.ndarray:
    if not isinstance(rgb, np.ndarray) or rgb.ndim != 3 or rgb.shape[2] != 3:
        shape = getattr(rgb, "shape", None)
        raise ValueError(f"expected an HxWx3 RGB image, got shape {shape}")
    if rgb.dtype != np.uint8:
        raise ValueError(f"expected a uint8 image, got dtype {rgb.dtype}")
    return np.ascontiguousarray(rgb)


class FaceAnalyzer:
    """Face boxes and 68-point landmarks with dlib.

    ``detector``: ``"hog"`` (dlib's frontal HOG+SVM detector, the DeepfakeBench default) or
    ``"cnn"`` (dlib's MMOD CNN detector). ``upsample``: times the detector upsamples the image.
    ``detect_max_side``: detect on a copy whose longest side is at most this many pixels
    (``None`` or 0: full resolution). ``retry_upsample``: when nothing is found, try again
    with up to this many more upsamplings of the same copy (small faces; costs only on frames
    without a detection).
    """

    def __init__(
        self,
        detector: Literal["hog", "cnn"] = "hog",
        upsample: int = 0,
        detect_max_side: int | None = 640,
        retry_upsample: int = 0,
    ) -> None:
        if detector not in DETECTORS:
            raise ValueError(f"detector must be one of {DETECTORS}, got {detector!r}")
        if not isinstance(upsample, int) or upsample < 0:
            raise ValueError(f"upsample must be a non-negative integer, got {upsample!r}")
        if detect_max_side is not None and detect_max_side < 0:
            raise ValueError(f"detect_max_side must be positive, 0 or None, got {detect_max_side}")
        self.detector = detector
        self.upsample = upsample
        self.detect_max_side = detect_max_side or None
        if not isinstance(retry_upsample, int) or retry_upsample < 0:
            raise ValueError(
                f"retry_upsample must be a non-negative integer, got {retry_upsample!r}"
            )
        self.retry_upsample = retry_upsample

    def detect(self, rgb: np.ndarray) -> list[Box]:
        """Face boxes (left, top, right, bottom) in full-resolution pixels, largest first."""
        rgb = _check_rgb(rgb)
        h, w = rgb.shape[:2]
        scale = 1.0
        small = rgb
        if self.detect_max_side and max(h, w) > self.detect_max_side:
            scale = self.detect_max_side / max(h, w)
            size = (max(1, round(w * scale)), max(1, round(h * scale)))
            small = cv2.resize(rgb, size, interpolation=cv2.INTER_AREA)
        detector = _load(self.detector)
        for upsample in range(self.upsample, self.upsample + self.retry_upsample + 1):
            found = detector(small, upsample)
            if len(found):
                break
        rects = [d.rect for d in found] if self.detector == "cnn" else list(found)
        boxes = []
        for r in rects:
            left = int(round(max(r.left(), 0) / scale))
            top = int(round(max(r.top(), 0) / scale))
            right = int(round(min(r.right(), small.shape[1] - 1) / scale))
            bottom = int(round(min(r.bottom(), small.shape[0] - 1) / scale))
            if right > left and bottom > top:
                boxes.append((left, top, min(right, w - 1), min(bottom, h - 1)))
        boxes.sort(key=lambda b: (b[2] - b[0]) * (b[3] - b[1]), reverse=True)
        return boxes

    def landmarks(self, rgb: np.ndarray, box: Box) -> np.ndarray:
        """dlib's 68 landmarks of the face in ``box`` on the full-resolution image, (68, 2)."""
        import dlib

        rgb = _check_rgb(rgb)
        if len(box) != 4:
            raise ValueError(f"box must be (left, top, right, bottom), got {box!r}")
        left, top, right, bottom = (int(v) for v in box)
        shape = _load("shape68")(rgb, dlib.rectangle(left, top, right, bottom))
        return np.array([(p.x, p.y) for p in shape.parts()], dtype=np.float32)

    def analyze(self, rgb: np.ndarray) -> list[tuple[Box, np.ndarray]]:
        """(box, landmarks) for every detected face, largest first."""
        rgb = _check_rgb(rgb)
        return [(box, self.landmarks(rgb, box)) for box in self.detect(rgb)]
