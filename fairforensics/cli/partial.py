"""``--allow-partial``: the option of every command that reads dataset indexes for a model."""

from __future__ import annotations

import argparse

HELP = (
    "use dataset indexes that an interrupted preprocessing run left incomplete (refused "
    "otherwise); every table then names such a set '<name> (partial: ...)'"
)


def add_allow_partial_argument(parser: argparse.ArgumentParser) -> None:
    """Add ``--allow-partial`` (into ``args.allow_partial``)."""
    parser.add_argument("--allow-partial", action="store_true", help=HELP)
