"""The paired-change calibration's scenarios say the true change they were simulated at
(issue 45, item 6)."""

from __future__ import annotations

import pytest

from fairforensics.benchmarks.paired_calibration import (
    SCENARIOS,
    PairedScenario,
    calibrate,
    extra_for,
    true_change,
)


def test_power_rows_carry_their_true_change() -> None:
    by_name = {sc.name: sc for sc in SCENARIOS}
    assert true_change(by_name["common shift + gap change, 20 videos"], ("a", "b"))["fnr"] == (
        pytest.approx(-0.3127, abs=1e-4)
    )
    for sc in SCENARIOS:
        if "-0.2" in sc.name:
            assert true_change(sc, ("a", "b"))["fnr"] == pytest.approx(-0.2, abs=1e-9)
    assert extra_for(-0.2, PairedScenario("")) == pytest.approx(0.6125, abs=1e-4)
    row = calibrate(SCENARIOS[1], 2, metrics=("fnr",))["fnr"]
    assert row["true_change"] == pytest.approx(-0.3127, abs=1e-4)
