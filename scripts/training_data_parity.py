#!/usr/bin/env python
"""Compare what our training-data recipes make with what DeepfakeBench's datasets make.

The references (``tests/data/training_data_parity/<recipe>.json``) hold the summary of N draws of
DeepfakeBench's own dataset code on the reference faces (made outside the repository, see the
README there) and, under ``"ours"``, the summary of N draws of ours. By default this prints, per
recipe, a Markdown table of the stored summaries: statistic, DeepfakeBench's value, ours, the
tolerance (4 standard errors) and the verdict (statistics with a documented difference show the
reason). ``--draw N`` draws ours afresh instead (N per recipe) and ``--write`` stores them as the
new ``"ours"``. Exit status 1 when a statistic without a documented difference is out of
tolerance. Example::

    python scripts/training_data_parity.py --recipes sbi fwa
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from fairforensics.benchmarks.training_data import (  # noqa: E402
    RECIPES,
    REFERENCE_DIR,
    compare_recipe,
    draw_summary,
    iter_failures,
    load_reference,
    parity_faces,
)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--recipes", nargs="+", choices=sorted(RECIPES), default=sorted(RECIPES))
    ap.add_argument("--draw", type=int, metavar="N", help="draw ours afresh, N per recipe")
    ap.add_argument("--seed", type=int, default=0, help="seed of the draws (default 0)")
    ap.add_argument("--write", action="store_true", help="store the draws as the new 'ours'")
    args = ap.parse_args(argv)
    if args.write and args.draw is None:
        ap.error("--write needs --draw N")
    if args.draw is not None and args.draw < 2:
        ap.error("--draw must be at least 2")
    faces = parity_faces(REPO / "tests" / "data" / "faces" / "celebrities") if args.draw else []
    failed = 0
    for recipe in args.recipes:
        ref = load_reference(recipe)
        ours = draw_summary(recipe, faces, args.draw, args.seed) if args.draw else ref["ours"]
        if args.write:
            ref["ours"] = {"made_by": "scripts/training_data_parity.py --write", **ours}
            path = REFERENCE_DIR / f"{recipe}.json"
            path.write_text(json.dumps(ref, indent=1) + "\n")
        rows = compare_recipe(recipe, ours["summary"], ref["summary"])
        print(f"\n## {recipe} (DeepfakeBench {ref['draws']} draws, ours {ours['draws']})\n")
        print("| statistic | DeepfakeBench | ours | tolerance | verdict |")
        print("|---|---|---|---|---|")
        for r in rows:
            verdict = "ok" if r["ok"] else ("differs: " + r["known"] if "known" in r else "FAIL")
            print(f"| {r['stat']} | {r['dfb']} | {r['ours']} | {r['tol']} | {verdict} |")
        failed += len(list(iter_failures(rows)))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
