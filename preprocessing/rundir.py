"""The run directory: its layout (:class:`RunDir`), provenance (git commit, package versions,
seed) and creation. Training writes it; testing, fairness, metamorphic testing and resume read it
through the same paths."""

from __future__ import annotations

import os
import platform
import subprocess
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Any

from fairforensics.configs import ConfigError, load_yaml

PACKAGES = (
    "torch",
    "torchvision",
    "timm",
    "albumentations",
    "numpy",
    "opencv-python-headless",
    "scikit-learn",
    "fairforensics",
)


def source_checkout() -> Path | None:
    """The repository this code runs from (a clone, installed editable or not), or None when it
    is an installed copy (a wheel in site-packages has no ``pyproject.toml`` beside it)."""
    root = Path(__file__).resolve().parents[1]
    return root if (root / "pyproject.toml").is_file() else None


def git_commit(repo: Path | None = None) -> str | None:
    """The checked-out commit (with ``+dirty`` when the tree has changes) of ``repo`` (default: the
    source checkout), or None: an installed copy's version is in ``package_versions``."""
    repo = repo or source_checkout()
    if repo is None:
        return None
    try:
        sha = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            cwd=repo,
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=repo,
            capture_output=True,
            text=True,
            timeout=10,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return sha + ("+dirty" if dirty else "")


def build_time() -> datetime:
    """Now in UTC, or ``SOURCE_DATE_EPOCH`` (seconds since 1970, the reproducible-builds
    convention) when set, so that a rerun writes the same files."""
    epoch = os.environ.get("SOURCE_DATE_EPOCH", "").strip()
    try:
        when = datetime.fromtimestamp(int(epoch), timezone.utc) if epoch else None
    except ValueError:
        raise ConfigError(f"SOURCE_DATE_EPOCH={epoch!r} is not a whole number of seconds") from None
    return when or datetime.now(timezone.utc)


def package_versions() -> dict[str, str | None]:
    versions: dict[str, str | None] = {"python": platform.python_version()}
    for name in PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def run_meta(seed: int, **extra: Any) -> dict[str, Any]:
    """Provenance written to ``meta.json``."""
    return {
        "git_commit": git_commit(),
        "packages": package_versions(),
        "seed": seed,
        "start_time": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "host": platform.node(),
        **extra,
    }


@dataclass(frozen=True)
class RunDir:
    """Paths of one run directory (``config.yaml``, ``meta.json``, ``manifest.json``,
    ``checkpoints/``, ``metrics/``, ``predictions/``, ``tensorboard/``)."""

    path: Path

    def __init__(self, path: str | Path) -> None:
        object.__setattr__(self, "path", Path(path))

    @property
    def config(self) -> Path:
        return self.path / "config.yaml"

    @property
    def meta(self) -> Path:
        return self.path / "meta.json"

    @property
    def manifest(self) -> Path:
        return self.path / "manifest.json"

    @property
    def checkpoints(self) -> Path:
        return self.path / "checkpoints"

    @property
    def metrics(self) -> Path:
        return self.path / "metrics"

    @property
    def predictions(self) -> Path:
        return self.path / "predictions"

    @property
    def tensorboard(self) -> Path:
        return self.path / "tensorboard"

    def checkpoint(self, weights: str | Path = "best") -> Path:
        """``checkpoints/best.pt`` / ``checkpoints/last.pt``, or ``weights`` as a file path."""
        if str(weights) in ("best", "last"):
            return self.checkpoints / f"{weights}.pt"
        return Path(weights)

    def read_config(self) -> dict[str, Any]:
        """The resolved config the run saved (errors name the file; ``detector`` is required)."""
        if not self.config.is_file():
            raise ConfigError(f"{self.path}: not a run directory (no config.yaml)")
        cfg = load_yaml(self.config)
        if "detector" not in cfg:
            raise ConfigError(f"{self.config}: key 'detector' is required but missing")
        return cfg


def new_run_dir(output_dir: str | Path, name: str | None, detector: str) -> Path:
    """``<output_dir>/<name>``, or ``<detector>_<timestamp>`` (suffixed if it exists)."""
    base = Path(output_dir) / (name or f"{detector}_{time.strftime('%Y%m%d-%H%M%S')}")
    path, n = base, 1
    while path.exists() and name is None:
        path, n = base.with_name(f"{base.name}_{n}"), n + 1
    run = RunDir(path)
    for sub in (run.checkpoints, run.metrics, run.predictions, run.tensorboard):
        sub.mkdir(parents=True, exist_ok=True)
    return path
