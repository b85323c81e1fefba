"""The project's wheel, built once per test session from a copy of the sources."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SOURCES = ("configs", "preprocessing", "detectors", "evaluation", "training", "fairness")
SOURCES += ("benchmarks", "fairforensics", "docs", "pyproject.toml", "setup.py", "README.md")
SOURCES += ("LICENSE", "THIRD_PARTY_LICENSES.md")


def build_wheel(out: Path) -> Path:
    """``pip wheel`` of a copy of the sources into ``out`` (the build leaves nothing in the
    checkout); skips where this interpreter has no pip."""
    src = out / "src"
    for name in SOURCES:
        if (REPO / name).is_dir():
            shutil.copytree(REPO / name, src / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(REPO / name, src / name)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    done = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", str(src), "-w", str(out)]
        + ["--no-deps", "--no-build-isolation", "-q"],
        cwd=out, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    if done.returncode != 0 and "No module named pip" in done.stderr:
        pytest.skip("needs pip in this interpreter")
    assert done.returncode == 0, done.stderr[-2000:]
    (wheel,) = out.glob("fairforensics-*.whl")
    return wheel
