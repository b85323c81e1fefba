"""With ``../shared`` present, an extended test that skips is a failure, so that a missing fixture,
file or optional package cannot pass as a skip where the data is supposed to be.

``tests/conftest.py`` applies :func:`fail_extended_skip` to every test report; in a clone without
``../shared`` (``make test`` in a bare copy) extended tests still skip, naming the missing path.
"""

from __future__ import annotations

from pathlib import Path

import pytest


def fail_extended_skip(item: pytest.Item, report: pytest.TestReport, shared: Path) -> None:
    """Turn ``report`` (setup, call or teardown) into a failure when it is a skip of a test marked
    ``extended`` and ``shared`` is a directory; the message gives the skip's reason."""
    if not (report.skipped and shared.is_dir() and item.get_closest_marker("extended")):
        return
    if hasattr(report, "wasxfail"):  # an expected failure, not a skip
        return
    longrepr = report.longrepr
    reason = longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)
    report.outcome = "failed"
    report.longrepr = (
        f"extended test skipped although {shared} is present (every extended test must run "
        f"there): {reason.removeprefix('Skipped: ')}"
    )
