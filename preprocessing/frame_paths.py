"""Which video of which dataset a frame path belongs to, read from the dataset's folder layout.

Public annotation files (demographic labels, ``preprocessing.demographics``) name frames by
path. The first rule that applies identifies the video; a frame number alone (``003.png``)
never names one:

============  ==============================================  ====================================
layout        recognised by                                   video
============  ==============================================  ====================================
FF++          ``original_sequences/youtube`` (real) or        the first later folder (or video
              ``manipulated_sequences/<method>`` (official     file) named ``NNN`` (real) or
              and DeepfakeBench folders); a bare ``youtube``  ``NNN_NNN`` (fake)
              or FF++ method folder followed by such an id
DFD           ``original_sequences/actors`` (real) or         the first later folder or video
              ``manipulated_sequences/DeepFakeDetection``     ``NN__scene`` / ``NN_NN__scene__ID``
Celeb-DF      a folder ``Celeb-real``, ``YouTube-real``       the first later folder or video
              (real) or ``Celeb-synthesis`` (fake)             ``idN_NNNN`` / ``idN_idM_NNNN`` /
                                                              ``NNNNN``, or an image
                                                              ``<video>_<frame>``
DFDC          a folder whose name starts with ``dfdc``        the nearest folder or video of 10
              (not DFDC-P)                                    lower-case letters, or an image
                                                              ``<video>_<frame>``
FF++ (names)  a file ``<n>_<method>_<t>_<s>_<frame>`` or      ``<t>_<s>`` of ``<method>``; the
              ``<n>_youtube_<v>_<frame>`` (AI-Face)           real ``<v>`` (zero-padded to 3)
generic       anything else                                   a video file's stem, or the nearest
                                                              folder that is not a container
                                                              (``frames``, ``c23``, ``real``...)
============  ==============================================  ====================================

Layouts whose folder names are unambiguous (``original_sequences``, ``manipulated_sequences``,
the Celeb-DF folders, a ``dfdc*`` folder) give no video when the id is missing
(``.../frames/003.png``); a bare ``youtube`` or method folder without an id falls through to the
next rule.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import PurePosixPath

from fairforensics.preprocessing.datasets.deepfake import CELEB_FOLDERS
from fairforensics.preprocessing.datasets.faceforensics import FF_METHODS
from fairforensics.preprocessing.video import VIDEO_SUFFIXES

FF, DFD, CELEB, DFDC, GENERIC = "FF++", "DFD", "Celeb-DF", "DFDC", "generic"
FF_METHOD_NAMES = {m.lower(): m for m in FF_METHODS}
# DeepfakeBench's label names of the FF++ methods (its JSON files) and their FF++ folders
FF_LABEL_NAMES = {
    "ff-df": "Deepfakes",
    "ff-f2f": "Face2Face",
    "ff-fs": "FaceSwap",
    "ff-nt": "NeuralTextures",
    "ff-fh": "FaceShifter",
}
CONTAINERS = frozenset(
    {"frames", "images", "imgs", "crops", "faces", "aligned", "cropped", "videos", "masks"}
    | {"landmarks", "c0", "c23", "c40", "raw", "train", "val", "validation", "test", "real"}
    | {"fake"}
)
_ID = {
    (FF, 0): re.compile(r"\d{3}"),
    (FF, 1): re.compile(r"\d{3}_\d{3}"),
    (DFD, 0): re.compile(r"\d{2}__[A-Za-z0-9_]+"),
    (DFD, 1): re.compile(r"\d{2}_\d{2}__[A-Za-z0-9_]+__[A-Za-z0-9]+"),
    ("Celeb-real", 0): re.compile(r"id\d+_\d{4}"),
    ("Celeb-synthesis", 1): re.compile(r"id\d+_id\d+_\d{4}"),
    ("YouTube-real", 0): re.compile(r"\d{5}"),
    (DFDC, None): re.compile(r"[a-z]{10}"),
}
_FF_FAKE_NAME = re.compile(r"^\d+_([A-Za-z0-9]+)_(\d+)_(\d+)_\d+$")
_FF_REAL_NAME = re.compile(r"^\d+_youtube_(\d+)_\d+$", re.IGNORECASE)
_FRAME_TAIL = re.compile(r"^(.+)[_-]\d+$")


@dataclass(frozen=True)
class VideoRef:
    """What a path says about its video: the layout, the video id (None when the layout is
    recognised but names no video), the class when the layout tells it, the manipulation method
    when certain (FF++ fakes), and for the generic layout the folder above the video as a hint."""

    layout: str
    video: str | None
    label: int | None = None
    method: str | None = None
    method_hint: str | None = None


def canonical_method(name: str) -> str:
    """A method name as compared across indexes: FF++ folders and DeepfakeBench label names
    (``FF-DF`` = ``Deepfakes``) lower-cased to one spelling."""
    low = name.strip().lower()
    return FF_LABEL_NAMES.get(low, FF_METHOD_NAMES.get(low, low)).lower()


def parse_frame_path(path: str) -> VideoRef:
    """The :class:`VideoRef` of a frame (or video) path, by the rules of the module doc."""
    p = PurePosixPath(path.replace("\\", "/"))
    parts = [x for x in p.parts if x not in ("/", ".", "")]
    for rule in (_official_ff, _celeb, _bare_ff, _dfdc, _ff_file_name):
        ref = rule(parts)
        if ref is not None:
            return ref
    return _generic(parts)


def _strip_video(name: str) -> str:
    suffix = PurePosixPath(name).suffix.lower()
    return name[: -len(suffix)] if suffix in VIDEO_SUFFIXES else name


def _is_video_file(name: str) -> bool:
    return PurePosixPath(name).suffix.lower() in VIDEO_SUFFIXES


def _first_id(parts: list[str], pattern: re.Pattern[str], images: bool) -> str | None:
    """The first folder or video file among ``parts`` (the last is the file) that is an id;
    with ``images``, also an image named ``<id>_<frame>``."""
    for i, part in enumerate(parts):
        is_file = i == len(parts) - 1
        name = _strip_video(part) if (not is_file or _is_video_file(part)) else None
        if name is not None and pattern.fullmatch(name):
            return name
        if is_file and images and name is None:
            tail = _FRAME_TAIL.match(PurePosixPath(part).stem)
            if tail and pattern.fullmatch(tail.group(1)):
                return tail.group(1)
    return None


def _official_ff(parts: list[str]) -> VideoRef | None:
    lows = [x.lower() for x in parts]
    for marker in ("original_sequences", "manipulated_sequences"):
        if marker not in lows:
            continue
        i = lows.index(marker)
        sub = lows[i + 1] if i + 1 < len(lows) else ""
        rest = parts[i + 2 :]
        if marker == "original_sequences":
            layout, label, method = (DFD, 0, None) if sub == "actors" else (FF, 0, None)
        elif sub == "deepfakedetection":
            layout, label, method = DFD, 1, None
        else:
            layout, label, method = FF, 1, FF_METHOD_NAMES.get(sub, parts[i + 1] if rest else None)
        return VideoRef(layout, _first_id(rest, _ID[(layout, label)], False), label, method)
    return None


def _celeb(parts: list[str]) -> VideoRef | None:
    lows = [x.lower() for x in parts]
    for folder, label in CELEB_FOLDERS.items():
        if folder.lower() in lows:
            rest = parts[lows.index(folder.lower()) + 1 :]
            return VideoRef(CELEB, _first_id(rest, _ID[(folder, label)], True), label)
    return None


def _bare_ff(parts: list[str]) -> VideoRef | None:
    for i, part in enumerate(parts[:-1]):
        low = part.lower()
        if low == "youtube":
            vid = _first_id(parts[i + 1 :], _ID[(FF, 0)], False)
            if vid:
                return VideoRef(FF, vid, 0)
        elif low in FF_METHOD_NAMES:
            vid = _first_id(parts[i + 1 :], _ID[(FF, 1)], False)
            if vid:
                return VideoRef(FF, vid, 1, FF_METHOD_NAMES[low])
    return None


def _dfdc(parts: list[str]) -> VideoRef | None:
    lows = [x.lower() for x in parts[:-1]]
    if not any(x.startswith("dfdc") and not x.startswith("dfdcp") for x in lows):
        return None
    for i in range(len(parts) - 1, -1, -1):  # the nearest id to the file
        vid = _first_id(parts[i:], _ID[(DFDC, None)], True)
        if vid and vid != "validation":
            return VideoRef(DFDC, vid)
    return VideoRef(DFDC, None)


def _ff_file_name(parts: list[str]) -> VideoRef | None:
    stem = PurePosixPath(parts[-1]).stem if parts else ""
    real = _FF_REAL_NAME.match(stem)
    if real:
        return VideoRef(FF, f"{int(real.group(1)):03d}", 0)
    fake = _FF_FAKE_NAME.match(stem)
    if fake and fake.group(1).lower() in FF_METHOD_NAMES:
        vid = f"{int(fake.group(2)):03d}_{int(fake.group(3)):03d}"
        return VideoRef(FF, vid, 1, FF_METHOD_NAMES[fake.group(1).lower()])
    return None


def _generic(parts: list[str]) -> VideoRef:
    if parts and _is_video_file(parts[-1]):
        above = [x for x in parts[:-1] if x.lower() not in CONTAINERS]
        return VideoRef(GENERIC, _strip_video(parts[-1]), method_hint=(above or [None])[-1])
    folders = [x for x in parts[:-1] if x.lower() not in CONTAINERS]
    if not folders:
        return VideoRef(GENERIC, None)
    return VideoRef(GENERIC, folders[-1], method_hint=folders[-2] if len(folders) > 1 else None)
