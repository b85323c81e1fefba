"""Detector registry and models: ``build_detector(name, cfg)``, ``list_detectors()``."""

from fairforensics.detectors.base import ClipDetectorConfig, Detector, DetectorConfig
from fairforensics.detectors.registry import (
    build_detector,
    detector_family,
    get_detector_class,
    list_detectors,
    load_detector_yaml,
    register_detector,
)
from fairforensics.detectors.weights import (
    CheckpointError,
    load_detector_file,
    read_checkpoint,
    save_checkpoint,
)

__all__ = [
    "CheckpointError",
    "Detector",
    "ClipDetectorConfig",
    "DetectorConfig",
    "build_detector",
    "detector_family",
    "get_detector_class",
    "list_detectors",
    "load_detector_file",
    "load_detector_yaml",
    "read_checkpoint",
    "register_detector",
    "save_checkpoint",
]
