#!/usr/bin/env python
"""Thin wrapper of :mod:`fairforensics.cli.submit` (installed as ``fairforensics submit`` and
``ff-submit``); run ``python scripts/submit.py --help``."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fairforensics.cli.errors import run_cli  # noqa: E402
from fairforensics.cli.submit import *  # noqa: E402, F403
from fairforensics.cli.submit import main  # noqa: E402

if __name__ == "__main__":
    run_cli(main)
