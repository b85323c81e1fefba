#!/usr/bin/env python
"""Calibration of the fairness gap statistics by simulation (docs/fairness.md, "Calibration"):
null rejection at p < 0.05, interval coverage under the null and a real gap, and power, with
exact binomial intervals, for 2 and 3 groups and two class mixes; prints JSON."""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fairforensics.benchmarks.fairness_calibration import (  # noqa: E402
    ALL_METRICS,
    METRICS,
    SCENARIOS,
    calibrate,
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "--sets", type=int, default=500, help="data sets per scenario and hypothesis"
    )
    parser.add_argument("--n-boot", type=int, default=1000, help="bootstrap replicates (AUC)")
    parser.add_argument("--n-perm", type=int, default=1000, help="permutations per test")
    parser.add_argument("--metrics", nargs="+", default=list(METRICS), choices=ALL_METRICS)
    parser.add_argument(
        "--gap", type=float, default=1.0, help="alternative: logit shift of group b"
    )
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    out = []
    for sc in SCENARIOS:
        start = time.perf_counter()
        res = calibrate(
            replace(sc, gap=args.gap),
            args.sets,
            n_boot=args.n_boot,
            n_perm=args.n_perm,
            seed=args.seed,
            metrics=args.metrics,
        )
        res["seconds"] = round(time.perf_counter() - start, 1)
        out.append(res)
        print(f"{sc.name}: {res['seconds']} s", file=sys.stderr, flush=True)
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
