"""What kind of file a weights path holds, from its first bytes (not its name).

Used to route a weights file to the right reader (a torch checkpoint or a Keras ``.h5``) and to
say what a file of another kind is, instead of a torch unpickling error.
"""

from __future__ import annotations

import struct
import zipfile
from pathlib import Path

#: Kinds that ``torch.load`` reads.
TORCH_KINDS = ("torch", "torch-legacy")

_DESCRIPTIONS = {
    "torch": "a torch checkpoint (zip)",
    "torch-legacy": "a torch checkpoint (legacy pickle)",
    "hdf5": "an HDF5 file (Keras .h5 weights)",
    "keras3": "a Keras 3 .keras archive",
    "npz": "a NumPy .npz archive",
    "zip": "a zip archive without torch tensors",
    "safetensors": "a safetensors file",
    "gzip": "a gzip archive",
    "jpeg": "a JPEG image",
    "png": "a PNG image",
    "text": "a text file",
    "unknown": "a file of unknown format",
}

_MAGIC = (
    (b"\x89HDF\r\n\x1a\n", "hdf5"),
    (b"\x1f\x8b", "gzip"),
    (b"\xff\xd8\xff", "jpeg"),
    (b"\x89PNG\r\n\x1a\n", "png"),
)


def _zip_kind(path: Path) -> str:
    try:
        with zipfile.ZipFile(path) as archive:
            names = archive.namelist()
    except (zipfile.BadZipFile, OSError):
        return "torch"  # a truncated zip: let torch.load say what is wrong with it
    if any(n == "data.pkl" or n.endswith("/data.pkl") for n in names):
        return "torch"
    if "config.json" in names and any(n.endswith(".weights.h5") for n in names):
        return "keras3"
    if names and all(n.endswith(".npy") for n in names):
        return "npz"
    return "zip"


def file_kind(path: str | Path) -> str:
    """One of the keys of :func:`describe_kind`'s table (``torch``, ``hdf5``, ``text``...)."""
    path = Path(path)
    with path.open("rb") as fh:
        head = fh.read(512)
    for magic, kind in _MAGIC:
        if head.startswith(magic):
            return kind
    if head.startswith(b"PK\x03\x04"):
        return _zip_kind(path)
    if head[:1] == b"\x80" and len(head) > 1 and 2 <= head[1] <= 5:
        return "torch-legacy"  # a pickle (protocol 2-5), torch's format before 1.6
    if len(head) >= 9 and head[8:9] == b"{":
        (size,) = struct.unpack("<Q", head[:8])
        if 8 + size <= path.stat().st_size:
            return "safetensors"
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.start < len(head) - 3:  # not just a character cut at the end of the head
            return "unknown"
    return "text" if b"\x00" not in head else "unknown"


def describe_kind(kind: str) -> str:
    """``"an HDF5 file (Keras .h5 weights)"`` for ``"hdf5"`` and so on."""
    return _DESCRIPTIONS.get(kind, _DESCRIPTIONS["unknown"])


#: What a detector's weights file may be, for error messages.
ACCEPTED_WEIGHTS = (
    "a torch checkpoint (.pt/.pth: ours or DeepfakeBench's) or, for meso4 and meso_inception4, "
    "the authors' Keras .h5 weights"
)


def weights_problem(path: str | Path) -> str | None:
    """Why ``path`` cannot be a detector's weights file (missing, a folder, another kind of
    file: the loader's own one-line messages), or None; read before torch is imported."""
    path = Path(path).expanduser()
    if not path.exists():
        return f"{path}: weights file not found; copy or download it again"
    if not path.is_file():
        return f"{path}: a folder, not a weights file; weights must be {ACCEPTED_WEIGHTS}"
    kind = file_kind(path) if path.stat().st_size else "torch"
    if kind not in (*TORCH_KINDS, "hdf5", "unknown"):
        return f"{path}: {describe_kind(kind)}; weights must be {ACCEPTED_WEIGHTS}"
    return None
