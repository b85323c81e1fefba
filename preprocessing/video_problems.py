"""Why a video cannot be opened, in words (issue 40, item 9), and libav's own log lines kept
off the terminal unless asked for.

``cv2.VideoCapture`` only says that it failed, and its FFmpeg prints lines such as ``moov atom
not found`` straight to stderr. :func:`why_unopenable` asks PyAV (whose libav log is silent)
and reads the file's first bytes to tell an empty file, a file that is no video container, a
truncated or damaged container and a container without a video stream apart.
"""

from __future__ import annotations

import os
from pathlib import Path

#: first bytes -> container, for the formats of ``video.VIDEO_SUFFIXES``
_SIGNATURES: tuple[tuple[int, bytes, str], ...] = (
    (4, b"ftyp", "MP4/QuickTime"),
    (4, b"moov", "QuickTime"),
    (4, b"mdat", "MP4/QuickTime"),
    (4, b"free", "MP4/QuickTime"),
    (0, b"\x1a\x45\xdf\xa3", "Matroska/WebM"),
    (0, b"RIFF", "AVI"),
    (0, b"\x00\x00\x01\xba", "MPEG program stream"),
    (0, b"\x30\x26\xb2\x75", "ASF/WMV"),
)

#: libav's level for OpenCV's FFmpeg (read at its first capture): quiet, or warnings and errors
_QUIET, _VERBOSE = "-8", "24"


def container_of(path: str | Path) -> str | None:
    """The container the file's first bytes announce (None: none known)."""
    with open(path, "rb") as f:
        head = f.read(12)
    for offset, magic, name in _SIGNATURES:
        if head[offset : offset + len(magic)] == magic:
            return name
    return None


def why_unopenable(path: str | Path) -> str:
    """Why ``path`` gives no video: ``file not found``, ``empty file``, ``no video container
    ...``, ``truncated or damaged ... file ...``, ``no video stream ...``, or libav's error."""
    import av

    path = Path(path)
    if not path.is_file():
        return "file not found"
    if path.stat().st_size == 0:
        return "empty file (0 bytes)"
    try:
        with av.open(str(path)) as container:
            streams = [s.type for s in container.streams]
            if "video" not in streams:
                found = ", ".join(streams) or "none"
                return f"no video stream (the container holds: {found})"
    except av.error.InvalidDataError:
        known = container_of(path)
        if known is None:
            return "no video container: the content is no known video format (a renamed file?)"
        return (
            f"truncated or damaged {known} file: it starts as one but its index cannot be read "
            "(an interrupted download or copy?)"
        )
    except (av.error.FFmpegError, OSError) as exc:
        return f"{type(exc).__name__}: {exc}"
    return "the decoder opens no frame of it"


def libav_messages(verbose: bool) -> None:
    """Show libav's own log lines (``verbose``: warnings and errors, through PyAV's logger and
    OpenCV's FFmpeg on stderr) or keep them off the terminal (the default at import of
    ``preprocessing.video``; a user's ``OPENCV_FFMPEG_LOGLEVEL`` wins). Call it before the
    first video is opened."""
    if verbose:
        import av.logging

        os.environ["OPENCV_FFMPEG_LOGLEVEL"] = _VERBOSE
        av.logging.set_level(av.logging.WARNING)
    else:
        os.environ.setdefault("OPENCV_FFMPEG_LOGLEVEL", _QUIET)
