"""Test session set-up: the test data must be there; the report header says where it comes from;
with ``../shared`` present an extended test that skips fails (:mod:`tests.extended_skips`); the
wheel is built once for the tests that install it; a pytest-xdist worker (``make test`` runs
two) uses one thread, and so do the commands it starts, so that two workers share two cores
without oversubscribing them."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch

from tests.extended_skips import fail_extended_skip
from tests.testdata import CELEBRITIES, DATA, SHARED
from tests.wheel import build_wheel

if os.environ.get("PYTEST_XDIST_WORKER"):
    os.environ["OMP_NUM_THREADS"] = "1"
    torch.set_num_threads(1)


def pytest_configure(config) -> None:
    if not (CELEBRITIES / "attributes.csv").is_file():
        raise pytest.UsageError(
            f"{DATA} is incomplete: the test data ships with the repository "
            "(restore it with `git checkout -- tests/data`)"
        )


def pytest_report_header(config) -> list[str]:
    shared = (
        "present: a skipped 'extended' test fails"
        if SHARED.is_dir()
        else "absent: tests marked 'extended' skip"
    )
    return [f"test data: {DATA} (in the repository); ../shared: {shared}"]


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    fail_extended_skip(item, outcome.get_result(), SHARED)


@pytest.fixture(scope="session")
def wheel(tmp_path_factory) -> Path:
    """The project's wheel (``pip wheel`` of a copy of the sources)."""
    return build_wheel(tmp_path_factory.mktemp("wheel"))
