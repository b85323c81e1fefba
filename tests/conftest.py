"""Test session set-up: the test data must be there; the report header says where it comes from."""

from __future__ import annotations

import pytest

from tests.testdata import CELEBRITIES, DATA, SHARED


def pytest_configure(config) -> None:
    if not (CELEBRITIES / "attributes.csv").is_file():
        raise pytest.UsageError(
            f"{DATA} is incomplete: the test data ships with the repository "
            "(restore it with `git checkout -- tests/data`)"
        )


def pytest_report_header(config) -> list[str]:
    shared = "present" if SHARED.is_dir() else "absent: tests marked 'extended' skip"
    return [f"test data: {DATA} (in the repository); ../shared: {shared}"]
