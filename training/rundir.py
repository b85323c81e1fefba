"""The run directory: resolved config, provenance (git commit, package versions, seed), JSON."""

from __future__ import annotations

import json
import platform
import subprocess
import time
from importlib import metadata
from pathlib import Path
from typing import Any

import yaml

from preprocessing.index import atomic_write_text

REPO_DIR = Path(__file__).resolve().parents[1]
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


def git_commit(repo: Path = REPO_DIR) -> str | None:
    """The checked-out commit (with ``+dirty`` when the tree has changes), or None."""
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


def write_json(path: str | Path, data: Any) -> None:
    atomic_write_text(path, json.dumps(data, indent=1, sort_keys=False, default=str) + "\n")


def write_yaml(path: str | Path, data: Any) -> None:
    atomic_write_text(path, yaml.safe_dump(data, sort_keys=False))


def new_run_dir(output_dir: str | Path, name: str | None, detector: str) -> Path:
    """``<output_dir>/<name>``, or ``<detector>_<timestamp>`` (suffixed if it exists)."""
    base = Path(output_dir) / (name or f"{detector}_{time.strftime('%Y%m%d-%H%M%S')}")
    path, n = base, 1
    while path.exists() and name is None:
        path, n = base.with_name(f"{base.name}_{n}"), n + 1
    for sub in ("checkpoints", "metrics", "predictions", "tensorboard"):
        (path / sub).mkdir(parents=True, exist_ok=True)
    return path
