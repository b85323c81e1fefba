"""Fit a post-hoc calibration of a detector's scores on validation predictions.

    fairforensics calibrate --predictions eval/predictions/FF-c23-val.csv \\
        --method temperature --out cal.json

``--method``: temperature (one parameter on the logit; ranking unchanged), platt (slope and
intercept on the logit) or isotonic (a monotone step function; ties can change AUC). The
calibration records the detector and weights the scores came from (the predictions file's
``<set>.provenance.json``, when present), so applying it to another detector's scores is
refused. It prints the validation ECE, Brier and NLL before and after (as fitted: an optimistic
figure; judge it on a test set with ``test --calibration``).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from fairforensics.cli.errors import run_cli
from fairforensics.cli.helptext import guide
from fairforensics.configs.writable import check_writable_file

METHODS = ("temperature", "platt", "isotonic")  # evaluation.calibration.METHODS (no import here)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=guide("calibrate"),
    )
    p.add_argument("--predictions", required=True, type=Path, help="validation predictions CSV")
    p.add_argument("--method", required=True, choices=METHODS)
    p.add_argument("--out", required=True, type=Path, help="calibration JSON to write")
    p.add_argument(
        "--level", choices=("frame", "video"), default="frame",
        help="fit on frame scores (default) or on video scores (the mean of a video's frames)",
    )  # fmt: skip
    args = p.parse_args(argv)
    check_writable_file(args.out)
    if not args.predictions.is_file():
        p.error(f"--predictions {args.predictions}: file not found")
    from fairforensics.evaluation.calibration.run import calibrate_file

    calibration, report = calibrate_file(args.predictions, args.method, level=args.level)
    from fairforensics.evaluation.calibration import write_calibration

    args.out.parent.mkdir(parents=True, exist_ok=True)
    write_calibration(args.out, calibration)
    print(json.dumps({"calibration": str(args.out), **report}, indent=2))
    return 0


if __name__ == "__main__":
    run_cli(main)
