"""List the registered detectors: family, input, paper, DeepfakeBench name, parity status.

Input is ``frame`` (one face image) or ``clip`` (a video detector's consecutive frames); parity is
how each detector was checked against DeepfakeBench's own model (the guide below, "Parity").

    fairforensics detectors                 a table (the columns: see detectors.catalog)
    fairforensics detectors --json          the same rows as a JSON list
    fairforensics detectors --import mypkg.my_detector    with a user's detectors
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from fairforensics.cli.errors import add_import_argument, run_cli
from fairforensics.cli.helptext import guide
from fairforensics.configs import import_modules


def format_table(rows: list[dict[str, Any]], columns: tuple[str, ...]) -> str:
    """``rows`` as a plain text table, one line each, columns aligned; None shows as ``-``."""
    cells = [list(columns)] + [["-" if r[c] is None else str(r[c]) for c in columns] for r in rows]
    widths = [max(len(line[i]) for line in cells) for i in range(len(columns))]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)).rstrip()
        for line in cells
    )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=guide("detectors"),
    )
    p.add_argument("--json", action="store_true", help="print the rows as JSON")
    add_import_argument(p)
    args = p.parse_args(argv)
    import_modules(args.imports)  # a wrong name fails before the registry loads torch
    from fairforensics.detectors.catalog import COLUMNS, detector_rows

    rows = detector_rows()
    print(json.dumps(rows, indent=1) if args.json else format_table(rows, COLUMNS))
    return 0


if __name__ == "__main__":
    run_cli(main)
