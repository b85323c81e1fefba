"""What ``detect`` returns: per file its status, score, verdict and the faces it scored."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np

Status = Literal["scored", "no_face", "failed"]
STATUSES = ("scored", "no_face", "failed")

#: the dataset name of ``make demo``'s index (configs/preprocess/demo.yaml)
DEMO_DATA = "demo"


@dataclass
class FaceScore:
    """One scored face: a frame's crop, or a video detector's clip of crops."""

    frame: int  # the source frame number (a clip: its first frame)
    frames: list[int]  # every frame number it covers (one, or the clip's)
    track: int  # the face across frames (0: the largest face, or --all-faces' first track)
    box: tuple[int, int, int, int] | None  # the detector's box (left, top, right, bottom)
    score: float  # probability of fake / attack
    crop: np.ndarray | None = None  # the crop scored (RGB uint8), with keep_crops
    calibrated: float | None = None  # the score through the detector's calibration, if any

    def to_json(self) -> dict[str, Any]:
        calibrated = {} if self.calibrated is None else {"score_calibrated": self.calibrated}
        return {
            "frame": self.frame,
            "frames": self.frames,
            "track": self.track,
            "box": list(self.box) if self.box is not None else None,
            "score": self.score,
            **calibrated,
        }


@dataclass
class FileResult:
    """The result of one input file."""

    path: Path
    kind: str  # image, video or other
    status: Status
    score: float | None = None  # the file's score (tracks' highest with --all-faces)
    verdict: str | None = None  # fake / real (PAD detectors: attack / bona fide)
    reason: str | None = None  # why there is no score
    faces: list[FaceScore] = field(default_factory=list)
    track_scores: dict[int, float] = field(default_factory=dict)
    frames_total: int | None = None  # frames of the file (an image: 1)
    frames_sampled: int | None = None  # frames decoded
    notes: list[str] = field(default_factory=list)
    skipped_frames: list[dict[str, Any]] = field(default_factory=list)
    #: up to ``STRIP`` faces for the report: (face, thumbnail, Grad-CAM overlay or None)
    strip: list[tuple[FaceScore, np.ndarray, np.ndarray | None]] = field(default_factory=list)
    #: the calibrated P(fake) of the score's track (the mean of its faces' calibrated scores)
    calibrated: float | None = None

    @property
    def n_faces(self) -> int:
        """Faces (frames or clips) scored."""
        return len(self.faces)

    def row(self, threshold: float) -> dict[str, Any]:
        """The ``detections.csv`` row (``score_calibrated``: read only with a calibration)."""
        return {
            "path": str(self.path),
            "kind": self.kind,
            "status": self.status,
            "score": "" if self.score is None else f"{self.score:.6f}",
            "score_calibrated": "" if self.calibrated is None else f"{self.calibrated:.6f}",
            "threshold": f"{threshold:.6g}",
            "verdict": self.verdict or "",
            "faces": self.n_faces,
            "tracks": len(self.track_scores),
            "frames_sampled": "" if self.frames_sampled is None else self.frames_sampled,
            "frames_total": "" if self.frames_total is None else self.frames_total,
            "reason": self.reason or "",
        }

    def to_json(self) -> dict[str, Any]:
        return {
            "path": str(self.path),
            "kind": self.kind,
            "status": self.status,
            "score": self.score,
            **({} if self.calibrated is None else {"score_calibrated": self.calibrated}),
            "verdict": self.verdict,
            "reason": self.reason,
            "track_scores": {str(k): v for k, v in self.track_scores.items()},
            "frames_total": self.frames_total,
            "frames_sampled": self.frames_sampled,
            "notes": self.notes,
            "skipped_frames": self.skipped_frames,
            "faces": [f.to_json() for f in self.faces],
        }


DETECTION_COLUMNS = (
    "path", "kind", "status", "score", "threshold", "verdict", "faces", "tracks",
    "frames_sampled", "frames_total", "reason",
)  # fmt: skip
FRAME_COLUMNS = ("path", "track", "frame", "frames", "left", "top", "right", "bottom", "score")
#: the column a calibration adds after ``score`` in both files
CALIBRATED_COLUMN = "score_calibrated"


def with_calibrated(columns: tuple[str, ...]) -> tuple[str, ...]:
    """``columns`` with :data:`CALIBRATED_COLUMN` after ``score``."""
    at = columns.index("score") + 1
    return (*columns[:at], CALIBRATED_COLUMN, *columns[at:])


@dataclass
class DetectResult:
    """Every file's result, and what produced them."""

    files: list[FileResult]
    detector: str
    weights: str
    threshold: float
    threshold_source: str  # the value and where it comes from (DecisionThreshold's str)
    face_settings: dict[str, Any] | None  # FaceSettings.to_json(); None with crops=True
    face_settings_source: str
    frame_num: int | None  # faces (frames or clips' frames) scored per track; None: all
    reduce: str  # how a track's face scores make its score (test.py's ``reduce``)
    device: str
    timing: dict[str, float] = field(default_factory=dict)  # CPU seconds per stage
    explain: str | None = None  # what --explain did (or why it could not)
    meta: dict[str, Any] = field(default_factory=dict)  # weights file, its sha256, run, ...
    other_files: list[str] = field(default_factory=list)  # folders' files, neither image nor video
    train_data: str = ""  # the detector's training data, names joined by "+" ("": not known)
    #: the calibration applied beside the scores (eval.json's record), or None
    calibration: dict[str, Any] | None = None

    @property
    def warnings(self) -> list[str]:
        """What the reader must know before trusting a verdict (a model trained on the demo)."""
        if DEMO_DATA in self.train_data.split("+"):
            return [
                f"the detector was trained on the demo data ({DEMO_DATA}: one synthetic face, "
                "rendered from one photograph, with self-blended fakes): its verdicts on other "
                "faces mean nothing"
            ]
        return []

    @property
    def failed(self) -> list[FileResult]:
        return [f for f in self.files if f.status == "failed"]

    def counts(self) -> dict[str, int]:
        return {s: sum(f.status == s for f in self.files) for s in STATUSES}

    def frame_rows(self) -> list[dict[str, Any]]:
        """The ``frames.csv`` rows: one per scored face (frame or clip)."""
        rows = []
        for f in self.files:
            for face in f.faces:
                box = face.box or ("", "", "", "")
                rows.append(
                    {
                        "path": str(f.path),
                        "track": face.track,
                        "frame": face.frame,
                        "frames": f"{face.frames[0]}-{face.frames[-1]}"
                        if len(face.frames) > 1
                        else str(face.frame),
                        **dict(zip(("left", "top", "right", "bottom"), box, strict=True)),
                        "score": f"{face.score:.6f}",
                        CALIBRATED_COLUMN: ""
                        if face.calibrated is None
                        else f"{face.calibrated:.6f}",
                    }
                )
        return rows

    def to_json(self) -> dict[str, Any]:
        return {
            "detector": self.detector,
            "weights": self.weights,
            "threshold": self.threshold,
            "threshold_source": self.threshold_source,
            "face_settings": self.face_settings,
            "face_settings_source": self.face_settings_source,
            "frame_num": self.frame_num,
            "reduce": self.reduce,
            "device": self.device,
            "counts": self.counts(),
            "timing_cpu_s": self.timing,
            "explain": self.explain,
            "other_files_skipped": self.other_files,
            "train_data": self.train_data,
            "warnings": self.warnings,
            **({} if self.calibration is None else {"calibration": self.calibration}),
            **self.meta,
            "files": [f.to_json() for f in self.files],
        }
