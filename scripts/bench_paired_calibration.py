#!/usr/bin/env python
"""Calibration of the paired change of a gap by simulation (docs/evaluation.md, "Calibration of
the paired change"): rejection rate at p < 0.05 and interval coverage of the true change, per
scenario and metric, with exact binomial intervals, beside the statistics used before issue 36
(swap test, percentile bootstrap); prints JSON."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fairforensics.benchmarks.paired_calibration import (  # noqa: E402
    METRICS,
    SCENARIOS,
    calibrate,
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sets", type=int, default=500, help="data sets per scenario")
    parser.add_argument(
        "--n-old", type=int, default=300, help="replicates of the old statistics (0: skip them)"
    )
    parser.add_argument("--metrics", nargs="+", default=list(METRICS), choices=METRICS)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--only", default="", help="run the scenarios whose name contains this text"
    )
    args = parser.parse_args()
    out = []
    for sc in (s for s in SCENARIOS if args.only in s.name):
        start = time.perf_counter()
        res = calibrate(sc, args.sets, seed=args.seed, metrics=args.metrics, n_old=args.n_old)
        res["seconds"] = round(time.perf_counter() - start, 1)
        out.append(res)
        print(f"{sc.name}: {res['seconds']} s", file=sys.stderr, flush=True)
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
