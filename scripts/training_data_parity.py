#!/usr/bin/env python
"""Compare what our training-data recipes make with DeepfakeBench's stored references.

Draws N samples of each recipe on the reference faces (``tests/data/faces/celebrities``, the
faces ``benchmarks.training_data.parity_faces`` picks), summarises them and prints, per recipe,
a Markdown table: statistic, DeepfakeBench's value (``tests/data/training_data_parity``), ours,
the tolerance (4 standard errors + slack) and the verdict; statistics with a documented
difference show the reason. Exit status 1 when a statistic without a documented difference is
out of tolerance. Example::

    python scripts/training_data_parity.py --recipes sbi i2g --n 400
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from fairforensics.benchmarks.training_data import (  # noqa: E402
    RECIPES,
    compare_recipe,
    iter_failures,
    parity_faces,
)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--recipes", nargs="+", choices=sorted(RECIPES), default=sorted(RECIPES))
    ap.add_argument("--n", type=int, default=400, help="draws per recipe (default 400)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    if args.n < 2:
        ap.error("--n must be at least 2")
    faces = parity_faces(REPO / "tests" / "data" / "faces" / "celebrities")
    failed = 0
    for recipe in args.recipes:
        rows = compare_recipe(recipe, faces, args.n, args.seed)
        print(f"\n## {recipe} ({args.n} draws)\n")
        print("| statistic | DeepfakeBench | ours | tolerance | verdict |")
        print("|---|---|---|---|---|")
        for r in rows:
            verdict = "ok" if r["ok"] else ("differs: " + r["known"] if "known" in r else "FAIL")
            print(f"| {r['stat']} | {r['dfb']} | {r['ours']} | {r['tol']} | {verdict} |")
        failed += len(list(iter_failures(rows)))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
