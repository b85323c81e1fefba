"""Face detection (dlib HOG or CNN, or MTCNN) and dlib's 68-point landmarks.

dlib is DeepfakeBench's detector (Appendix A.1 "Face Detection"); MTCNN (``preprocessing.mtcnn``)
is the detector paper 001 crops its PAD faces with. Detection runs on a copy downscaled to
``detect_max_side`` pixels (the HOG detector is the bottleneck of DeepfakeBench's pipeline), for
HOG on its grey (luma) version, and boxes are mapped back to full resolution; the 68-point
predictor then runs on the full-resolution colour frame. In a video, the size of the face found
in one kept frame lets the next one be searched on a coarser copy (``face_size``). The models
ship in the PyPI package ``face-recognition-models`` and are loaded lazily, once per process.
"""

from __future__ import annotations

import importlib.util
import logging
from functools import cache
from pathlib import Path
from typing import Any, Literal

import cv2
import numpy as np

from fairforensics.preprocessing.align import five_points

logger = logging.getLogger(__name__)

Box = tuple[int, int, int, int]  # left, top, right, bottom (full-resolution pixels)

DETECTORS = ("hog", "cnn", "mtcnn")

# dlib-convention box from an MTCNN face: a square centred on the mean of MTCNN's five points
# whose side is this many times the geometric mean of MTCNN's box width and height. Fitted
# against dlib HOG boxes (upsample 0, colour scan, 640 px) by scripts/fit_mtcnn_box_side.py on
# 83 faces of ../shared/data (PAD photos, face_recognition, facenet-pytorch, celebrities). Refit
# when MTCNN became facenet-pytorch's pipeline (issue 23): best 0.925, mean IoU 0.8367 against
# 0.8366 here (flat from 0.91 to 0.93), median 0.856, min 0.43 (a face cut by the border, whose
# MTCNN box runs far out of the image); the previous pipeline gave 0.915, mean 0.839. dlib's own
# box moves as much between upsample 0 and 1 (IoU 0.64 on pad/silent_face/image_T1.jpg). dlib's
# 68-point predictor expects boxes of its detector's convention.
MTCNN_BOX_SIDE = 0.92

# Smallest face (box side, pixels) each detector finds without upsampling: dlib's HOG and MMOD
# models scan 80x80 windows; MTCNN's is preprocessing.mtcnn.MIN_FACE_SIZE (not imported: torch).
SMALLEST_FACE = {"hog": 80.0, "cnn": 80.0, "mtcnn": 20.0}
# With a face size from the previous kept frame, detect on a copy where that face is this many
# times the smallest findable face: it may shrink by a fifth before the fallback is needed
# (on the FF++-like benchmark videos no frame needed it; 1.5 cost a quarter more CPU).
FACE_SIZE_MARGIN = 1.25


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


def dlib_box_from_mtcnn(box: np.ndarray, points: np.ndarray) -> tuple[float, float, float, float]:
    """dlib-convention square box (left, top, right, bottom) for an MTCNN box and its 5 points."""
    x1, y1, x2, y2 = (float(v) for v in box)
    p = np.asarray(points, dtype=np.float64)
    if p.shape != (5, 2):
        raise ValueError(f"expected 5x2 points, got shape {p.shape}")
    half = MTCNN_BOX_SIDE * np.sqrt(max(x2 - x1, 0.0) * max(y2 - y1, 0.0)) / 2
    cx, cy = p.mean(axis=0)
    return cx - half, cy - half, cx + half, cy + half


def check_rgb(rgb: np.ndarray) -> np.ndarray:
    """``rgb`` as a contiguous HxWx3 uint8 array; a ValueError naming what is wrong otherwise."""
    if not isinstance(rgb, np.ndarray) or rgb.ndim != 3 or rgb.shape[2] != 3:
        shape = getattr(rgb, "shape", None)
        raise ValueError(f"expected an HxWx3 RGB image, got shape {shape}")
    if rgb.dtype != np.uint8:
        raise ValueError(f"expected a uint8 image, got dtype {rgb.dtype}")
    return np.ascontiguousarray(rgb)


class FaceAnalyzer:
    """Face boxes and 68-point landmarks with dlib.

    ``detector``: ``"hog"`` (dlib's frontal HOG+SVM detector, the DeepfakeBench default) or
    ``"cnn"`` (dlib's MMOD CNN detector) or ``"mtcnn"`` (``preprocessing.mtcnn``; boxes are
    converted to dlib's convention by ``dlib_box_from_mtcnn`` so that the 68-point predictor
    and the alignment behave as with dlib's boxes). ``upsample``: times the detector upsamples
    the image (MTCNN: each halves its minimum face size of 20 pixels instead).
    ``device``: where MTCNN runs (dlib always runs on the CPU).
    ``detect_max_side``: detect on a copy whose longest side is at most this many pixels
    (``None`` or 0: full resolution). ``retry_upsample``: when nothing is found, try again
    with up to this many more upsamplings of the same copy (small faces; costs only on frames
    without a detection). ``detect_on``: HOG scans the ``"gray"`` (luma) copy, a fifth less
    CPU than the ``"rgb"`` one DeepfakeBench scans (the same boxes on 164 of the 165 photos of
    ../shared/data); CNN and MTCNN always see the colour copy.
    """

    def __init__(
        self,
        detector: Literal["hog", "cnn", "mtcnn"] = "hog",
        upsample: int = 0,
        detect_max_side: int | None = 640,
        retry_upsample: int = 0,
        device: str = "cpu",
        detect_on: Literal["gray", "rgb"] = "gray",
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
        self.device = device
        if detect_on not in ("gray", "rgb"):
            raise ValueError(f"detect_on must be 'gray' or 'rgb', got {detect_on!r}")
        self.gray = detect_on == "gray" and detector == "hog"

    def detect(self, rgb: np.ndarray, face_size: float | None = None) -> list[Box]:
        """Face boxes (left, top, right, bottom) in full-resolution pixels, largest first.

        ``face_size``: side (full-resolution pixels) of the face expected, e.g. the one found in
        the previous kept frame of a video. Detection then runs first on the coarsest copy where
        such a face is still ``FACE_SIZE_MARGIN`` times the smallest findable face, and only when
        that finds nothing as without it. Faces much smaller than ``face_size`` can go unseen
        when a larger one is found, so it suits ``keep: largest`` only.
        """
        return [box for box, _ in self._detect(rgb, face_size)]

    def detect_batch(self, frames: list[np.ndarray]) -> list[list[Box]]:
        """``[self.detect(f) for f in frames]`` (no ``face_size``), batched with MTCNN.

        MTCNN runs its cascade once on the detection copies of all frames of one size (e.g. the
        kept frames of a video; frames of other sizes form their own batches), and each retry
        upsampling once on the frames where nothing was found yet. dlib's detectors run frame
        by frame.
        """
        frames = [check_rgb(f) for f in frames]
        if self.detector != "mtcnn":
            return [self.detect(f) for f in frames]
        out: list[list[Box]] = [[] for _ in frames]
        by_size: dict[tuple[int, ...], list[int]] = {}
        for k, rgb in enumerate(frames):
            by_size.setdefault(rgb.shape, []).append(k)
        for ks in by_size.values():
            scale = self._scale(*frames[ks[0]].shape[:2])
            copies = {k: self._copy(frames[k], scale) for k in ks}
            pending = ks
            for upsample in range(self.upsample, self.upsample + self.retry_upsample + 1):
                found = self._mtcnn([copies[k] for k in pending], upsample)
                for k, faces in zip(pending, found, strict=True):
                    out[k] = [b for b, _ in self._full_res(frames[k], scale, copies[k], faces)]
                pending = [k for k in pending if not out[k]]
                if not pending:
                    break
        return out

    def detect_five(self, rgb: np.ndarray) -> list[tuple[Box, np.ndarray]]:
        """(box, five points (5, 2): eye centres, nose tip, mouth corners) per face, largest
        first: MTCNN's own points with ``"mtcnn"``, else derived from dlib's 68 landmarks."""
        if self.detector != "mtcnn":
            rgb = check_rgb(rgb)
            return [(box, five_points(self.landmarks(rgb, box))) for box in self.detect(rgb)]
        return self._detect(rgb)  # type: ignore[return-value]

    def _detect(
        self, rgb: np.ndarray, face_size: float | None = None
    ) -> list[tuple[Box, np.ndarray | None]]:
        rgb = check_rgb(rgb)
        h, w = rgb.shape[:2]
        scale = self._scale(h, w)
        smallest = SMALLEST_FACE[self.detector] / 2**self.upsample
        if face_size is not None and face_size > 0:
            coarse = FACE_SIZE_MARGIN * smallest / face_size
            if coarse < scale and min(h, w) * coarse >= smallest:
                found = self._detect_at(rgb, coarse, self.upsample)
                if found:
                    return found
        image = self._copy(rgb, scale)
        for upsample in range(self.upsample, self.upsample + self.retry_upsample + 1):
            found = self._detect_at(rgb, scale, upsample, image)
            if found:
                break
        return found

    def _scale(self, h: int, w: int) -> float:
        """Scale of the detection copy of an h x w frame (``detect_max_side``)."""
        if self.detect_max_side and max(h, w) > self.detect_max_side:
            return self.detect_max_side / max(h, w)
        return 1.0

    def _copy(self, rgb: np.ndarray, scale: float) -> np.ndarray:
        """The image the detector scans: grey for HOG unless ``detect_on="rgb"``, resized."""
        image = cv2.cvtColor(rgb, cv2.COLOR_RGB2GRAY) if self.gray else rgb
        if scale < 1.0:
            h, w = rgb.shape[:2]
            size = (max(1, round(w * scale)), max(1, round(h * scale)))
            image = cv2.resize(image, size, interpolation=cv2.INTER_AREA)
        return image

    def _detect_at(
        self, rgb: np.ndarray, scale: float, upsample: int, image: np.ndarray | None = None
    ) -> list[tuple[Box, np.ndarray | None]]:
        """Faces found on the copy at ``scale``, in full-resolution pixels, largest first."""
        small = self._copy(rgb, scale) if image is None else image
        return self._full_res(rgb, scale, small, self._detect_once(small, upsample))

    def _full_res(
        self,
        rgb: np.ndarray,
        scale: float,
        small: np.ndarray,
        found: list[tuple[tuple[float, float, float, float], np.ndarray | None]],
    ) -> list[tuple[Box, np.ndarray | None]]:
        """Faces ``found`` on the copy ``small`` mapped to ``rgb``'s pixels, largest first."""
        h, w = rgb.shape[:2]
        faces = []
        for (left, top, right, bottom), points in found:
            left = int(round(max(left, 0) / scale))
            top = int(round(max(top, 0) / scale))
            right = int(round(min(right, small.shape[1] - 1) / scale))
            bottom = int(round(min(bottom, small.shape[0] - 1) / scale))
            if right > left and bottom > top:
                box = (left, top, min(right, w - 1), min(bottom, h - 1))
                faces.append((box, None if points is None else (points / scale).astype(np.float32)))
        faces.sort(key=lambda f: (f[0][2] - f[0][0]) * (f[0][3] - f[0][1]), reverse=True)
        return faces

    def _detect_once(
        self, small: np.ndarray, upsample: int
    ) -> list[tuple[tuple[float, float, float, float], np.ndarray | None]]:
        """Boxes (and MTCNN's five points) on the detection copy, in its pixels."""
        if self.detector == "mtcnn":
            return self._mtcnn([small], upsample)[0]
        found = _load(self.detector)(small, upsample)
        rects = [d.rect for d in found] if self.detector == "cnn" else list(found)
        return [((r.left(), r.top(), r.right(), r.bottom()), None) for r in rects]

    def _mtcnn(
        self, smalls: list[np.ndarray], upsample: int
    ) -> list[list[tuple[tuple[float, float, float, float], np.ndarray]]]:
        """MTCNN's dlib-convention boxes and five points on each copy (one size), in its pixels."""
        from fairforensics.preprocessing.mtcnn import MIN_FACE_SIZE, MTCNN

        mtcnn = MTCNN(MIN_FACE_SIZE / 2**upsample, device=self.device)
        return [
            [(dlib_box_from_mtcnn(b, p), p) for b, p in zip(boxes, points, strict=True)]
            for boxes, _, points in mtcnn.detect_batch(smalls)
        ]

    def landmarks(self, rgb: np.ndarray, box: Box) -> np.ndarray:
        """dlib's 68 landmarks of the face in ``box`` on the full-resolution image, (68, 2)."""
        import dlib

        rgb = check_rgb(rgb)
        if len(box) != 4:
            raise ValueError(f"box must be (left, top, right, bottom), got {box!r}")
        left, top, right, bottom = (int(v) for v in box)
        shape = _load("shape68")(rgb, dlib.rectangle(left, top, right, bottom))
        return np.array([(p.x, p.y) for p in shape.parts()], dtype=np.float32)

    def analyze(self, rgb: np.ndarray) -> list[tuple[Box, np.ndarray]]:
        """(box, landmarks) for every detected face, largest first."""
        rgb = check_rgb(rgb)
        return [(box, self.landmarks(rgb, box)) for box in self.detect(rgb)]
