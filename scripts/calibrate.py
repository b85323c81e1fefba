#!/usr/bin/env python
"""Thin wrapper of :mod:`fairforensics.cli.calibrate` (installed as ``fairforensics calibrate`` and
``ff-calibrate``); run ``python scripts/calibrate.py --help``."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fairforensics.cli.calibrate import *  # noqa: E402, F403
from fairforensics.cli.calibrate import main  # noqa: E402
from fairforensics.cli.errors import run_cli  # noqa: E402

if __name__ == "__main__":
    run_cli(main)
