"""``--threshold`` / ``--threshold-from``: the options of every command that turns scores into
decisions, with one help text (resolved by :func:`evaluation.thresholds.decision_threshold`)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # not imported at run time: --help starts without scikit-learn and SciPy
    from fairforensics.evaluation.thresholds import DecisionThreshold

THRESHOLD_HELP = (
    "a score at or above the decision threshold is a fake decision. Default: the validation "
    "threshold the training run (EER rule on its val split; a run's "
    "validation_threshold.json) or the model package recorded, else the eval.json beside "
    "--predictions, else 0.5"
)


def add_threshold_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the mutually exclusive ``--threshold T`` and ``--threshold-from EVAL_JSON|RUN_DIR``."""
    group = parser.add_argument_group("decision threshold", THRESHOLD_HELP)
    either = group.add_mutually_exclusive_group()
    either.add_argument("--threshold", type=float, metavar="T", help="decide at this threshold")
    either.add_argument(
        "--threshold-from",
        type=Path,
        metavar="EVAL_JSON|RUN_DIR|PACKAGE",
        help="the threshold of an eval.json of ff-test (e.g. chosen with --val-data), the "
        "validation threshold of a run directory, or the threshold of a model package (a folder "
        "of fairforensics export or hf:OWNER/NAME[@REV])",
    )


def print_threshold(threshold: DecisionThreshold) -> None:
    """Say on stderr which threshold the command decides with."""
    print(f"decision threshold: {threshold}", file=sys.stderr)
