"""``detect``: score your own videos and images with any detector (issue 32). See
:func:`evaluation.detection.detect.detect`; the command is ``fairforensics detect``."""

from fairforensics.evaluation.detection.detect import detect, exit_code
from fairforensics.evaluation.detection.outputs import terminal_table, write_outputs
from fairforensics.evaluation.detection.results import DetectResult, FaceScore, FileResult

__all__ = [
    "DetectResult",
    "FaceScore",
    "FileResult",
    "detect",
    "exit_code",
    "terminal_table",
    "write_outputs",
]
