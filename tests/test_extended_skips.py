"""With ``../shared`` beside the checkout an extended test that skips fails (a missing fixture
cannot pass as a skip); without it, extended tests skip as before (``make test`` in a clone)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PROBE = """
import pytest
from tests.testdata import shared

@pytest.mark.extended
def test_needs_a_shared_file():
    shared("no", "such", "fixture.json")

def test_plain_skip():
    pytest.skip("not extended: stays a skip")
"""


def _run(repo: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_XDIST_WORKER"}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rfs", "-p", "no:cacheprovider", "-p", "no:xdist"]
        + ["tests/test_probe.py"],
        cwd=repo, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip


def test_a_skipped_extended_test_fails_only_where_shared_is_present(tmp_path: Path) -> None:
    """The test session's own set-up (tests/conftest.py) in a copy of the checkout: the same
    skipping extended test fails with ../shared beside the copy and skips without it."""
    repo = tmp_path / "repo"
    (repo / "tests").mkdir(parents=True)
    for name in ("__init__.py", "conftest.py", "extended_skips.py", "testdata.py", "wheel.py"):
        shutil.copy2(REPO / "tests" / name, repo / "tests" / name)
    (repo / "tests" / "data").symlink_to(REPO / "tests" / "data")
    shutil.copy2(REPO / "pyproject.toml", repo / "pyproject.toml")
    (repo / "tests" / "test_probe.py").write_text(PROBE)

    bare = _run(repo)
    assert bare.returncode == 0, bare.stdout[-3000:]
    assert "2 skipped" in bare.stdout and "needs ../shared/no/such/fixture.json" in bare.stdout

    (tmp_path / "shared").mkdir()
    present = _run(repo)
    assert present.returncode == 1, present.stdout[-3000:]
    assert "1 failed, 1 skipped" in present.stdout
    assert "FAILED tests/test_probe.py::test_needs_a_shared_file" in present.stdout
    assert "extended test skipped although" in present.stdout
    assert "needs ../shared/no/such/fixture.json" in present.stdout
