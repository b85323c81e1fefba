#!/usr/bin/env python
"""Add public per-frame demographic labels (Lin et al. CVPR 2024 / AI-Face CVPR 2025) to an index.

Each video gets its majority gender, age and race over its labelled frames, and the share of
frames that agree (see ``preprocessing.demographics``). Prints how many videos matched; no match
at all is an error (exit 2). Example::

    python scripts/import_demographics.py --index datasets/FF-c23.json \
        --csv ff++_test.csv --csv ff++_train.csv --out datasets/FF-c23.json
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fairforensics.cli.errors import run_cli  # noqa: E402
from fairforensics.fairness.splits import save_index  # noqa: E402
from fairforensics.preprocessing.demographics import (  # noqa: E402
    CODES,
    DemographicsError,
    import_demographics,
    read_demographics_csv,
)
from fairforensics.preprocessing.index import DatasetIndexError, read_index  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--index", required=True, type=Path, help="our dataset index JSON")
    p.add_argument("--csv", required=True, type=Path, action="append", help="repeatable")
    p.add_argument("--out", required=True, type=Path, help="index to write (may be --index)")
    p.add_argument("--attributes", default=",".join(CODES), help="comma list of gender, age, race")
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    try:
        attributes = [a.strip() for a in args.attributes.split(",") if a.strip()]
        index = read_index(args.index)
        rows = [r for path in args.csv for r in read_demographics_csv(path, attributes)]
        labelled, report = import_demographics(index, rows, attributes)
        save_index(labelled, args.out)
    except (DemographicsError, DatasetIndexError, OSError) as exc:
        logging.getLogger("import_demographics").error("%s", exc)
        return 2
    print(json.dumps({"index": str(args.out), **report.to_json()}, indent=1))
    return 0


if __name__ == "__main__":
    run_cli(main)
