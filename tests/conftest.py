"""Test session set-up: the report header says where the test data comes from."""

from __future__ import annotations

from tests.testdata import DATA, SHARED


def pytest_report_header(config) -> list[str]:
    shared = "present" if SHARED.is_dir() else "absent: tests marked 'extended' skip"
    return [f"test data: {DATA} (in the repository); ../shared: {shared}"]
