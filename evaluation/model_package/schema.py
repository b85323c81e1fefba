"""``config.json`` of a model package: its schema version, its keys, and its reading.

Keys (schema 1)::

    format, schema_version, fairforensics_version
    detector                 registered name; model: its resolved model config
    input_size, mean, std    the input the weights expect (normalisation applied by the loader)
    crop                     the face crop ({method, scale, size}) or null
    face_settings            the face-crop settings of the training data (preprocess's
                             sampling, decode, face, align), face_settings_source: where from
    frame_num, reduce        faces scored per video and how a video's score is formed
    threshold                {value, rule, level, reduce, val_data, source} or null
    train_data, val_data     [{name, index_sha256}] (null hash: index not found at export)
    source                   {kind: run|weights, ...}: what was exported
    weights_sha256           of model.safetensors
    calibration              (optional) the temperature scaling the run fitted on validation, as
                             a calibration file of ``fairforensics calibrate`` holds it
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from fairforensics.configs import ConfigError

FORMAT = "fairforensics-model"
SCHEMA_VERSION = 1
WEIGHTS_FILE = "model.safetensors"
CONFIG_FILE = "config.json"
CARD_FILE = "README.md"
FILES = (WEIGHTS_FILE, CONFIG_FILE, CARD_FILE)
REQUIRED = ("detector", "model", "weights_sha256")


class PackageError(ConfigError):
    """A model package that cannot be read or built (one line, exit 2 in the commands)."""


def is_package(folder: str | Path) -> bool:
    """True when ``folder`` holds a ``config.json`` of this format (whatever its version)."""
    path = Path(folder) / CONFIG_FILE
    try:
        return json.loads(path.read_text(encoding="utf-8")).get("format") == FORMAT
    except (OSError, ValueError, AttributeError):
        return False


def read_package_config(folder: str | Path) -> dict[str, Any]:
    """The checked ``config.json`` of the package in ``folder``: a missing or unreadable file,
    another format, a newer schema or a missing key is a :class:`PackageError` naming it."""
    folder = Path(folder)
    if not folder.is_dir():
        raise PackageError(f"{folder}: no such model package folder")
    path = folder / CONFIG_FILE
    if not path.is_file():
        raise PackageError(f"{path}: missing; a model package holds {', '.join(FILES)}")
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise PackageError(f"{path}: not readable JSON ({exc})") from None
    if not isinstance(config, dict) or config.get("format") != FORMAT:
        raise PackageError(f"{path}: not a fairforensics model package (format != {FORMAT!r})")
    version = config.get("schema_version")
    if not isinstance(version, int) or version > SCHEMA_VERSION:
        raise PackageError(
            f"{path}: schema_version {version!r} is newer than this fairforensics reads "
            f"({SCHEMA_VERSION}; written by fairforensics {config.get('fairforensics_version')}): "
            "upgrade fairforensics"
        )
    missing = [k for k in REQUIRED if k not in config]
    if missing:
        raise PackageError(f"{path}: key(s) {', '.join(missing)} required but missing")
    return config
