#!/usr/bin/env python
"""Thin wrapper of :mod:`fairforensics.cli.board` (installed as ``fairforensics board`` and
``ff-board``); run ``python scripts/board.py --help``."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fairforensics.cli.board import *  # noqa: E402, F403
from fairforensics.cli.board import main  # noqa: E402
from fairforensics.cli.errors import run_cli  # noqa: E402

if __name__ == "__main__":
    run_cli(main)
