"""Add public per-frame demographic labels (gender, age, race) to a dataset index, by video.

Reads the AI-Face (CVPR 2025), Lin et al. (CVPR 2024) and Xu et al. (``A-*.csv``) formats; each
row's video is identified from its path by the dataset's folder layout (FF++/DeepfakeBench,
DFD, Celeb-DF, DFDC, generic), never from a frame number. Each video gets its majority gender,
age and race over its labelled frames, and the share of frames that agree (see
``preprocessing.demographics``). Prints what matched as JSON; exits 2 when no row matches, or
when more than --max-unmatched of the rows match no video (a CSV for another dataset). Example::

    fairforensics demographics --index datasets/FF-c23.json \\
        --csv ff++_test.csv --csv ff++_train.csv --out datasets/FF-c23.json
"""

from __future__ import annotations

import argparse
import json
import logging
from pathlib import Path

from fairforensics.cli.errors import configure_logging, run_cli
from fairforensics.cli.helptext import guide
from fairforensics.configs.writable import check_writable_file
from fairforensics.preprocessing.demographic_formats import CODES, read_demographics_csv


def _share(text: str) -> float:
    value = float(text)
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"must be in [0, 1], got {text}")
    return value


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=guide("demographics"),
    )
    p.add_argument("--index", required=True, type=Path, help="our dataset index JSON")
    p.add_argument("--csv", required=True, type=Path, action="append", help="repeatable")
    p.add_argument("--out", required=True, type=Path, help="index to write (may be --index)")
    p.add_argument(
        "--attributes",
        default=None,
        help=f"comma list of {', '.join(CODES)} (default: all that each CSV has)",
    )
    p.add_argument(
        "--max-unmatched",
        type=_share,
        default=0.5,
        help="largest share of rows that may match no video (default 0.5); 1 accepts a CSV "
        "that covers more than the index (several datasets, or all splits of a partial index)",
    )
    args = p.parse_args(argv)
    check_writable_file(args.out)  # before the inputs are read
    configure_logging(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    wanted = [a.strip() for a in (args.attributes or "").split(",") if a.strip()] or None
    files = [read_demographics_csv(path, wanted) for path in args.csv]  # before torch loads
    from fairforensics.fairness.splits import save_index
    from fairforensics.preprocessing.demographics import import_demographics
    from fairforensics.preprocessing.index import read_index

    index = read_index(args.index)
    attributes = [a for a in CODES if any(a in f.attributes for f in files)]
    rows = [r for f in files for r in f.rows]
    labelled, report = import_demographics(index, rows, attributes, args.max_unmatched)
    save_index(labelled, args.out)
    formats = {str(f.path): f.format for f in files}
    print(json.dumps({"index": str(args.out), "formats": formats, **report.to_json()}, indent=1))
    return 0


if __name__ == "__main__":
    run_cli(main)
